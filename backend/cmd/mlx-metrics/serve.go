package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/access"
	"github.com/mlx-bun/mlx-metrics/backend/internal/app"
	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/backend/internal/health"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/backend/internal/webui"
)

// serveConfig is the backend's configuration; every flag has an env twin.
type serveConfig struct {
	addr string
	home string
	// corsOrigins are the host origins allowed to embed the panel and call
	// the API from their pages (comma-separated); none by default.
	corsOrigins string
	// token is required of every change under the API (docs/security.md).
	token string
}

func defaultHome() string {
	if h := os.Getenv("MLX_METRICS_HOME"); h != "" {
		return h
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".mlx-metrics")
	}
	return ".mlx-metrics"
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var cfg serveConfig
	fs.StringVar(&cfg.addr, "addr", envOr("MLX_METRICS_ADDR", "127.0.0.1:7878"), "listen on `HOST:PORT` (env MLX_METRICS_ADDR)")
	fs.StringVar(&cfg.home, "home", defaultHome(), "data home `DIR`; storage lives under DIR/metrics (env MLX_METRICS_HOME)")
	fs.StringVar(&cfg.corsOrigins, "cors-origins", os.Getenv("MLX_METRICS_CORS_ORIGINS"), "comma-separated host `ORIGINS` (scheme://host[:port]) allowed to embed the panel and call the API; none by default (env MLX_METRICS_CORS_ORIGINS)")
	var env envDefaults
	fs.StringVar(&cfg.token, "token", env.text("MLX_METRICS_TOKEN", ""), "bearer `TOKEN` every change under /api/metrics requires (POST /events, POST and DELETE /bench, POST and DELETE /history); none when empty, which is safe only on loopback (env MLX_METRICS_TOKEN)")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: mlx-metrics serve [flags]\n\n"+
			"Runs the backend: the live metrics from the host's events (REST, server-sent events,\n"+
			"Prometheus, OTLP), the bench-serve jobs and their history, and the panel at /.\n"+
			"Every flag has an environment twin, named in its line below.\n\n"+
			"examples:\n"+
			"  mlx-metrics serve --reference-engine              # a simulated engine's live traffic, no GPU needed\n"+
			"  mlx-metrics serve --events-url http://127.0.0.1:8080/api/events\n"+
			"  mlx-metrics serve --addr 0.0.0.0:7878 --token \"$(openssl rand -hex 16)\" --cors-origins https://host.example\n\nflags:")
		fs.PrintDefaults()
	}
	benchCfg := addBenchFlags(fs, &env)
	liveCfg := addLiveFlags(fs, &env)
	exportCfg := addExportFlags(fs, &env)
	refEngineCfg := addReferenceEngineFlags(fs, &env)
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2, err: err}
	}
	if err := env.err(); err != nil {
		return &exitError{code: 2, err: err}
	}
	origins, err := access.ParseOrigins(strings.Split(cfg.corsOrigins, ","))
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("-cors-origins: %w", err)}
	}
	// The guard mounts before every feature: Host, CORS, then the checks
	// on changes. A producer's --events-token opens POST /events alone.
	guard := access.New(access.Options{
		Token:         cfg.token,
		ProducerToken: liveCfg.eventsToken,
		Origins:       origins,
		Loopback:      access.IsLoopbackAddr(cfg.addr),
	})
	warnExposed(os.Stderr, cfg.addr, guard)
	// Every event source publishes to eventBus; every consumer subscribes.
	eventBus := bus.New()
	// Features add their own /healthz sections with healthz.Add.
	healthz := health.New(time.Now(), health.Options{})
	healthz.Add("bus", func() any { return eventBus.Stats() })
	healthz.Add("refused", func() any { return guard.Stats() })
	// The parts start in order and close in reverse (internal/app), on
	// every way out; each part's Close bounds itself, so the context is
	// one that a signal has not cancelled.
	parts := new(app.App)
	defer func() { logCloseErrors(parts.Close(context.WithoutCancel(ctx))) }()
	// The live half: the store on the bus, GET /snapshot and /stream,
	// POST /events, and the --events-url and --replay sources.
	liveSrv, err := startLive(ctx, liveCfg, eventBus, healthz)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	parts.Add(liveSrv)
	// bench-serve: plans, history, the GPU lease and the job service.
	benchSrv, err := openBench(cfg.home, gpuDevice(), benchCfg)
	if err != nil {
		return err
	}
	parts.Add(benchSrv)
	healthz.Add("gpu", func() any { return benchSrv.lease.State() })
	healthz.Add("storage", benchSrv.health) // "degraded" when the disk kept bench-serve from opening
	// Export: GET /prometheus, the --proxy-to proxy at /v1/*, --scrape.
	exportSide, err := startExport(ctx, exportCfg, eventBus, healthz)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	parts.Add(exportSide)
	panelUI, err := webui.New(webui.Options{CORSOrigins: origins})
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if !panelUI.Built() {
		fmt.Fprintln(os.Stderr, "mlx-metrics: panel not built (run scripts/build-panel); serving the API only")
	}
	// Features mount in order: the guard, the panel, /healthz, then the
	// parts' in the order they started; add a part above to add yours.
	features := append([]server.Feature{guard, panelUI, healthz}, parts.Features()...)

	fiberApp := server.New(server.Options{OnError: guard.Refused}, features...)
	// Bind first, so "serving on" is said only of a bound address and a
	// taken port is one line naming the flag to change.
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return listenError(cfg.addr, err)
	}
	// The server starts after the live half and bench-serve, so it would
	// close before them; but its Shutdown waits for the requests in flight,
	// and a stream client or a run's event follower stays until its part
	// ends. So the server's Close ends those two parts first (live, then
	// bench-serve), then shuts down.
	srv := app.Serve(fiberApp, ln, func(ctx context.Context) error {
		return parts.CloseFirst(ctx, liveSrv, benchSrv)
	})
	parts.Add(srv)
	fmt.Fprintf(os.Stderr, "mlx-metrics: serving on http://%s (home %s)\n", ln.Addr(), cfg.home)
	if panelUI.Built() {
		fmt.Fprintf(os.Stderr, "mlx-metrics: open the panel at http://%s/\n", ln.Addr())
	}
	// --reference-engine: a simulator with synthetic traffic feeding this backend.
	// The engine is an event producer: the producer token when there is
	// one, else the token.
	publishToken := cmp.Or(liveCfg.eventsToken, cfg.token)
	refEngine, err := startReferenceEngine(ctx, refEngineCfg, cfg.addr, publishToken)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	parts.Add(refEngine)
	select {
	case <-srv.Done():
		return srv.Err()
	case <-ctx.Done():
		// Stopping was asked for: the deferred Close does it and says
		// what was cut.
		return nil
	}
}

