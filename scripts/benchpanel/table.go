package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// cell is one view measured at one model count.
type cell struct {
	models int
	view   string
	// From the start and end samples of the measured stretch.
	secs             float64
	frames           int
	chars            int64
	task, script     float64 // seconds of main-thread task and of script
	layout           float64 // seconds of layout and style
	heapStart        float64 // JSHeapUsedSize after a forced collection, bytes
	heapEnd          float64
	wasmStart        int64 // the wasm memory, bytes
	wasmEnd          int64
	switches         []time.Duration
	loadStart, loadE float64 // 1-minute load average
}

func (c cell) perFrame(s float64) float64 {
	if c.frames == 0 {
		return 0
	}
	return s * 1000 / float64(c.frames)
}

func (c cell) perSecond(s float64) float64 { return s * 1000 / c.secs }

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func mib(b float64) string { return fmt.Sprintf("%.1f", b/(1<<20)) }

// viewLabels are the tabs' labels, as the panel shows them.
var viewLabels = map[string]string{
	"serving": "Serving", "models": "Models", "caches": "Caches", "requests": "Requests", "bench": "Benchmarks", "fleet": "Fleet",
}

func label(view string) string {
	if l, ok := viewLabels[view]; ok {
		return l
	}
	return view
}

// writeTable writes the cells as a markdown table.
func writeTable(w io.Writer, cells []cell) {
	fmt.Fprintln(w, "| models | view | frames/s | frame kB | main thread ms/s | ms per frame | script ms/frame | layout+style ms/frame | JS heap MiB (start → end, after GC) | wasm memory MiB | switch to view ms (median / max) | load |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|---|---|---|---|")
	for _, c := range cells {
		kb := 0.0
		if c.frames > 0 {
			kb = float64(c.chars) / float64(c.frames) / 1000
		}
		var sw []string
		for _, d := range c.switches {
			sw = append(sw, fmt.Sprint(d.Milliseconds()))
		}
		switches := "—"
		if len(c.switches) > 0 {
			switches = fmt.Sprintf("%d / %d", median(c.switches).Milliseconds(), slices.Max(c.switches).Milliseconds())
		}
		wasm := mib(float64(c.wasmEnd))
		if c.wasmEnd != c.wasmStart {
			wasm = mib(float64(c.wasmStart)) + " → " + wasm
		}
		fmt.Fprintf(w, "| %d | %s | %.2f | %.0f | %.0f | %.1f | %.1f | %.1f | %s → %s | %s | %s | %.1f–%.1f |\n",
			c.models, label(c.view), float64(c.frames)/c.secs, kb, c.perSecond(c.task), c.perFrame(c.task), c.perFrame(c.script), c.perFrame(c.layout),
			mib(c.heapStart), mib(c.heapEnd), wasm, switches, min(c.loadStart, c.loadE), max(c.loadStart, c.loadE))
	}
}

// soakPoint is one sample of a soak.
type soakPoint struct {
	at        time.Duration // since the soak began
	heap      float64       // JSHeapUsedSize after a forced collection
	wasm      int64
	nodes     float64
	listeners float64
	frames    int     // since the point before
	task      float64 // main-thread seconds since the point before
	load      float64
}

// writeSoak writes a soak's samples as a markdown table, and the heap's
// growth from the first sample to the last.
func writeSoak(w io.Writer, models int, view string, pts []soakPoint) {
	fmt.Fprintf(w, "Soak: %d models, the %s view\n\n", models, label(view))
	fmt.Fprintln(w, "| at | JS heap MiB (after GC) | wasm memory MiB | DOM nodes | JS event listeners | frames | ms per frame | load |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, p := range pts {
		pf := "—"
		if p.frames > 0 {
			pf = fmt.Sprintf("%.1f", p.task*1000/float64(p.frames))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.0f | %.0f | %d | %s | %.1f |\n",
			p.at.Round(time.Second), mib(p.heap), mib(float64(p.wasm)), p.nodes, p.listeners, p.frames, pf, p.load)
	}
	if len(pts) > 1 {
		first, last := pts[0], pts[len(pts)-1]
		fmt.Fprintf(w, "\nJS heap after GC: %s MiB at %s, %s MiB at %s (%+.2f MiB, %+.1f %%); wasm memory %s → %s MiB.\n",
			mib(first.heap), first.at.Round(time.Second), mib(last.heap), last.at.Round(time.Second),
			(last.heap-first.heap)/(1<<20), 100*(last.heap-first.heap)/first.heap, mib(float64(first.wasm)), mib(float64(last.wasm)))
	}
}

// parseCounts reads a list like 1,16,128,1024.
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(f), &n); err != nil || n < 1 || n > 1024 {
			return nil, fmt.Errorf("model count %q: want 1 to 1024", f)
		}
		out = append(out, n)
	}
	return out, nil
}
