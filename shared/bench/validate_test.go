package bench

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func validPlan() Plan {
	return Plan{
		Scope:  ScopeScoped,
		Models: []string{"m"},
		Cells: []Cell{{
			Model: "m", Kind: KindTree, Configuration: "default",
			Server: Server{
				Argv:     []string{SelfPlaceholder, "engine", "--port", PortPlaceholder},
				BaseURL:  "http://127.0.0.1:{port}/v1",
				ReadyURL: "http://127.0.0.1:{port}/health",
			},
		}},
	}
}

func TestPlanValidate(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(p *Plan)
		errHas []string // empty: valid
	}{
		{"valid", func(p *Plan) {}, nil},
		{"scope all without models", func(p *Plan) { p.Scope = ScopeAll; p.Models = nil }, nil},
		{"missing scope", func(p *Plan) { p.Scope = "" }, []string{"scope: missing"}},
		{"unknown scope", func(p *Plan) { p.Scope = "some" }, []string{`scope: "some" is not`}},
		{"scoped without models", func(p *Plan) { p.Models = nil }, []string{"models: a scoped plan names its models", "not among the plan's models"}},
		{"duplicate model", func(p *Plan) { p.Models = []string{"m", "m"} }, []string{`models[1]: "m" listed twice`}},
		{"no cells", func(p *Plan) { p.Cells = nil }, []string{"cells: the plan has no cells"}},
		{"bad kind", func(p *Plan) { p.Cells[0].Kind = "x" }, []string{`cells[0].kind: "x" is not`}},
		{"no argv", func(p *Plan) { p.Cells[0].Server.Argv = nil }, []string{"cells[0].server.argv: missing"}},
		{"blank argv0", func(p *Plan) { p.Cells[0].Server.Argv = []string{" "} }, []string{"cells[0].server.argv"}},
		{"skipped cell needs no server", func(p *Plan) { p.Cells[0].Skip = "no MLX here"; p.Cells[0].Server = Server{} }, nil},
		{"bad base url", func(p *Plan) { p.Cells[0].Server.BaseURL = "ftp://x/v1" }, []string{"cells[0].server.baseUrl", "scheme must be http or https"}},
		{"relative ready url", func(p *Plan) { p.Cells[0].Server.ReadyURL = "/health" }, []string{"cells[0].server.readyUrl"}},
		{"missing ready url", func(p *Plan) { p.Cells[0].Server.ReadyURL = "" }, []string{"cells[0].server.readyUrl: missing"}},
		{"no host", func(p *Plan) { p.Cells[0].Server.BaseURL = "http://:{port}/v1" }, []string{"has no host"}},
		{"port range", func(p *Plan) { p.Cells[0].Server.Port = 70000 }, []string{"cells[0].server.port: 70000 is outside"}},
		{"negative port", func(p *Plan) { p.Cells[0].Server.Port = -1 }, []string{"cells[0].server.port"}},
		{"fixed port", func(p *Plan) { p.Cells[0].Server.Port = 8080 }, nil},
		{"bad env", func(p *Plan) { p.Cells[0].Server.Env = map[string]string{"A=B": "x"} }, []string{"cells[0].server.env"}},
		{"duplicate keys", func(p *Plan) { p.Cells = append(p.Cells, p.Cells[0]) }, []string{`cells[1].key: "m/tree/default" is also the key of cells[0]`}},
		{"distinct keys", func(p *Plan) {
			c := p.Cells[0]
			c.Kind = KindReference
			p.Cells = append(p.Cells, c)
		}, nil},
		{"newline in key", func(p *Plan) { p.Cells[0].Key = "a\nb" }, []string{"control character"}},
		{"negative phase", func(p *Plan) { p.Phases.DecodeRuns = -2 }, []string{"phases.decodeRuns"}},
		{"one decode token has no rate", func(p *Plan) { p.Phases.DecodeTokens = 1 }, []string{"phases.decodeTokens: a decode rate needs at least 2 tokens"}},
		{"two decode tokens", func(p *Plan) { p.Phases.DecodeTokens = 2 }, nil},
		{"skip long context", func(p *Plan) { p.Phases.LongContextTokens = -1 }, nil},
		{"long context below -1", func(p *Plan) { p.Phases.LongContextTokens = -2 }, []string{"phases.longContextTokens"}},
		{"spread below 1", func(p *Plan) { p.Phases.UnstableSpread = 0.9 }, []string{"phases.unstableSpread"}},
		{"attached", attach(nil), nil},
		{"attached with a ready url", attach(func(s *Server) { s.ReadyURL = "http://10.0.0.5:8080/health" }), nil},
		{"attached with a command", attach(func(s *Server) { s.Argv = []string{"sleep", "3600"} }), []string{"cells[0].server.argv: an attached server is not started"}},
		{"attached with env", attach(func(s *Server) { s.Env = map[string]string{"A": "1"} }), []string{"cells[0].server.env"}},
		{"attached with a port", attach(func(s *Server) { s.Port = 8080 }), []string{"cells[0].server.port"}},
		{"attached without a base url", attach(func(s *Server) { s.BaseURL = "" }), []string{"cells[0].server.baseUrl: missing"}},
		{"attached to {port}", attach(func(s *Server) { s.BaseURL = "http://127.0.0.1:{port}/v1" }), []string{"cells[0].server.baseUrl", "write the port"}},
		{"attached, ready url with {port}", attach(func(s *Server) { s.ReadyURL = "http://127.0.0.1:{port}/health" }), []string{"cells[0].server.readyUrl", "write the port"}},
		{"attached, bad ready url", attach(func(s *Server) { s.ReadyURL = "/health" }), []string{"cells[0].server.readyUrl"}},
		{"every problem at once", func(p *Plan) { p.Scope = ""; p.Cells[0].Kind = "" }, []string{"scope: missing", "cells[0].kind"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validPlan()
			tt.edit(&p)
			err := p.Validate()
			if len(tt.errHas) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error containing %q", tt.errHas)
			}
			for _, want := range tt.errHas {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Validate() = %q, want it to contain %q", err, want)
				}
			}
		})
	}
}

