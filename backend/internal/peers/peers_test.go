package peers

import (
	"bytes"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

func readFixture(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestDecodeFixtures: each tool's own file, as the tool wrote it
// (scripts/bench-peers), reads with the figures checked by hand against
// the file: units converted (GuideLLM's latency in seconds), each tool's
// TPOT and ITL put where vLLM's definitions put them.
func TestDecodeFixtures(t *testing.T) {
	tests := []struct {
		file, tool, version, target string
		points                      int
		// check looks at the first point (or the one named in it).
		check   func(t *testing.T, ps []bench.LoadPoint)
		problem string // one of the run's problems holds it
		start   time.Time
	}{
		{file: "testdata/vllm-0.33.0/results.jsonl", tool: ToolVLLM, points: 2,
			problem: "no time zone", start: time.Date(2026, 12, 7, 17, 13, 7, 0, time.UTC).Add(-25154499077),
			check: func(t *testing.T, ps []bench.LoadPoint) {
				p := ps[0]
				want(t, "offered rate", p.OfferedRate, 2)
				want(t, "arrival", p.Arrival, bench.ArrivalPoisson)
				want(t, "requests", p.Requests, 50)
				want(t, "duration", p.DurationS, 25.154499077000082)
				want(t, "ttft mean", p.TTFT.Mean, 28.954797179999332)
				want(t, "ttft p99.9", p.TTFT.P999, 57.97454277410205)
				want(t, "ttft count", p.TTFT.Count, 50)
				want(t, "itl mean", p.ITL.Mean, 2.038737121875087)
				want(t, "itl count", p.ITL.Count, 3150) // without --save-detailed: a gap a token after the first
				want(t, "input tokens", p.InputTokens, int64(6400))
				want(t, "second point's e2el median", ps[1].E2EL.Median, 139.62127100012367)
				want(t, "second point's rate", ps[1].OfferedRate, 4)
			}},
		{file: "testdata/vllm-0.33.0/rate8-detailed.json", tool: ToolVLLM, version: "0.33.0", points: 1,
			check: func(t *testing.T, ps []bench.LoadPoint) {
				want(t, "offered rate", ps[0].OfferedRate, 8)
				want(t, "tpot mean", ps[0].TPOT.Mean, 2.1674182799997364)
				want(t, "itl p99", ps[0].ITL.P99, 4.1677849400843865)
				want(t, "itl count (the itls counted)", ps[0].ITL.Count, 3200)
			}},
		{file: "testdata/guidellm-0.8.1/benchmarks.json", tool: ToolGuideLLM, version: "0.8.1",
			target: "http://127.0.0.1:18080", points: 3, problem: "itl (gap by gap)",
			start: time.UnixMicro(1796663671174293),
			check: func(t *testing.T, ps []bench.LoadPoint) {
				p := ps[0]
				want(t, "offered rate", p.OfferedRate, 2)
				want(t, "arrival", p.Arrival, bench.ArrivalConstant)
				want(t, "duration", p.DurationS, 24.64234185218811)
				want(t, "request throughput", p.RequestThroughput, 2.029027934922519)
				want(t, "ttft mean", p.TTFT.Mean, 13.534526824951172)
				want(t, "ttft p99", p.TTFT.P99, 16.395092010498047)
				want(t, "tpot (its inter_token_latency) mean", p.TPOT.Mean, 1.9426930139935208)
				want(t, "tpot count (gaps, its weights)", p.TPOT.Count, 3150)
				want(t, "e2el mean (s to ms)", p.E2EL.Mean, 137.5462627410889)
				want(t, "e2el p99.9", p.E2EL.P999, 141.12138748168945)
				want(t, "input tokens", p.InputTokens, int64(6400))
				want(t, "third rate", ps[2].OfferedRate, 8)
			}},
		{file: "testdata/aiperf-0.13.0/rate4.json", tool: ToolAIPerf, version: "0.13.0",
			target: "http://127.0.0.1:18080", points: 1, problem: "time_to_first_token p99.9",
			start: time.Date(2026, 12, 7, 17, 16, 34, 189177000, time.UTC),
			check: func(t *testing.T, ps []bench.LoadPoint) {
				p := ps[0]
				want(t, "offered rate", p.OfferedRate, 4)
				want(t, "arrival", p.Arrival, bench.ArrivalPoisson)
				want(t, "duration", p.DurationS, 11.876131840000001)
				want(t, "request throughput", p.RequestThroughput, 4.0967502087912635)
				want(t, "ttft mean", p.TTFT.Mean, 12.7549425)
				want(t, "ttft p99", p.TTFT.P99, 22.477442609999976)
				want(t, "tpot (its inter_token_latency)", p.TPOT.Mean, 2.1040374485714284)
				want(t, "itl (its inter_chunk_latency) count", p.ITL.Count, 3150)
				want(t, "e2el median", p.E2EL.Median, 142.01457349999998)
				want(t, "input tokens", p.InputTokens, int64(6400))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b := readFixture(t, tt.file)
			rec, err := Decode(b, Options{Version: tt.version})
			if err != nil {
				t.Fatal(err)
			}
			if rec.Source == nil || rec.Source.Tool != tt.tool || rec.Source.Version != tt.version {
				t.Errorf("source %+v, want %s %s", rec.Source, tt.tool, tt.version)
			}
			if len(rec.Cells) != 1 {
				t.Fatalf("%d cells, want 1", len(rec.Cells))
			}
			c := rec.Cells[0]
			if c.Model != "reference-sim" || c.Kind != bench.KindTree || c.Configuration != slug(tt.tool) ||
				c.Status != bench.CellMeasured || !c.Attached {
				t.Errorf("cell %+v", c)
			}
			if tt.target != "" && c.Note != "target "+tt.target {
				t.Errorf("note %q, want the target %s", c.Note, tt.target)
			}
			if len(c.LoadPoints) != tt.points {
				t.Fatalf("%d points, want %d", len(c.LoadPoints), tt.points)
			}
			for i, p := range c.LoadPoints {
				if p.Point != i+1 || p.Repeat != 1 || p.Completed != 50 || p.Errors != 0 {
					t.Errorf("point %d: %d/%d, %d completed, %d errors", i, p.Point, p.Repeat, p.Completed, p.Errors)
				}
			}
			tt.check(t, c.LoadPoints)
			if tt.problem != "" && !strings.Contains(strings.Join(rec.Problems, "\n"), tt.problem) {
				t.Errorf("problems %q, want one saying %q", rec.Problems, tt.problem)
			}
			if !tt.start.IsZero() && rec.StartedAt != tt.start.UnixMilli() {
				t.Errorf("startedAt %d, want %d", rec.StartedAt, tt.start.UnixMilli())
			}
			if !strings.Contains(rec.ID, slug(tt.tool)) || !bench.RunIDPattern.MatchString(rec.ID) {
				t.Errorf("id %q", rec.ID)
			}
			e := bench.Compact(rec, "/somewhere")
			if err := e.Check(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
				t.Errorf("history refuses it: %v", err)
			}
			if len(e.Cells[0].LoadPoints) != tt.points || e.Source == nil {
				t.Errorf("history entry lost its points or source")
			}
		})
	}
}

func want[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if g, ok := any(got).(float64); ok && near(g, any(want).(float64)) {
		return
	}
	if got != want {
		t.Errorf("%s: %v, want %v", what, got, want)
	}
}

// TestDecodeUnknownShape: a file of none of the tools is refused, saying
// what each tool's file looks like.
func TestDecodeUnknownShape(t *testing.T) {
	for _, body := range []string{"", "{}", "[]", "[1, 2]", `{"id": "x", "cells": []}`, "not json",
		`{"request_throughput": 1}`, `{"benchmarks": {}}`, "\x00\xff"} {
		_, err := Decode([]byte(body), Options{})
		if !errors.Is(err, ErrUnknownShape) {
			t.Errorf("%q: %v, want ErrUnknownShape", body, err)
			continue
		}
		for _, w := range []string{"vllm bench serve", "GuideLLM", "AIPerf", "request_throughput", "benchmarks[]", "aiperf_version"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: %q does not name %q", body, err, w)
			}
		}
	}
}

// vllmLine is a small vllm bench serve result with one field replaced.
func vllmLine(field, value string) string {
	fields := map[string]string{
		"date": `"20261207-120000"`, "model_id": `"m"`, "request_rate": "4.0", "burstiness": "1.0",
		"duration": "10.0", "completed": "40", "failed": "0", "num_prompts": "40", "total_input_tokens": "5120",
		"total_output_tokens": "2560", "request_throughput": "4.0", "output_throughput": "256.0",
		"total_token_throughput": "768.0", "mean_ttft_ms": "12.5", "median_ttft_ms": "11.0", "std_ttft_ms": "2.0",
		"p99_ttft_ms": "20.0",
	}
	if value == "" {
		delete(fields, field)
	} else {
		fields[field] = value
	}
	var b strings.Builder
	b.WriteString("{")
	for _, k := range []string{"date", "model_id", "request_rate", "burstiness", "duration", "completed", "failed",
		"num_prompts", "total_input_tokens", "total_output_tokens", "request_throughput", "output_throughput",
		"total_token_throughput", "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms"} {
		if v, ok := fields[k]; ok {
			if b.Len() > 1 {
				b.WriteString(", ")
			}
			b.WriteString(`"` + k + `": ` + v)
		}
	}
	return b.String() + "}"
}

// TestDecodeDropsBadEntries: an entry with a figure that is not a finite
// number at least 0 and within bounds (NaN as Python writes it, a
// negative, an absurd size, a string, a fraction of a request) is left
// out with a problem naming it; the file's good entries are kept. A file
// of only bad entries is refused, saying why.
func TestDecodeDropsBadEntries(t *testing.T) {
	tests := []struct {
		name, field, value, problem string
	}{
		{"NaN as Python writes it", "mean_ttft_ms", "NaN", "ttft mean is not a number"},
		{"an infinity", "duration", "Infinity", "duration is not a number"},
		{"negative", "p99_ttft_ms", "-3", "ttft p99 -3 is outside"},
		{"absurd", "request_throughput", "1e300", "request_throughput 1e+300 is outside"},
		{"past float64", "output_throughput", "1e999", "output_throughput is not a number"},
		{"a string", "completed", `"forty"`, "completed is not a number"},
		{"a fraction of a request", "failed", "0.5", "failed 0.5 is not a count"},
		{"an object", "total_input_tokens", `{"a": 1}`, "total_input_tokens is not a number"},
		{"a rate past the bound", "request_rate", "1e6", "request_rate is over"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			good := vllmLine("", "")
			file := good + "\n" + vllmLine(tt.field, tt.value) + "\n" + strings.Replace(good, `"m"`, `"m2"`, 1)
			rec, err := Decode([]byte(file), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Cells) != 2 || len(rec.Cells[0].LoadPoints) != 1 || len(rec.Cells[1].LoadPoints) != 1 {
				t.Fatalf("cells %+v, want m and m2 with a point each", rec.Cells)
			}
			if !strings.Contains(strings.Join(rec.Problems, "\n"), "entry 2: "+tt.problem) {
				t.Errorf("problems %q, want entry 2's %q", rec.Problems, tt.problem)
			}
			_, err = Decode([]byte(vllmLine(tt.field, tt.value)), Options{})
			if err == nil || !strings.Contains(err.Error(), "holds no point") || !strings.Contains(err.Error(), tt.problem) {
				t.Errorf("alone: %v, want a refusal saying %q", err, tt.problem)
			}
		})
	}
}

