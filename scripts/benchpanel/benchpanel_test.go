package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/profiler"
	"github.com/chromedp/cdproto/runtime"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// The posted traffic is what the backend takes: every event valid, each
// model sampled every second, one in eight finishing a request.
func TestFeederEvents(t *testing.T) {
	f := newFeeder("", 16)
	now := time.Now().UnixMilli()
	evs := append(f.loads(now), f.second(now)...)
	counts := map[events.Type]int{}
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := events.Parse(b); err != nil {
			t.Errorf("%s: %v", b, err)
		}
		counts[ev.Type]++
	}
	want := map[events.Type]int{events.TypeModelLoad: 16, events.TypeSchedulerSample: 16, events.TypeCacheSample: 32, events.TypeRequestFinished: 2}
	for typ, n := range want {
		if counts[typ] != n {
			t.Errorf("%d %s events, want %d", counts[typ], typ, n)
		}
	}
}

func TestParseCounts(t *testing.T) {
	got, err := parseCounts("1, 16,1024")
	if err != nil || len(got) != 3 || got[2] != 1024 {
		t.Errorf("got %v, %v", got, err)
	}
	for _, bad := range []string{"0", "1025", "x", ""} {
		if _, err := parseCounts(bad); err == nil {
			t.Errorf("%q taken", bad)
		}
	}
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	writeTable(&b, []cell{{models: 16, view: "serving", secs: 20, frames: 40, chars: 400_000, task: 0.8, script: 0.6, layout: 0.04,
		heapStart: 10 << 20, heapEnd: 10.5 * (1 << 20), wasmStart: 12 << 20, wasmEnd: 12 << 20,
		switches: []time.Duration{300 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}, loadStart: 1.5, loadE: 1.2}})
	want := "| 16 | Serving | 2.00 | 10 | 40 | 20.0 | 15.0 | 1.0 | 10.0 → 10.5 | 12.0 | 200 / 300 | 1.2–1.5 |"
	if !strings.Contains(b.String(), want) {
		t.Errorf("table:\n%s\nwant the row %s", b.String(), want)
	}
}

// The summary splits the samples by file and names the functions with
// the most self time.
func TestSummarize(t *testing.T) {
	frame := func(name, url string) *runtime.CallFrame { return &runtime.CallFrame{FunctionName: name, URL: url} }
	p := &profiler.Profile{
		Nodes: []*profiler.ProfileNode{
			{ID: 1, CallFrame: frame("(root)", ""), Children: []int64{2, 5}},
			{ID: 2, CallFrame: frame("main.render", "wasm://wasm/01ab"), Children: []int64{3}},
			{ID: 3, CallFrame: frame("setOption", "http://x/web/echarts.min.js"), Children: []int64{4}},
			{ID: 4, CallFrame: frame("stroke", "")},
			{ID: 5, CallFrame: frame("(idle)", "")},
		},
		// 2 ms in Go, 6 in ECharts, 2 drawing; idle not counted.
		Samples:    []int64{2, 3, 3, 3, 4, 5},
		TimeDeltas: []int64{0, 2000, 2000, 2000, 2000, 2000, 9000},
	}
	p.Samples = append(p.Samples, 5)
	var b bytes.Buffer
	summarize(&b, p, 2, 3)
	out := b.String()
	for _, want := range []string{"10 ms sampled outside idle, 5.0 ms per frame", "echarts.min.js 3.0 (4.0)", "app.wasm 1.0 (5.0)", "3.0 ms/frame  echarts.min.js setOption"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// The fake fleet answers the host query with one host and every other
// with a sample of each model.
func TestFakeFleet(t *testing.T) {
	f, err := startFakeFleet(3)
	if err != nil {
		t.Fatal(err)
	}
	defer f.stop()
	get := func(q string) int {
		res, err := http.Get(f.url + "/api/v1/query?query=" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		var v struct {
			Status string
			Data   struct{ Result []json.RawMessage }
		}
		if err := json.Unmarshal(body, &v); err != nil || v.Status != "success" {
			t.Fatalf("%s: %s (%v)", q, body, err)
		}
		return len(v.Data.Result)
	}
	if n := get("max+by+(instance)+(mlx_build_info)"); n != 1 {
		t.Errorf("%d hosts, want 1", n)
	}
	if n := get("sum(rate(mlx_generation_tokens_total[5m]))"); n != 3 {
		t.Errorf("%d rows, want 3", n)
	}
}
