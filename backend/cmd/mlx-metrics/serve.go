package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/app"
	"github.com/mlx-bun/mlx-metrics/backend/internal/jobs"
	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/backend/internal/otlp"
	"github.com/mlx-bun/mlx-metrics/backend/internal/prom"
	"github.com/mlx-bun/mlx-metrics/backend/internal/proxy"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/backend/internal/store"
	"github.com/mlx-bun/mlx-metrics/shared/cliflag"
)

// defaultHome is serve's data home without --home or MLX_METRICS_HOME.
func defaultHome() string {
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".mlx-metrics")
	}
	return ".mlx-metrics"
}

// listenFlags are the names other servers give what serve calls --addr.
var listenFlags = map[string]bool{"port": true, "host": true, "listen": true, "bind": true}

// runServe is `mlx-metrics serve`: the flags fill app.Config, and
// internal/app starts the backend from it.
func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var env envDefaults
	cfg, logFlags := addServeFlags(fs, &env)
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
	pos, err := parseFlags(fs, args)
	if name, ok := cliflag.Unknown(err); ok && listenFlags[name] {
		return usageErr("%v: serve listens on --addr HOST:PORT (default 127.0.0.1:7878)", errors.Unwrap(err))
	}
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("unexpected argument %q (serve takes only flags)", pos[0])
	}
	if err := env.err(); err != nil {
		return &exitError{code: 2, err: err}
	}
	// The log is serve's from here on, and every package's that logs to
	// slog.Default() (a nil Options.Logger).
	log, err := logging.New(os.Stderr, logFlags.format, logFlags.level)
	if err != nil {
		return usageErr("%v", err)
	}
	slog.SetDefault(log)
	cfg.Logger = log
	b, err := app.Start(ctx, *cfg)
	if err != nil {
		return startError(err)
	}
	// Closed on every way out; each part bounds its own Close, so the
	// context is one that a signal has not cancelled.
	defer func() { app.LogErrors(log, b.Close(context.WithoutCancel(ctx))) }()
	select {
	case <-b.Done():
		return b.Err()
	case <-ctx.Done():
		// Stopping was asked for: the deferred Close does it and says
		// what was cut.
		log.Info("stopping (interrupt again to stop at once)")
		return nil
	}
}

// serveLogFlags are --log-format and --log-level: internal/logging builds
// serve's logger from them.
type serveLogFlags struct{ format, level string }

// addServeFlags defines serve's flags on fs, each defaulting to its
// environment twin (read by env), and returns the configuration they fill
// and the log's flags.
func addServeFlags(fs *flag.FlagSet, env *envDefaults) (*app.Config, *serveLogFlags) {
	cfg, logs := &app.Config{}, &serveLogFlags{}
	fs.StringVar(&logs.format, "log-format", env.text("MLX_METRICS_LOG_FORMAT", logging.FormatText),
		"serve's log on stderr: `FORMAT` text (key=value lines) or json (one object a line) (env MLX_METRICS_LOG_FORMAT)")
	fs.StringVar(&logs.level, "log-level", env.text("MLX_METRICS_LOG_LEVEL", "info"),
		"log `LEVEL` and above: debug, info, warn or error (env MLX_METRICS_LOG_LEVEL)")
	fs.StringVar(&cfg.Addr, "addr", env.text("MLX_METRICS_ADDR", "127.0.0.1:7878"), "listen on `HOST:PORT` (env MLX_METRICS_ADDR)")
	fs.StringVar(&cfg.Home, "home", env.text("MLX_METRICS_HOME", defaultHome()), "data home `DIR`; storage lives under DIR/metrics (env MLX_METRICS_HOME)")
	fs.StringVar(&cfg.CORSOrigins, "cors-origins", env.text("MLX_METRICS_CORS_ORIGINS", ""), "comma-separated host `ORIGINS` (scheme://host[:port]) allowed to embed the panel and call the API; none by default (env MLX_METRICS_CORS_ORIGINS)")
	fs.StringVar(&cfg.Token, "token", env.text("MLX_METRICS_TOKEN", ""), "bearer `TOKEN` every change under /api/metrics requires (POST /events, POST and DELETE /bench, POST and DELETE /history); none when empty, which is safe only on loopback (env MLX_METRICS_TOKEN)")
	fs.IntVar(&cfg.BodyMemoryMiB, "body-memory", env.int("MLX_METRICS_BODY_MEMORY", server.DefaultBodyMemory>>20),
		"hold at most `MiB` of request bodies in memory at once, all requests together; a body past it waits a second, then is answered 503 to send again (env MLX_METRICS_BODY_MEMORY)")
	addBenchFlags(fs, env, &cfg.Bench)
	addLiveFlags(fs, env, &cfg.Live)
	addExportFlags(fs, env, &cfg.Export)
	addReferenceEngineFlags(fs, env, &cfg.ReferenceEngine)
	return cfg, logs
}