// TestDecodeBadEntryEachTool: a GuideLLM benchmark or an AIPerf metric that
// does not read costs its point only, with a problem.
func TestDecodeBadEntryEachTool(t *testing.T) {
	gl := readFixture(t, "testdata/guidellm-0.8.1/benchmarks.json")
	// The second benchmark's request totals become a string.
	i := bytes.Index(gl, []byte(`"request_totals"`))
	i += bytes.Index(gl[i+1:], []byte(`"request_totals"`)) + 1
	j := i + bytes.IndexByte(gl[i:], '}') + 1
	broken := append(append(append([]byte{}, gl[:i]...), `"request_totals": "lost"`...), gl[j:]...)
	rec, err := Decode(broken, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Cells[0].LoadPoints); n != 2 {
		t.Errorf("%d points, want the other 2", n)
	}
	if !strings.Contains(strings.Join(rec.Problems, "\n"), "benchmarks[1]: not a GuideLLM benchmark: left out") {
		t.Errorf("problems %q", rec.Problems)
	}

	ap := readFixture(t, "testdata/aiperf-0.13.0/rate2.json")
	for _, c := range []struct{ anchor, from, to, problem string }{
		{`"time_to_first_token": {`, `"avg": `, `"avg": -`, "time_to_first_token mean -"},
		{`"time_to_first_token": {`, `"unit": "ms"`, `"unit": "fortnights"`, "unit fortnights is not a time"},
		{`"request_latency": {`, `"request_latency": {`, `"request_latency": 7, "x": {`, "request_latency is not a metric record"},
	} {
		i := bytes.Index(ap, []byte(c.anchor))
		j := bytes.Index(ap[i:], []byte(c.from))
		if i < 0 || j < 0 {
			t.Fatalf("%q after %q is not in the fixture", c.from, c.anchor)
		}
		b := append(append(append([]byte{}, ap[:i+j]...), c.to...), ap[i+j+len(c.from):]...)
		if _, err := Decode(b, Options{}); err == nil || !strings.Contains(err.Error(), c.problem) {
			t.Errorf("%v, want a refusal saying %q", err, c.problem)
		}
	}
}

