// Command benchpanel measures what the panel costs the browser per stream
// frame (issue 41): it starts `mlx-metrics serve` on loopback with the
// reference engine's traffic and, beside it, posted events giving N
// models in all live traffic (a scheduler and two cache samples of each a
// second, and one finished request of each every 8 s), opens the panel in
// headless Chromium and, for each view and N, measures over -duration:
//
//   - the main thread's task time (Chrome DevTools Protocol
//     Performance.getMetrics, TaskDuration; ScriptDuration and
//     Layout+RecalcStyleDuration beside it) per second and per stream
//     frame the page received (counted by a listener the tool adds to the
//     panel's EventSource);
//   - the JS heap used (JSHeapUsedSize after HeapProfiler.collectGarbage)
//     at the stretch's start and end, and the wasm instance's memory (the
//     Go heap lives there, and grows only);
//   - the time from a click on the view's tab to the animation frame after
//     the view was rendered (its element, every chart's canvas), measured in
//     the page, -switches times.
//
// The backend's window is filled first (-backfill, default 10 min: the
// reference engine's recorded traffic and the posted models'), so the
// charts hold what a panel left open holds. With -soak D it instead keeps
// one view of one count (-soak-models, -soak-view) open for D, sampling
// the heap after a forced collection every -soak-every.
//
// It prints markdown tables. Loopback only, bounded by -timeout.
// Usage: scripts/bench-panel [flags] (it builds the binary and the panel).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/cdproto/profiler"
)

type config struct {
	bin       string
	chromium  string
	recording string
	counts    []int
	views     []string
	duration  time.Duration
	settle    time.Duration
	switches  int
	backfill  time.Duration
	soak      time.Duration
	soakEvery time.Duration
	soakN     int
	soakView  string
	timeout   time.Duration
	profile   string
	serve     int
	width     int64
	height    int64
}

var allViews = []string{"serving", "models", "caches", "requests", "bench", "fleet"}