func addLiveFlags(fs *flag.FlagSet, env *envDefaults, c *app.LiveConfig) {
	fs.StringVar(&c.EventsURL, "events-url", env.text("MLX_METRICS_EVENTS_URL", ""), "follow a host's event stream at `URL` (SSE or NDJSON), reconnecting with backoff (env MLX_METRICS_EVENTS_URL)")
	fs.StringVar(&c.EventsURLToken, "events-url-token", env.text("MLX_METRICS_EVENTS_URL_TOKEN", ""), "bearer `TOKEN` sent to --events-url (env MLX_METRICS_EVENTS_URL_TOKEN)")
	fs.StringVar(&c.EventsToken, "events-token", env.text("MLX_METRICS_EVENTS_TOKEN", ""), "producer-only bearer `TOKEN`: opens POST /api/metrics/events alone, beside --token (alone, it guards every change); none when empty (env MLX_METRICS_EVENTS_TOKEN)")
	fs.StringVar(&c.Replay, "replay", env.text("MLX_METRICS_REPLAY", ""), "replay the events recorded in the NDJSON `FILE` at start (env MLX_METRICS_REPLAY)")
	fs.Float64Var(&c.ReplaySpeed, "replay-speed", env.float("MLX_METRICS_REPLAY_SPEED", 0), "replay pace `FACTOR`: 0 as fast as possible, 1 real time, 10 ten times faster (env MLX_METRICS_REPLAY_SPEED)")
	fs.IntVar(&c.Window, "window", env.int("MLX_METRICS_WINDOW", store.DefaultWindow), "the last `N` finished requests the timing distributions cover (env MLX_METRICS_WINDOW)")
	fs.IntVar(&c.Recent, "recent", env.int("MLX_METRICS_RECENT", store.DefaultRecent), "the last `N` finished requests the snapshot lists in recent (env MLX_METRICS_RECENT)")
	fs.IntVar(&c.Series, "series", env.int("MLX_METRICS_SERIES", store.DefaultSeries), "the last `N` points (one a second of scheduler samples) the throughput series keeps (env MLX_METRICS_SERIES)")
}

func addBenchFlags(fs *flag.FlagSet, env *envDefaults, c *app.BenchConfig) {
	fs.DurationVar(&c.Grace, "bench-grace", env.duration("MLX_METRICS_BENCH_GRACE", jobs.DefaultGrace),
		"the `DURATION` a cancelled bench run has between SIGTERM and SIGKILL (env MLX_METRICS_BENCH_GRACE)")
	fs.IntVar(&c.MaxQueued, "bench-queue", env.int("MLX_METRICS_BENCH_QUEUE", jobs.DefaultMaxQueued),
		"at most `N` bench runs wait for the GPU; POST /bench answers 409 beyond it (env MLX_METRICS_BENCH_QUEUE)")
}