// TestRunID: the id is the file's start time and its content's hash, so a
// second import of the same file is the same run; a file that says not
// when it ran takes its modification time, and an id of its hash alone.
func TestRunID(t *testing.T) {
	a := []byte(vllmLine("", ""))
	r1, err1 := Decode(a, Options{})
	r2, err2 := Decode(a, Options{Version: "0.11.0"})
	r3, err3 := Decode([]byte(vllmLine("mean_ttft_ms", "12.6")), Options{})
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	if r1.ID != r2.ID || r1.ID == r3.ID || !strings.HasPrefix(r1.ID, "20261207T115950Z-vllm-bench-serve-") {
		t.Errorf("ids %s, %s, %s", r1.ID, r2.ID, r3.ID)
	}
	if r2.Source.Version != "0.11.0" {
		t.Errorf("version %q, want the one given", r2.Source.Version)
	}
	undated := []byte(vllmLine("date", ""))
	if _, err := Decode(undated, Options{}); err == nil || !strings.Contains(err.Error(), "says not when it ran") {
		t.Errorf("%v, want a refusal: no time at all", err)
	}
	mod := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	r4, err := Decode(undated, Options{Modified: mod})
	r5, _ := Decode(undated, Options{Modified: mod.Add(time.Hour)})
	if err != nil || r4.StartedAt != mod.UnixMilli() || r4.ID != r5.ID || !strings.HasPrefix(r4.ID, "vllm-bench-serve-") {
		t.Errorf("%v: %s at %d (and %s)", err, r4.ID, r4.StartedAt, r5.ID)
	}
}