// attach turns the valid plan's cell into one attached to a running
// server, then applies edit.
func attach(edit func(s *Server)) func(p *Plan) {
	return func(p *Plan) {
		p.Cells[0].Server = Server{Attach: true, BaseURL: "http://10.0.0.5:8080/v1"}
		if edit != nil {
			edit(&p.Cells[0].Server)
		}
	}
}

func TestKeyOrDefault(t *testing.T) {
	tests := []struct {
		cell Cell
		want string
	}{
		{Cell{Key: "k", Model: "m", Kind: KindTree}, "k"},
		{Cell{Model: "m", Kind: KindTree, Configuration: "c"}, "m/tree/c"},
		{Cell{Model: "m", Kind: KindReference}, "m/reference"},
	}
	for _, tt := range tests {
		if got := tt.cell.KeyOrDefault(); got != tt.want {
			t.Errorf("%+v.KeyOrDefault() = %q, want %q", tt.cell, got, tt.want)
		}
	}
}

// Profile names resolve to <home>/metrics/bench/plans/<name>.json and
// nothing else: no separators, no traversal, no hidden or empty names.
func TestProfileNamePattern(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"smoke", true},
		{"standard", true},
		{"qwen3-0.6b_4bit.v2", true},
		{"A1", true},
		{"", false},
		{"..", false},
		{"../etc/passwd", false},
		{"/etc/passwd", false},
		{"a/b", false},
		{`a\b`, false},
		{".hidden", false},
		{"-flag", false},
		{"name with space", false},
		{"smoke\n", false},
		{"naïve", false},
	}
	for _, tt := range tests {
		if got := ProfileNamePattern.MatchString(tt.name); got != tt.ok {
			t.Errorf("ProfileNamePattern(%q) = %v, want %v", tt.name, got, tt.ok)
		}
	}
}

func TestLoadValidate(t *testing.T) {
	ok := Load{Rates: []float64{1, 2}}
	for _, tc := range []struct {
		name string
		load Load
		want string // "" valid
	}{
		{"rates", ok, ""},
		{"closed loop", Load{Concurrencies: []int{1, 8}}, ""},
		{"find max", Load{FindMaxRate: &FindMaxRate{}, Goodput: &SLO{TTFTMs: 500}}, ""},
		{"shared prefix", Load{Rates: []float64{1}, Workload: Workload{Kind: WorkloadSharedPrefix, Prefixes: 4, PrefixTokens: 256, PrefixRatio: 0.5}}, ""},
		{"sharegpt", Load{Rates: []float64{1}, Workload: Workload{Kind: WorkloadShareGPT, File: "/data/sg.json"}}, ""},
		{"no sweep", Load{}, "give one of rates"},
		{"two sweeps", Load{Rates: []float64{1}, Concurrencies: []int{2}}, "give one of rates"},
		{"rate NaN", Load{Rates: []float64{math.NaN()}}, "rates[0]"},
		{"rate too high", Load{Rates: []float64{1e9}}, "rates[0]"},
		{"closed loop arrival", Load{Concurrencies: []int{2}, Arrival: ArrivalGamma}, "closed loop"},
		{"burstiness without gamma", Load{Rates: []float64{1}, Burstiness: 0.5}, "only a gamma"},
		{"both sizes", Load{Rates: []float64{1}, Requests: 10, DurationMs: 1000}, "not both"},
		{"empty slo", Load{Rates: []float64{1}, Goodput: &SLO{}}, "at least one"},
		{"bad dist", Load{Rates: []float64{1}, Workload: Workload{Input: Lengths{Dist: "zipf"}}}, "dist"},
		{"uniform inverted", Load{Rates: []float64{1}, Workload: Workload{Output: Lengths{Dist: DistUniform, Min: 9, Max: 3}}}, "uniform"},
		{"sharegpt without file", Load{Rates: []float64{1}, Workload: Workload{Kind: WorkloadShareGPT}}, "names its JSON file"},
		{"prefixes on random", Load{Rates: []float64{1}, Workload: Workload{Prefixes: 3}}, "only a shared-prefix"},
		{"share over 1", Load{FindMaxRate: &FindMaxRate{MinShare: 1.5}}, "minShare"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ph := Phases{Load: &tc.load}
			err := errors.Join(ph.validate("phases")...)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want an error with %q, got %v", tc.want, err)
			}
			if tc.want == "" {
				d := ph.Defaults()
				if err := errors.Join(d.validate("phases")...); err != nil {
					t.Fatalf("defaults made it invalid: %v", err)
				}
			}
		})
	}
}

func TestPhaseNames(t *testing.T) {
	load := &Load{Rates: []float64{1}}
	for _, tc := range []struct {
		p    Phases
		want string
	}{
		{Phases{}, "decode cold-ttft warm-ttft long-context concurrent"},
		{Phases{LongContextTokens: -1}, "decode cold-ttft warm-ttft concurrent"},
		{Phases{Load: load}, "decode cold-ttft warm-ttft long-context concurrent load"},
		{Phases{Load: load, LoadOnly: true}, "load"},
	} {
		if got := strings.Join(tc.p.Names(), " "); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.p, got, tc.want)
		}
	}
}