func main() {
	var cfg config
	counts := flag.String("models", "1,16,128,1024", "model counts, comma-separated (1 to 1024; the reference engine's model is one of them)")
	views := flag.String("views", strings.Join(allViews, ","), "views (the tabs' keys), comma-separated, measured in this order")
	flag.StringVar(&cfg.bin, "bin", "", "the mlx-metrics binary, built with the panel (required)")
	flag.StringVar(&cfg.chromium, "chromium", "/usr/bin/chromium", "the Chromium to run headless")
	flag.StringVar(&cfg.recording, "recording", "panel/e2e/testdata/reference-10min.ndjson.gz", "the reference engine's recorded events, for -backfill")
	flag.DurationVar(&cfg.duration, "duration", 20*time.Second, "how long each view is measured at each count")
	flag.DurationVar(&cfg.settle, "settle", 3*time.Second, "wait after switching to a view before measuring it")
	flag.IntVar(&cfg.switches, "switches", 3, "times each view is switched to (the first before its measurement)")
	flag.DurationVar(&cfg.backfill, "backfill", 10*time.Minute, "traffic posted into the past before the panel opens (0: none)")
	flag.DurationVar(&cfg.soak, "soak", 0, "instead of the table: keep one view open this long and sample its heap")
	flag.DurationVar(&cfg.soakEvery, "soak-every", time.Minute, "the soak's sampling interval")
	flag.IntVar(&cfg.soakN, "soak-models", 16, "the soak's model count")
	flag.StringVar(&cfg.soakView, "soak-view", "serving", "the soak's view")
	flag.StringVar(&cfg.profile, "profile", "", "take a CPU profile of each measured stretch into this directory (N-view.cpuprofile) and print where its time went (the timings then include the profiler's)")
	flag.Int64Var(&cfg.width, "width", 1440, "the browser's viewport width, CSS pixels")
	flag.Int64Var(&cfg.height, "height", 1000, "the browser's viewport height, CSS pixels: charts below it are not redrawn until scrolled to (3000 holds every chart of the Serving view)")
	flag.IntVar(&cfg.serve, "serve", 0, "instead of measuring: serve this many models of traffic (backfilled) and wait until -timeout or an interrupt, for a look in a browser")
	flag.DurationVar(&cfg.timeout, "timeout", 0, "bound on the whole run (default: what the measurements need, plus 10 min)")
	flag.Parse()
	var err error
	if cfg.counts, err = parseCounts(*counts); err != nil {
		fmt.Fprintln(os.Stderr, "bench-panel:", err)
		os.Exit(2)
	}
	for _, v := range strings.Split(*views, ",") {
		if v = strings.TrimSpace(v); !slices.Contains(allViews, v) {
			fmt.Fprintf(os.Stderr, "bench-panel: view %q: want some of %s\n", v, strings.Join(allViews, ","))
			os.Exit(2)
		}
		cfg.views = append(cfg.views, v)
	}
	if cfg.bin == "" || cfg.duration <= 0 || cfg.switches < 1 || cfg.soakEvery <= 0 || !slices.Contains(allViews, cfg.soakView) || cfg.soakN < 1 || cfg.soakN > 1024 || cfg.serve < 0 || cfg.serve > 1024 || cfg.width < 100 || cfg.height < 100 {
		flag.Usage()
		os.Exit(2)
	}
	if cfg.profile != "" {
		if err := os.MkdirAll(cfg.profile, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "bench-panel:", err)
			os.Exit(1)
		}
	}
	if cfg.timeout == 0 {
		per := cfg.settle + cfg.duration + time.Duration(cfg.switches)*5*time.Second
		cfg.timeout = time.Duration(len(cfg.counts)*len(cfg.views))*per + 10*time.Minute
		if cfg.soak > 0 {
			cfg.timeout = cfg.soak + 10*time.Minute
		}
		if cfg.serve > 0 {
			cfg.timeout = time.Hour
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	fmt.Printf("bench-panel: %s, %d cores; load %s at the start\n", chromiumVersion(cfg.chromium), numCPU(), loadavgText())
	switch {
	case cfg.serve > 0:
		err = serveOnly(ctx, cfg)
	case cfg.soak > 0:
		err = soak(ctx, cfg)
	default:
		err = table(ctx, cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-panel:", err)
		os.Exit(1)
	}
}

// setup is a backend with n models of traffic, and the panel open on it.
type setup struct {
	srv    *server
	fleet  *fakeFleet
	br     *browser
	stop   func()
	errc   chan error
	feeder *feeder
}

func start(ctx context.Context, cfg config, n int, views []string) (*setup, error) {
	s := &setup{errc: make(chan error, 1)}
	var stops []func()
	s.stop = func() {
		for _, f := range slices.Backward(stops) {
			f()
		}
	}
	fail := func(err error) (*setup, error) { s.stop(); return nil, err }
	fleetURL := ""
	if slices.Contains(views, "fleet") {
		f, err := startFakeFleet(n)
		if err != nil {
			return fail(err)
		}
		stops = append(stops, f.stop)
		s.fleet, fleetURL = f, f.url
	}
	srv, err := startServer(ctx, cfg.bin, fleetURL)
	if err != nil {
		return fail(err)
	}
	stops = append(stops, srv.stop)
	s.srv = srv
	s.feeder = newFeeder(srv.base, n-1)
	if cfg.backfill > 0 {
		t0 := time.Now()
		if err := backfill(ctx, srv.base, cfg.recording, s.feeder, cfg.backfill); err != nil {
			return fail(fmt.Errorf("backfill: %w", err))
		}
		fmt.Printf("  %d models: %s of traffic backfilled in %s\n", n, cfg.backfill, time.Since(t0).Round(100*time.Millisecond))
	}
	fctx, fcancel := context.WithCancel(ctx)
	stops = append(stops, fcancel)
	go s.feeder.run(fctx, s.errc)
	br, err := newBrowser(ctx, cfg.chromium, cfg.width, cfg.height)
	if err != nil {
		return fail(err)
	}
	stops = append(stops, br.close)
	s.br = br
	if err := br.open(srv.base+"/", views); err != nil {
		return fail(err)
	}
	// Every model reported: the reference engine's, loaded in-process once
	// the backend answers, and the posted ones.
	if err := br.waitFor(fmt.Sprintf("%d models in the snapshot", n), fmt.Sprintf(`(async()=>{
		const r = await fetch(%q); const s = await r.json(); return s.models.length >= %d})()`, srv.base+"/api/metrics/snapshot", n), time.Minute); err != nil {
		return fail(err)
	}
	return s, nil
}

// failed is the feeder's error, if it stopped.
func (s *setup) failed() error {
	select {
	case err := <-s.errc:
		return fmt.Errorf("posting events: %w", err)
	default:
		return nil
	}
}

// serveOnly is -serve: the backend with its traffic, no browser.
func serveOnly(ctx context.Context, cfg config) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	srv, err := startServer(ctx, cfg.bin, "")
	if err != nil {
		return err
	}
	defer srv.stop()
	f := newFeeder(srv.base, cfg.serve-1)
	if cfg.backfill > 0 {
		if err := backfill(ctx, srv.base, cfg.recording, f, cfg.backfill); err != nil {
			return err
		}
	}
	errc := make(chan error, 1)
	go f.run(ctx, errc)
	fmt.Printf("serving %d models of traffic at %s/ (interrupt to stop)\n", cfg.serve, srv.base)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return nil
	}
}

func table(ctx context.Context, cfg config) error {
	var cells []cell
	for _, n := range cfg.counts {
		cs, err := measureCount(ctx, cfg, n)
		if err != nil {
			return fmt.Errorf("%d models: %w", n, err)
		}
		cells = append(cells, cs...)
	}
	fmt.Printf("\nA %d × %d viewport. Each view measured %s after a %s settle; main-thread times are Performance.getMetrics deltas "+
		"(TaskDuration, ScriptDuration, LayoutDuration+RecalcStyleDuration) over that stretch, divided by its seconds "+
		"and by the snapshot frames the page received; %d switches to each view, from the view before it in %s.\n\n",
		cfg.width, cfg.height, cfg.duration, cfg.settle, cfg.switches, strings.Join(cfg.views, ", "))
	writeTable(os.Stdout, cells)
	return nil
}

