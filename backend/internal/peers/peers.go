// Package peers reads the results other serving benchmarks wrote (`vllm
// bench serve --save-result`, GuideLLM's benchmarks.json, AIPerf's
// profile_export_aiperf.json) as bench-serve run records, told apart by
// their shape, and writes a run's load points in vLLM's shape. The field
// mapping of each tool, and where its definitions differ, is in
// docs/bench-serve.md ("Results other tools wrote").
package peers

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// MaxFileBytes bounds a result file: vLLM's with --save-detailed holds
// every request's token gaps, some 100 MB for a long run.
const MaxFileBytes = 256 << 20

// maxPoints bounds the points one file makes: a history entry holds about
// a thousand (bench.MaxEntryBytes), a sweep a few dozen.
const maxPoints = 256

// The tools, as Source.Tool and as the cells' configuration.
const (
	ToolVLLM     = "vllm bench serve"
	ToolGuideLLM = "guidellm"
	ToolAIPerf   = "aiperf"
)

// ErrUnknownShape is what Decode answers, wrapped, for a file that is none
// of the tools' results.
var ErrUnknownShape = errors.New("not a result file of vllm bench serve, GuideLLM or AIPerf")

// Options are what the file may not say.
type Options struct {
	// Version is the tool's version where the file does not say it.
	Version string
	// Modified is when the file was last written: a run whose file says
	// not when it ran starts then (and its id is its content's hash).
	Modified time.Time
}

// Read decodes a result file from r, refusing one over MaxFileBytes.
func Read(r io.Reader, opts Options) (bench.RunRecord, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return bench.RunRecord{}, err
	}
	if len(b) > MaxFileBytes {
		return bench.RunRecord{}, fmt.Errorf("the file is over %d MiB: no tool's result is that large", MaxFileBytes>>20)
	}
	return Decode(b, opts)
}

// Decode turns one tool's result file into a run record: one cell per
// model and target, each point a load point. Entries that do not read are
// left out, each with a problem; an error says the file holds no point at
// all, or that it is not a result file (ErrUnknownShape). Errors quote no
// unbounded input.
func Decode(b []byte, opts Options) (bench.RunRecord, error) {
	if len(b) > MaxFileBytes {
		return bench.RunRecord{}, fmt.Errorf("the file is over %d MiB: no tool's result is that large", MaxFileBytes>>20)
	}
	b = pythonLiterals(b)
	var r result
	var err error
	switch Detect(b) {
	case ToolVLLM:
		r, err = decodeVLLM(b)
	case ToolGuideLLM:
		r, err = decodeGuideLLM(b)
	case ToolAIPerf:
		r, err = decodeAIPerf(b)
	default:
		return bench.RunRecord{}, fmt.Errorf("%w: want a vllm bench serve --save-result JSON (one object with "+
			"request_throughput and completed, an array of them, or one a line), a GuideLLM benchmarks.json "+
			"(an object with benchmarks[]) or an AIPerf profile_export_aiperf.json (an object with aiperf_version "+
			"and time_to_first_token)", ErrUnknownShape)
	}
	if err != nil {
		return bench.RunRecord{}, err
	}
	if r.version == "" {
		r.version = opts.Version
	}
	return r.record(b, opts)
}

// result is what a tool's decoder read: its points, and what it could not.
type result struct {
	tool, version string
	machine       bench.Machine
	entries       []entry
	problems      []string
	// missing counts the figures the file lacks, by name, over its points.
	missing map[string]int
	// naive says the file's times carry no zone (read as UTC).
	naive bool
}

// entry is one point of a file and whose it is.
type entry struct {
	model, target string
	point         bench.LoadPoint
	start, end    time.Time // zero when the file does not say
}