func addExportFlags(fs *flag.FlagSet, env *envDefaults, c *app.ExportConfig) {
	fs.StringVar(&c.ProxyTo, "proxy-to", env.text("MLX_METRICS_PROXY_TO", ""),
		"front the OpenAI-compatible server at `URL` on /v1/* and measure each request (e.g. http://127.0.0.1:8000) (env MLX_METRICS_PROXY_TO)")
	fs.StringVar(&c.ProxyToken, "proxy-token", env.text("MLX_METRICS_PROXY_TOKEN", ""),
		"bearer `TOKEN` every request through the proxy at /v1/* requires, removed before it goes on; --token when empty, none when both are (env MLX_METRICS_PROXY_TOKEN)")
	fs.StringVar(&c.ProxyUpstreamToken, "proxy-upstream-token", env.text("MLX_METRICS_PROXY_UPSTREAM_TOKEN", ""),
		"bearer `TOKEN` the proxy sends to the --proxy-to server (env MLX_METRICS_PROXY_UPSTREAM_TOKEN)")
	fs.DurationVar(&c.ProxyHeadTimeout, "proxy-head-timeout", env.duration("MLX_METRICS_PROXY_HEAD_TIMEOUT", proxy.DefaultHeadTimeout),
		"wait at most `DURATION` for the --proxy-to server's answer to begin, then answer 504 (env MLX_METRICS_PROXY_HEAD_TIMEOUT)")
	fs.DurationVar(&c.ProxyIdleTimeout, "proxy-idle-timeout", env.duration("MLX_METRICS_PROXY_IDLE_TIMEOUT", proxy.DefaultIdleTimeout),
		"end an answer from the --proxy-to server that sends nothing for `DURATION`, and its request there (env MLX_METRICS_PROXY_IDLE_TIMEOUT)")
	fs.Var(&c.Scrapes, "scrape",
		"poll an engine's Prometheus endpoint, `URL[,KIND[,MODEL]]` with kind vllm, sglang, llamacpp, mlx or auto; repeatable (env MLX_METRICS_SCRAPE, space-separated)")
	fs.DurationVar(&c.ScrapeInterval, "scrape-interval", env.duration("MLX_METRICS_SCRAPE_INTERVAL", 2*time.Second),
		"poll --scrape targets every `DURATION`, at least 100ms (env MLX_METRICS_SCRAPE_INTERVAL)")
	fs.StringVar(&c.Fleet.URL, "fleet", env.text("MLX_METRICS_FLEET", ""),
		"serve the fleet view from the Prometheus-compatible query API at `URL` (Prometheus, Thanos, Mimir), which scrapes the fleet's backends; a token from MLX_METRICS_FLEET_TOKEN, or basic auth from MLX_METRICS_FLEET_USER and MLX_METRICS_FLEET_PASSWORD (env MLX_METRICS_FLEET)")
	fs.StringVar(&c.Fleet.HostLabel, "fleet-host-label", env.text("MLX_METRICS_FLEET_HOST_LABEL", "instance"),
		"the `LABEL` that tells the fleet's hosts apart: instance (the scrape's), or one the fleet's configuration sets (env MLX_METRICS_FLEET_HOST_LABEL)")
	fs.DurationVar(&c.Fleet.Timeout, "fleet-timeout", env.duration("MLX_METRICS_FLEET_TIMEOUT", 10*time.Second),
		"bound each fleet query, and each whole view, to `DURATION` (env MLX_METRICS_FLEET_TIMEOUT)")
	c.Fleet.BearerToken = os.Getenv("MLX_METRICS_FLEET_TOKEN")
	c.Fleet.Username, c.Fleet.Password = os.Getenv("MLX_METRICS_FLEET_USER"), os.Getenv("MLX_METRICS_FLEET_PASSWORD")
	fs.StringVar(&c.PromNames, "prom-names", env.text("MLX_METRICS_PROM_NAMES", string(prom.NamesBoth)),
		"the metric `NAMES` /metrics and /api/metrics/prometheus serve: both (this module's mlx_ and vLLM's vllm: families), mlx or vllm (env MLX_METRICS_PROM_NAMES)")
	fs.StringVar(&c.OTLP.Endpoint, "otlp-endpoint", env.text("MLX_METRICS_OTLP_ENDPOINT", ""),
		"push the Prometheus metrics to the OTLP receiver at `URL`, e.g. http://127.0.0.1:4318 (HTTP) or http://127.0.0.1:4317 (gRPC); off when empty (env MLX_METRICS_OTLP_ENDPOINT)")
	fs.StringVar(&c.OTLP.Protocol, "otlp-protocol", env.text("MLX_METRICS_OTLP_PROTOCOL", otlp.ProtocolHTTP),
		"OTLP `PROTOCOL`: "+otlp.ProtocolHTTP+" or "+otlp.ProtocolGRPC+" (env MLX_METRICS_OTLP_PROTOCOL)")
	fs.DurationVar(&c.OTLP.Interval, "otlp-interval", env.duration("MLX_METRICS_OTLP_INTERVAL", otlp.DefaultInterval),
		"push to --otlp-endpoint every `DURATION` (env MLX_METRICS_OTLP_INTERVAL)")
	// Refused once the flags are parsed, as a bad --scrape is.
	for _, t := range strings.Fields(env.text("MLX_METRICS_SCRAPE", "")) {
		if err := c.Scrapes.Set(t); err != nil {
			env.errs = append(env.errs, fmt.Errorf("MLX_METRICS_SCRAPE: %w", err))
		}
	}
}

func addReferenceEngineFlags(fs *flag.FlagSet, env *envDefaults, c *app.ReferenceEngineConfig) {
	fs.BoolVar(&c.Enabled, "reference-engine", env.bool("MLX_METRICS_REFERENCE_ENGINE", false), "run the reference engine (a simulator) on a loopback port with synthetic traffic, publishing its events here (env MLX_METRICS_REFERENCE_ENGINE)")
	fs.Float64Var(&c.Rate, "reference-traffic", env.float("MLX_METRICS_REFERENCE_TRAFFIC", 1), "the mean `RATE` of synthetic requests per second sent to the reference engine (env MLX_METRICS_REFERENCE_TRAFFIC)")
}

// startError is app.Start's error with serve's exit code: 2 for a refused
// value, the listen error's own for a failure to bind, else 1.
func startError(err error) error {
	var le *app.ListenError
	if errors.As(err, &le) {
		return listenError(le.Addr, le.Err)
	}
	var ce *app.ConfigError
	if errors.As(err, &ce) {
		return &exitError{code: 2, err: err}
	}
	return err
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
