package bench

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// KeyOrDefault is the cell's key: Key when set, else model/kind/configuration
// (model/kind when there is no configuration).
func (c Cell) KeyOrDefault() string {
	if c.Key != "" {
		return c.Key
	}
	parts := []string{c.Model, c.Kind}
	if c.Configuration != "" {
		parts = append(parts, c.Configuration)
	}
	return strings.Join(parts, "/")
}

// Validate reports every problem of the plan at once, each prefixed by the
// field it concerns (cells[1].server.readyUrl: …), or nil when the plan can
// be run.
func (p Plan) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	switch p.Scope {
	case ScopeAll, ScopeScoped:
	case "":
		bad("scope", "missing (want %q or %q)", ScopeAll, ScopeScoped)
	default:
		bad("scope", "%q is not %q or %q", p.Scope, ScopeAll, ScopeScoped)
	}
	models := map[string]bool{}
	for i, m := range p.Models {
		switch {
		case strings.TrimSpace(m) == "":
			bad(fmt.Sprintf("models[%d]", i), "empty model name")
		case models[m]:
			bad(fmt.Sprintf("models[%d]", i), "%q listed twice", m)
		}
		models[m] = true
	}
	if p.Scope == ScopeScoped && len(p.Models) == 0 {
		bad("models", "a scoped plan names its models")
	}
	if len(p.Cells) == 0 {
		bad("cells", "the plan has no cells (each cell is one server to measure)")
	}
	keys := map[string]int{}
	for i, c := range p.Cells {
		field := fmt.Sprintf("cells[%d]", i)
		errs = append(errs, c.validate(field)...)
		if p.Scope == ScopeScoped && c.Model != "" && !models[c.Model] {
			bad(field+".model", "%q is not among the plan's models %v", c.Model, p.Models)
		}
		k := c.KeyOrDefault()
		if j, dup := keys[k]; dup {
			bad(field+".key", "%q is also the key of cells[%d]; give one of them a key or another configuration", k, j)
		} else {
			keys[k] = i
		}
	}
	errs = append(errs, p.Phases.validate("phases")...)
	return errors.Join(errs...)
}

func (c Cell) validate(field string) []error {
	var errs []error
	bad := func(f, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", field, f, fmt.Sprintf(format, args...)))
	}
	if strings.TrimSpace(c.Model) == "" {
		bad("model", "missing")
	}
	switch c.Kind {
	case KindTree, KindReference:
	default:
		bad("kind", "%q is not %q (the server under test) or %q (a comparison server)", c.Kind, KindTree, KindReference)
	}
	if k := c.KeyOrDefault(); strings.ContainsFunc(k, isControl) {
		bad("key", "%q holds a control character", k)
	}
	if c.Skip != "" {
		return errs // a skipped cell starts nothing
	}
	s := c.Server
	if s.Attach {
		return append(errs, s.validateAttached(field)...)
	}
	if len(s.Argv) == 0 || strings.TrimSpace(s.Argv[0]) == "" {
		bad("server.argv", "missing the command that starts the server (argv[0] is the program)")
	}
	for k := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			bad("server.env", "invalid variable name %q", k)
		}
	}
	if s.Port < 0 || s.Port > 65535 {
		bad("server.port", "%d is outside 0..65535 (0 picks a free port)", s.Port)
	}
	if err := checkURL(s.BaseURL); err != nil {
		bad("server.baseUrl", "%v", err)
	}
	if err := checkURL(s.ReadyURL); err != nil {
		bad("server.readyUrl", "%v", err)
	}
	if s.ReadyTimeoutMs < 0 {
		bad("server.readyTimeoutMs", "must be >= 0, got %d", s.ReadyTimeoutMs)
	}
	return errs
}

// validateAttached checks a server the runner attaches to: nothing starts
// it, so there is no command, environment or chosen port to fill in.
func (s Server) validateAttached(field string) []error {
	var errs []error
	bad := func(f, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.server.%s: %s", field, f, fmt.Sprintf(format, args...)))
	}
	if len(s.Argv) > 0 {
		bad("argv", "an attached server is not started: give argv or attach, not both")
	}
	if len(s.Env) > 0 {
		bad("env", "an attached server is not started, so it takes no environment")
	}
	if s.Port != 0 {
		bad("port", "an attached server is not started: its port is the one in baseUrl")
	}
	if err := checkURL(s.BaseURL); err != nil {
		bad("baseUrl", "%v", err)
	} else if strings.Contains(s.BaseURL, PortPlaceholder) {
		bad("baseUrl", "%q: an attached server's port is not chosen by the runner, so %s has no value; write the port", s.BaseURL, PortPlaceholder)
	}
	if s.ReadyURL != "" {
		if err := checkURL(s.ReadyURL); err != nil {
			bad("readyUrl", "%v", err)
		} else if strings.Contains(s.ReadyURL, PortPlaceholder) {
			bad("readyUrl", "%q: an attached server's port is not chosen by the runner, so %s has no value; write the port", s.ReadyURL, PortPlaceholder)
		}
	}
	if s.ReadyTimeoutMs < 0 {
		bad("readyTimeoutMs", "must be >= 0, got %d", s.ReadyTimeoutMs)
	}
	return errs
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// checkURL accepts an absolute http(s) URL with a host, where {port} may
// stand for the port.
func checkURL(raw string) error {
	if raw == "" {
		return errors.New("missing (an http:// or https:// URL)")
	}
	u, err := url.Parse(strings.ReplaceAll(raw, PortPlaceholder, "1"))
	if err != nil {
		return fmt.Errorf("%q is not a URL: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q: scheme must be http or https", raw)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("%q has no host", raw)
	}
	return nil
}

func (p Phases) validate(field string) []error {
	var errs []error
	nonNeg := func(name string, v int) {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s.%s: must be >= 0 (0 takes the default), got %d", field, name, v))
		}
	}
	nonNeg("decodeRuns", p.DecodeRuns)
	nonNeg("decodeTokens", p.DecodeTokens)
	nonNeg("coldPromptTokens", p.ColdPromptTokens)
	nonNeg("coldRuns", p.ColdRuns)
	nonNeg("warmRuns", p.WarmRuns)
	nonNeg("longDecodeTokens", p.LongDecodeTokens)
	nonNeg("concurrency", p.Concurrency)
	nonNeg("concurrentTokens", p.ConcurrentTokens)
	if p.DecodeTokens == 1 {
		errs = append(errs, fmt.Errorf("%s.decodeTokens: a decode rate needs at least 2 tokens (0 takes the default), got 1", field))
	}
	if p.LongContextTokens < -1 {
		errs = append(errs, fmt.Errorf("%s.longContextTokens: must be >= 0, or -1 to skip the phase, got %d", field, p.LongContextTokens))
	}
	if p.UnstableSpread != 0 && !(p.UnstableSpread >= 1) {
		errs = append(errs, fmt.Errorf("%s.unstableSpread: a max/min ratio must be >= 1, got %v", field, p.UnstableSpread))
	}
	if p.RequestTimeoutScale != 0 && !(p.RequestTimeoutScale > 0) {
		errs = append(errs, fmt.Errorf("%s.requestTimeoutScale: must be > 0, got %v", field, p.RequestTimeoutScale))
	}
	if p.Load != nil {
		errs = append(errs, p.Load.validate(field+".load")...)
	} else if p.LoadOnly {
		errs = append(errs, fmt.Errorf("%s.loadOnly: there is no load phase to run", field))
	}
	return errs
}

// Validate says what is wrong with the phases alone, every problem at once.
func (p Phases) Validate() error { return errors.Join(p.validate("phases")...) }