// TestCellsByModelAndTarget: one cell a model and target, in order of first
// appearance; the same model at two targets gets two keys.
func TestCellsByModelAndTarget(t *testing.T) {
	line := func(model, url string) string {
		return strings.Replace(vllmLine("model_id", `"`+model+`"`), "{", `{"base_url": "`+url+`", `, 1)
	}
	file := strings.Join([]string{line("a", "http://x"), line("b", "http://x"), line("a", "http://y"), line("a", "http://x")}, "\n")
	rec, err := Decode([]byte(file), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range rec.Cells {
		got = append(got, c.Key+" "+c.Note+" "+string(rune('0'+len(c.LoadPoints))))
	}
	wantCells := []string{"a/tree/vllm-bench-serve target http://x 2", "b/tree/vllm-bench-serve target http://x 1",
		"a/tree/vllm-bench-serve@http://y target http://y 1"}
	if strings.Join(got, "|") != strings.Join(wantCells, "|") {
		t.Errorf("cells %q, want %q", got, wantCells)
	}
}

// TestExportVLLMRoundTrip: a run's load points exported in vLLM's shape
// and imported again are the same points, but what vLLM's format does not
// carry (send rate, schedule lag, warm-up, search, saturation, the ITL's
// count, per-point problems and requests file).
func TestExportVLLMRoundTrip(t *testing.T) {
	g := 3.5
	dist := func(base float64, n int) bench.Dist {
		return bench.Dist{Count: n, Mean: base, Std: base / 10, Median: base * 0.9, P90: base * 1.5, P95: base * 1.7,
			P99: base * 2, P999: base * 2.2}
	}
	points := []bench.LoadPoint{
		{Arrival: bench.ArrivalPoisson, OfferedRate: 4, Requests: 200, Completed: 198, Errors: 2, DurationS: 51.2,
			RequestThroughput: 3.87, OutputThroughput: 495.3, TotalTokenThroughput: 991.1, InputTokens: 25344,
			OutputTokens: 25344, TTFT: dist(25, 198), TPOT: dist(8, 198), ITL: dist(7.9, 25146), E2EL: dist(1040, 198),
			Goodput: &g, SendRate: 3.99, Lag: dist(0.2, 200), Warmup: 5, Saturated: true, RequestsFile: "x.ndjson"},
		{Arrival: bench.ArrivalConstant, OfferedRate: 8, Requests: 200, Completed: 200, DurationS: 25.6, Repeat: 2,
			RequestThroughput: 7.8, TTFT: dist(30, 200), E2EL: dist(1100, 200)},
		{Concurrency: 16, Requests: 100, Completed: 100, DurationS: 9, RequestThroughput: 11.1, TTFT: dist(90, 100)},
	}
	for i := range points {
		points[i].Point = i + 1
		if points[i].Repeat == 0 {
			points[i].Repeat = 1
		}
	}
	var buf bytes.Buffer
	finished := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	if err := WriteVLLM(&buf, []ExportCell{{Model: "m", Points: points}}, finished, "mlx-metrics r1"); err != nil {
		t.Fatal(err)
	}
	if Detect(buf.Bytes()) != ToolVLLM {
		t.Fatalf("the export does not read as vLLM's: %s", buf.Bytes())
	}
	rec, err := Decode(buf.Bytes(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := rec.Cells[0].LoadPoints
	if len(got) != len(points) {
		t.Fatalf("%d points back, want %d", len(got), len(points))
	}
	for i, p := range points {
		w := p
		w.SendRate, w.Lag, w.Warmup, w.Saturated, w.RequestsFile, w.ITL.Count = 0, bench.Dist{}, 0, false, "", 0
		if w.OutputTokens > int64(w.Completed) { // a gap a token after each request's first
			w.ITL.Count = int(w.OutputTokens) - w.Completed
		}
		if w.TPOT.Count > 0 || w.TPOT.Mean > 0 {
			w.TPOT.Count = w.Completed
		}
		if w.E2EL.Mean > 0 {
			w.E2EL.Count = w.Completed
		}
		if g := got[i]; !equalPoint(g, w) {
			t.Errorf("point %d:\n got  %+v\n want %+v", i+1, g, w)
		}
	}
	if rec.FinishedAt != finished.UnixMilli() {
		t.Errorf("finishedAt %d, want %d", rec.FinishedAt, finished.UnixMilli())
	}
	if err := WriteVLLM(&buf, []ExportCell{{Model: "m"}}, finished, ""); err == nil {
		t.Error("a run of no load points exported")
	}
}

func equalPoint(a, b bench.LoadPoint) bool {
	ga, gb := a.Goodput, b.Goodput
	a.Goodput, b.Goodput = nil, nil
	if (ga == nil) != (gb == nil) || (ga != nil && *ga != *gb) {
		return false
	}
	return a.Point == b.Point && a.Repeat == b.Repeat && a.Arrival == b.Arrival && a.OfferedRate == b.OfferedRate &&
		a.Concurrency == b.Concurrency && a.Requests == b.Requests && a.Completed == b.Completed && a.Errors == b.Errors &&
		a.DurationS == b.DurationS && a.RequestThroughput == b.RequestThroughput && a.OutputThroughput == b.OutputThroughput &&
		a.TotalTokenThroughput == b.TotalTokenThroughput && a.InputTokens == b.InputTokens && a.OutputTokens == b.OutputTokens &&
		a.TTFT == b.TTFT && a.TPOT == b.TPOT && a.ITL == b.ITL && a.E2EL == b.E2EL && a.Lag == b.Lag && a.SendRate == b.SendRate
}

// TestPythonLiterals: Python's NaN and infinities outside strings are
// quoted; inside strings they are left alone.
func TestPythonLiterals(t *testing.T) {
	for in, want := range map[string]string{
		`{"a": NaN, "b": -Infinity, "c": Infinity}`: `{"a": "NaN", "b": "-Infinity", "c": "Infinity"}`,
		`{"NaN": "x NaN \" Infinity"}`:              `{"NaN": "x NaN \" Infinity"}`,
		`[1, 2]`:                                    `[1, 2]`,
	} {
		if got := string(pythonLiterals([]byte(in))); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
