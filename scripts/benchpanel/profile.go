package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/profiler"
	"github.com/chromedp/chromedp"
)

// startProfile starts the page's CPU profiler (V8's sampling profiler,
// every 200 µs).
func (b *browser) startProfile() error {
	if _, err := chromedp.Call(b.ctx, profiler.Enable, cdp.Empty{}); err != nil {
		return err
	}
	if _, err := chromedp.Call(b.ctx, profiler.SetSamplingInterval, profiler.SetSamplingIntervalParams{Interval: 200}); err != nil {
		return err
	}
	_, err := chromedp.Call(b.ctx, profiler.Start, cdp.Empty{})
	return err
}

func (b *browser) stopProfile() (*profiler.Profile, error) {
	r, err := chromedp.Call(b.ctx, profiler.Stop, cdp.Empty{})
	if err != nil {
		return nil, err
	}
	return r.Profile, nil
}

// saveProfile writes p where Chromium's DevTools (Performance panel, "Load
// profile") opens it.
func saveProfile(file string, p *profiler.Profile) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o644)
}

// where names the place a profile node's time is spent: its script's file
// (app.wasm is the panel's Go, echarts.min.js the charts, wasm_exec.js
// Go's bridge to JS), (native) for the browser's own functions (canvas
// drawing, timers), or V8's own name for the rest: (garbage collector),
// (program), (idle).
func where(f *profiler.ProfileNode) string {
	u := f.CallFrame.URL
	switch {
	case strings.HasPrefix(u, "wasm://"):
		return "app.wasm"
	case u == "" && strings.HasPrefix(f.CallFrame.FunctionName, "("):
		return f.CallFrame.FunctionName
	case u == "":
		return "(native)"
	}
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	return path.Base(u)
}

// share is one line of a profile's summary.
type share struct {
	name string
	us   int64
}

// summarize writes where p's samples fell, per frame received: by file,
// and the functions with the most self time, and the inclusive time of
// the calls into ECharts and JSON.parse from Go.
func summarize(w io.Writer, p *profiler.Profile, frames, top int) {
	nodes := map[int64]*profiler.ProfileNode{}
	parent := map[int64]int64{}
	for _, n := range p.Nodes {
		nodes[n.ID] = n
		for _, c := range n.Children {
			parent[c] = n.ID
		}
	}
	self := map[int64]int64{}
	for i, id := range p.Samples {
		if i+1 < len(p.TimeDeltas) {
			self[id] += p.TimeDeltas[i+1]
		}
	}
	byFile, byFunc := map[string]int64{}, map[string]int64{}
	inclusive := map[string]int64{} // entries into a file from another
	calls := map[string]int64{}     // each function with what it calls
	var total int64
	for id, us := range self {
		n := nodes[id]
		f := where(n)
		if f == "(idle)" {
			continue
		}
		total += us
		byFile[f] += us
		name := n.CallFrame.FunctionName
		if name == "" {
			name = "(anonymous)"
		}
		byFunc[f+" "+name] += us
		// Each file's time entered from outside it, counted once per
		// sample: the outermost entry on its stack.
		seen := map[string]bool{}
		for c := id; c != 0; c = parent[c] {
			fn := where(nodes[c]) + " " + nodes[c].CallFrame.FunctionName
			if !seen[fn] {
				seen[fn] = true
				calls[fn] += us
			}
			cf := where(nodes[c])
			if p, ok := parent[c]; ok && where(nodes[p]) == cf {
				continue
			}
			if !seen[cf] {
				seen[cf] = true
				inclusive[cf] += us
			}
		}
	}
	per := func(us int64) string {
		if frames == 0 {
			return "—"
		}
		return fmt.Sprintf("%.1f", float64(us)/1000/float64(frames))
	}
	sorted := func(m map[string]int64) []share {
		var out []share
		for k, v := range m {
			out = append(out, share{k, v})
		}
		slices.SortFunc(out, func(a, b share) int { return cmp.Or(cmp.Compare(b.us, a.us), strings.Compare(a.name, b.name)) })
		return out
	}
	fmt.Fprintf(w, "    profile: %.0f ms sampled outside idle, %s ms per frame\n", float64(total)/1000, per(total))
	fmt.Fprintf(w, "    by file (self ms/frame; with what it calls):")
	for _, s := range sorted(byFile) {
		if s.us*50 >= total { // 2 % and more
			fmt.Fprintf(w, " %s %s (%s);", s.name, per(s.us), per(inclusive[s.name]))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "    self time:")
	for i, s := range sorted(byFunc) {
		if i == top {
			break
		}
		fmt.Fprintf(w, "      %6s ms/frame  %s\n", per(s.us), s.name)
	}
	// With what they call: the Go functions (the others' names are
	// minified), past the runtime's and the bridge's own.
	fmt.Fprintln(w, "    the panel's Go with what it calls:")
	n := 0
	for _, s := range sorted(calls) {
		name, ok := strings.CutPrefix(s.name, "app.wasm ")
		if !ok || strings.HasPrefix(name, "runtime.") || strings.HasPrefix(name, "syscall_js.") || strings.HasPrefix(name, "wasm_pc_f_loop") || strings.HasPrefix(name, "_rt0") {
			continue
		}
		if n++; n > top {
			break
		}
		fmt.Fprintf(w, "      %6s ms/frame  %s\n", per(s.us), name)
	}
}