// logCloseErrors prints each of the errors closing the parts returned (an
// errors.Join of them, nested or not), one line each.
func logCloseErrors(err error) {
	if err == nil {
		return
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			logCloseErrors(e)
		}
		return
	}
	fmt.Fprintf(os.Stderr, "mlx-metrics: %v\n", err)
}

// listenError is a failure to bind addr in one line, with the flag to
// change when the address is taken.
func listenError(addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return &exitError{code: 1, err: fmt.Errorf("%s is already in use (another server there?); choose another with --addr HOST:PORT or MLX_METRICS_ADDR", addr)}
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		err = oe.Err
	}
	return &exitError{code: 2, err: fmt.Errorf("--addr %s: %v", addr, err)}
}

// warnExposed warns, loudly, when any client that reaches the server, or
// any web page the user opens, may start GPU jobs: listening beyond
// loopback, or letting every origin in (--cors-origins '*'), with no token.
func warnExposed(w io.Writer, addr string, guard *access.Guard) {
	if guard.Protected() {
		return
	}
	if !access.IsLoopbackAddr(addr) {
		fmt.Fprintf(w, "mlx-metrics: WARNING: listening on %s, beyond loopback, with no --token: anyone who can reach this port\n"+
			"mlx-metrics: WARNING: may post events, start and cancel GPU bench runs, and delete history. Set --token\n"+
			"mlx-metrics: WARNING: (env MLX_METRICS_TOKEN) or bind 127.0.0.1. See docs/security.md.\n", addr)
	}
	if guard.AnyOrigin() {
		fmt.Fprint(w, "mlx-metrics: WARNING: --cors-origins '*' with no --token: any web page the user opens may post events,\n"+
			"mlx-metrics: WARNING: start and cancel GPU bench runs, delete history and generate through the proxy.\n"+
			"mlx-metrics: WARNING: List the host origins instead of '*', or set --token. See docs/security.md.\n")
	}
}