func measureCount(ctx context.Context, cfg config, n int) ([]cell, error) {
	s, err := start(ctx, cfg, n, cfg.views)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	br := s.br
	// From the last view, so that the first is switched to from another.
	if len(cfg.views) > 1 {
		if _, err := br.switchTo(cfg.views[len(cfg.views)-1]); err != nil {
			return nil, err
		}
		time.Sleep(cfg.settle)
	}
	var cells []cell
	for _, view := range cfg.views {
		c := cell{models: n, view: view}
		took, err := br.switchTo(view)
		if err != nil {
			return nil, err
		}
		c.switches = append(c.switches, took)
		time.Sleep(cfg.settle)
		c.loadStart = loadavg()
		s0, err := br.gcSample()
		if err != nil {
			return nil, err
		}
		if cfg.profile != "" {
			if err := br.startProfile(); err != nil {
				return nil, err
			}
		}
		select {
		case <-time.After(cfg.duration):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		s1, err := br.sample()
		if err != nil {
			return nil, err
		}
		var prof *profiler.Profile
		if cfg.profile != "" {
			if prof, err = br.stopProfile(); err != nil {
				return nil, err
			}
			if err := saveProfile(filepath.Join(cfg.profile, fmt.Sprintf("%d-%s.cpuprofile", n, view)), prof); err != nil {
				return nil, err
			}
		}
		g1, err := br.gcSample()
		if err != nil {
			return nil, err
		}
		c.loadE = loadavg()
		if err := s.failed(); err != nil {
			return nil, err
		}
		c.secs = s1.wall.Sub(s0.wall).Seconds()
		c.frames, c.chars = s1.frames-s0.frames, s1.chars-s0.chars
		d := func(k string) float64 { return s1.metrics[k] - s0.metrics[k] }
		c.task, c.script = d("TaskDuration"), d("ScriptDuration")
		c.layout = d("LayoutDuration") + d("RecalcStyleDuration")
		c.heapStart, c.heapEnd = s0.metrics["JSHeapUsedSize"], g1.metrics["JSHeapUsedSize"]
		c.wasmStart, c.wasmEnd = s0.wasm, g1.wasm
		fmt.Printf("  %d models, %s: %.1f ms per frame (%d frames in %.1f s), switch %d ms; load %.1f\n",
			n, label(view), c.perFrame(c.task), c.frames, c.secs, took.Milliseconds(), c.loadE)
		if prof != nil {
			summarize(os.Stdout, prof, c.frames, 25)
		}
		cells = append(cells, c)
	}
	// The other switches: each view in turn again, from the one before.
	for range cfg.switches - 1 {
		for i, view := range cfg.views {
			time.Sleep(time.Second)
			took, err := br.switchTo(view)
			if err != nil {
				return nil, err
			}
			cells[i].switches = append(cells[i].switches, took)
		}
	}
	return cells, nil
}

func soak(ctx context.Context, cfg config) error {
	views := []string{cfg.soakView}
	s, err := start(ctx, cfg, cfg.soakN, views)
	if err != nil {
		return err
	}
	defer s.stop()
	if _, err := s.br.switchTo(cfg.soakView); err != nil {
		return err
	}
	time.Sleep(cfg.settle)
	begin := time.Now()
	var pts []soakPoint
	var prev sample
	for {
		g, err := s.br.gcSample()
		if err != nil {
			return err
		}
		if err := s.failed(); err != nil {
			return err
		}
		p := soakPoint{at: time.Since(begin), heap: g.metrics["JSHeapUsedSize"], wasm: g.wasm,
			nodes: g.metrics["Nodes"], listeners: g.metrics["JSEventListeners"], load: loadavg()}
		if len(pts) > 0 {
			p.frames, p.task = g.frames-prev.frames, g.metrics["TaskDuration"]-prev.metrics["TaskDuration"]
		}
		prev = g
		pts = append(pts, p)
		fmt.Printf("  %s: JS heap %s MiB after GC, wasm %s MiB, %d frames\n", p.at.Round(time.Second), mib(p.heap), mib(float64(p.wasm)), p.frames)
		if time.Since(begin) >= cfg.soak {
			break
		}
		select {
		case <-time.After(min(cfg.soakEvery, cfg.soak-time.Since(begin))):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	fmt.Println()
	writeSoak(os.Stdout, cfg.soakN, cfg.soakView, pts)
	return nil
}

// loadavg is the 1-minute load average (0 where /proc/loadavg is not).
func loadavg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

func loadavgText() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// chromiumVersion is what the Chromium at path says it is.
func chromiumVersion(path string) string {
	out, err := exec.Command(path, "--version").Output()
	if s := strings.TrimSpace(string(out)); err == nil && s != "" {
		return s
	}
	return path
}

func numCPU() int { return runtime.NumCPU() }