func (r *result) problem(format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

// record builds the run: cells in the order their models first appear,
// points in file order, the run's times the span of its points'.
func (r *result) record(body []byte, opts Options) (bench.RunRecord, error) {
	if len(r.entries) == 0 {
		msg := fmt.Sprintf("the %s file holds no point that reads", r.tool)
		if len(r.problems) > 0 {
			msg += ": " + clip(r.problems[0], 300)
		}
		return bench.RunRecord{}, errors.New(msg)
	}
	if len(r.entries) > maxPoints {
		r.problem("%d points in the file: the first %d are kept", len(r.entries), maxPoints)
		r.entries = r.entries[:maxPoints]
	}
	rec := bench.RunRecord{
		Machine: r.machine, Complete: true,
		Source: &bench.Source{Tool: r.tool, Version: clip(r.version, 64)},
		Plan:   bench.Plan{Scope: bench.ScopeScoped},
	}
	cells := map[string]int{}
	var start, end time.Time
	for _, e := range r.entries {
		model := e.model
		if model == "" {
			model = "unknown"
		}
		group := model + "\x00" + e.target
		i, ok := cells[group]
		if !ok {
			i = len(rec.Cells)
			cells[group] = i
			key := model + "/" + bench.KindTree + "/" + slug(r.tool)
			if taken(rec.Cells, key) {
				key += "@" + e.target
			}
			for n := 2; taken(rec.Cells, key); n++ {
				key = fmt.Sprintf("%s/%s/%s#%d", model, bench.KindTree, slug(r.tool), n)
			}
			c := bench.CellResult{Key: key, Model: model, Kind: bench.KindTree, Configuration: slug(r.tool),
				Status: bench.CellMeasured, Attached: true, Samples: []bench.Sample{}}
			if e.target != "" {
				c.Note = "target " + e.target
			}
			rec.Cells = append(rec.Cells, c)
			rec.Plan.Models = append(rec.Plan.Models, model)
			rec.Plan.Cells = append(rec.Plan.Cells, bench.Cell{Key: key, Model: model, Kind: bench.KindTree,
				Configuration: slug(r.tool), Server: bench.Server{Attach: true, BaseURL: e.target}})
		}
		p := e.point
		p.Point = len(rec.Cells[i].LoadPoints) + 1
		if p.Repeat == 0 {
			p.Repeat = 1
		}
		rec.Cells[i].LoadPoints = append(rec.Cells[i].LoadPoints, p)
		if !e.start.IsZero() && (start.IsZero() || e.start.Before(start)) {
			start = e.start
		}
		if e.end.After(end) {
			end = e.end
		}
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	if start.IsZero() {
		if opts.Modified.IsZero() {
			return bench.RunRecord{}, fmt.Errorf("the %s file says not when it ran", r.tool)
		}
		r.problem("the file says not when it ran: the file's modification time stands in")
		start, end = opts.Modified, opts.Modified
		rec.ID = slug(r.tool) + "-" + hash[:12]
	} else {
		rec.ID = bench.NewRunID(start, slug(r.tool)+"-"+hash[:8])
	}
	if end.Before(start) {
		end = start
	}
	rec.StartedAt, rec.FinishedAt = start.UnixMilli(), end.UnixMilli()
	if r.naive {
		r.problem("the file's times carry no time zone: read as UTC")
	}
	if len(r.missing) > 0 {
		names := make([]string, 0, len(r.missing))
		for n := range r.missing {
			names = append(names, n)
		}
		sort.Strings(names)
		r.problem("not in the file, so 0 in the points: %s", clip(strings.Join(names, ", "), 1000))
	}
	rec.Problems = dedupe(r.problems)
	return rec, nil
}

func taken(cells []bench.CellResult, key string) bool {
	for _, c := range cells {
		if c.Key == key {
			return true
		}
	}
	return false
}

// slug is a tool's name as a configuration: "vllm bench serve" → "vllm-bench-serve".
func slug(tool string) string { return strings.ReplaceAll(tool, " ", "-") }

// dedupe keeps each problem once, in order, at most bench.MaxProblems, each
// at most 500 bytes.
func dedupe(ps []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range ps {
		p = clip(p, 500)
		if seen[p] {
			continue
		}
		seen[p] = true
		if len(out) == bench.MaxProblems-1 {
			out = append(out, "more problems left out")
			break
		}
		out = append(out, p)
	}
	return out
}

// clip cuts s to at most n bytes on a rune boundary, saying it did.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8RuneStart(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	if len(s) > 0 {
		s = s[:len(s)-1]
	}
	return s + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// Detect names the tool whose result b is, by shape, or "" for none.
func Detect(b []byte) string {
	b = bytes.TrimLeft(b, " \t\r\n\ufeff")
	if len(b) == 0 {
		return ""
	}
	if b[0] == '[' {
		var first []shapeProbe
		// An array: vLLM's sweep summary.json, objects of --save-result.
		if json.Unmarshal(b, &first) == nil && len(first) > 0 && first[0].vllm() {
			return ToolVLLM
		}
		return ""
	}
	var p shapeProbe
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&p); err != nil {
		return ""
	}
	switch {
	case p.AIPerfVersion.present || (p.TimeToFirstToken.kind == '{' && p.RequestThroughput.kind == '{'):
		return ToolAIPerf
	case p.Benchmarks.kind == '[':
		return ToolGuideLLM
	case p.vllm():
		return ToolVLLM
	}
	return ""
}

// shapeProbe reads the keys that tell the tools apart, without keeping
// their values (a GuideLLM benchmarks[] may be most of the file).
type shapeProbe struct {
	AIPerfVersion     jsonKind `json:"aiperf_version"`
	TimeToFirstToken  jsonKind `json:"time_to_first_token"`
	Benchmarks        jsonKind `json:"benchmarks"`
	RequestThroughput jsonKind `json:"request_throughput"`
	Completed         jsonKind `json:"completed"`
	Duration          jsonKind `json:"duration"`
}

func (p shapeProbe) vllm() bool {
	isNum := func(k jsonKind) bool { return k.kind == '-' || (k.kind >= '0' && k.kind <= '9') || k.kind == '"' }
	return isNum(p.RequestThroughput) && isNum(p.Completed) && p.Duration.present
}

// jsonKind is the first byte of a value, and that it was there.
type jsonKind struct {
	present bool
	kind    byte
}

func (k *jsonKind) UnmarshalJSON(b []byte) error {
	k.present, k.kind = true, b[0]
	return nil
}
