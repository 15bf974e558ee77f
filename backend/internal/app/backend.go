package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/access"
	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/backend/internal/health"
	"github.com/mlx-bun/mlx-metrics/backend/internal/homelock"
	"github.com/mlx-bun/mlx-metrics/backend/internal/ingest"
	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/backend/internal/webui"
	"github.com/mlx-bun/mlx-metrics/gpu/probe"
	"github.com/mlx-bun/mlx-metrics/shared/logkey"
)

// Config is serve's whole configuration, one field or section per part
// (serve's flags named in each field; cmd/mlx-metrics fills it from them
// and their environment twins).
type Config struct {
	Addr string // --addr: HOST:PORT to listen on
	Home string // --home: storage lives under Home/metrics
	// CORSOrigins (--cors-origins) are the host origins, comma-separated,
	// allowed to embed the panel and call the API from their pages.
	CORSOrigins string
	// Token (--token) is required of every change under the API
	// (docs/security.md), and of every request through the proxy without
	// its own ExportConfig.ProxyToken; none when empty.
	Token string
	// BodyMemoryMiB (--body-memory) bounds the request bodies held at
	// once, in MiB (server.DefaultBodyMemory when 0).
	BodyMemoryMiB int
	// Device is the GPU lease's word for the GPUs (probe.DescribeGPUs,
	// read once, when empty).
	Device string
	// Logger takes serve's log (slog.Default() when nil): cmd/mlx-metrics
	// builds it with internal/logging from --log-format and --log-level.
	Logger *slog.Logger

	Live            LiveConfig
	Bench           BenchConfig
	Export          ExportConfig
	ReferenceEngine ReferenceEngineConfig
}

// ConfigError is a value of Config that Start refused: the caller's
// mistake (a usage error), not a failure of the machine.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func configErrorf(format string, args ...any) error {
	return &ConfigError{fmt.Errorf(format, args...)}
}

// check refuses the parts' bad values, each part's own check in turn.
func (c Config) check() error {
	// A body of 32 MiB needs 48 MiB at its buffer's last growth.
	if c.BodyMemoryMiB != 0 && (c.BodyMemoryMiB < 48 || c.BodyMemoryMiB > 1<<20) {
		return configErrorf("--body-memory %d: want from 48 (MiB: a 32 MiB body's share as it grows) to 1048576", c.BodyMemoryMiB)
	}
	for _, check := range []func() error{c.ReferenceEngine.check, c.Live.check, c.Bench.check, c.Export.check} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// ListenError is a failure to bind Config.Addr.
type ListenError struct {
	Addr string
	Err  error
}

func (e *ListenError) Error() string { return "listen on " + e.Addr + ": " + e.Err.Error() }
func (e *ListenError) Unwrap() error { return e.Err }

// Backend is serve running: its parts, started in order (the live half,
// bench-serve, the export side, the HTTP server, the reference engine) and
// closed in reverse by Close.
type Backend struct {
	parts App
	srv   *Server
	addr  net.Addr
}

// Start starts the backend cfg describes and serves it on cfg.Addr; it
// returns once the listener is bound. ctx bounds the parts' background
// work; Close ends them. A refused value of cfg is a *ConfigError, a
// failure to bind a *ListenError; what Start had started by then is closed
// again.
func Start(ctx context.Context, cfg Config) (_ *Backend, err error) {
	b := new(Backend)
	log := logging.Or(cfg.Logger)
	cfg.Live.log, cfg.Bench.log, cfg.Export.log, cfg.ReferenceEngine.log = log, log, log, log
	defer func() {
		if err != nil {
			LogErrors(log, b.Close(context.WithoutCancel(ctx)))
		}
	}()
	origins, err := access.ParseOrigins(strings.Split(cfg.CORSOrigins, ","))
	if err != nil {
		return nil, configErrorf("-cors-origins: %w", err)
	}
	// Every part's values are refused now, before any part has started
	// (followers, storage, recovery) or "serving on" is said.
	if err := cfg.check(); err != nil {
		return nil, err
	}
	// Paths are resolved once, here: the bench runner starts in its run
	// directory, where a relative home would name another place.
	if cfg.Home, err = filepath.Abs(cfg.Home); err != nil {
		return nil, configErrorf("-home: %w", err)
	}
	// The guard checks every request's Host, answers CORS, and checks each
	// route's token (Routes names which). A producer's --events-token
	// opens POST /events alone.
	// A name in --addr is looked up once, here (bounded): one that
	// resolves to loopback alone keeps the Host check.
	loopback := access.IsLoopbackAddr(ctx, net.DefaultResolver, cfg.Addr)
	guard := access.New(access.Options{
		Token:         cfg.Token,
		ProducerToken: cfg.Live.EventsToken,
		Origins:       origins,
		Loopback:      loopback,
		ProxyToken:    cmp.Or(cfg.Export.ProxyToken, cfg.Token),
	})
	warnExposed(log, cfg.Addr, loopback, guard, cfg.Export.ProxyTo != "")
	// Bind before any part starts: a taken port is said before storage is
	// opened or recovery runs, and "serving on" is said only of a bound
	// address. Connections wait in the listen queue until the server
	// serves; the listener is closed again if a part fails to start.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, &ListenError{Addr: cfg.Addr, Err: err}
	}
	served := false
	defer func() {
		if !served {
			ln.Close()
		}
	}()
	// One process per home (Badger holds the history for one): a second
	// serve on it is told which process has it, before any part starts.
	// A home that cannot be locked (a full disk, no write access) is left
	// to bench-serve, which comes up degraded and says why.
	home, err := holdHome(log, cfg.Home)
	if err != nil {
		return nil, err
	}
	b.parts.Add(home)
	// A request two sources report (the proxy, and the server behind it
	// publishing its own events) counts once.
	cfg.Live.requests = ingest.NewRequests(0, 0)
	cfg.Export.requests = cfg.Live.requests
	// Every event source publishes to eventBus; every consumer subscribes.
	eventBus := bus.New()
	// Parts add their own /healthz sections with healthz.Add.
	healthz := health.New(time.Now(), health.Options{})
	healthz.Add("bus", func() any { return eventBus.Stats() })
	healthz.Add("refused", func() any { return guard.Stats() })
	bodies := server.NewBudget(int64(cfg.BodyMemoryMiB)<<20, 0, nil)
	healthz.Add("bodies", func() any { return bodies.Stats() })
	// The live half: the store on the bus, GET /snapshot and /stream,
	// POST /events, and the --events-url and --replay sources.
	liveSide, err := StartLive(ctx, eventBus, healthz, cfg.Live)
	if err != nil {
		return nil, err
	}
	b.parts.Add(liveSide)
	// bench-serve: plans, history, the GPU lease and the job service.
	if cfg.Device == "" {
		cfg.Device = probe.DescribeGPUs()
	}
	benchSide, err := OpenBench(cfg.Home, cfg.Device, cfg.Bench)
	if err != nil {
		return nil, err
	}
	b.parts.Add(benchSide)
	healthz.Add("gpu", func() any { return benchSide.lease.State() })
	healthz.Add("storage", benchSide.health) // "degraded" when the disk kept bench-serve from opening
	// Export: GET /prometheus, the --proxy-to proxy at /v1/*, --scrape.
	exportSide, err := StartExport(ctx, eventBus, healthz, cfg.Export)
	if err != nil {
		return nil, err
	}
	b.parts.Add(exportSide)
	panelUI, err := webui.New(webui.Options{CORSOrigins: origins})
	if err != nil {
		return nil, &ConfigError{err}
	}
	if !panelUI.Built() {
		log.Warn("panel not built (run scripts/build-panel); serving the API only")
	}
	// The routes are the table's (Routes), over the panel, /healthz and
	// the parts' handlers: to add yours, add a part above and its rows to
	// Routes.
	handlers := b.parts.Handlers()
	handlers.Panel, handlers.Health = panelUI, healthz
	fiberApp := server.New(server.Options{OnError: guard.Refused, Budget: bodies, Guard: guard}, Routes(handlers)...)
	b.addr = ln.Addr()
	// The server starts after the live half and bench-serve, so it would
	// close before them; but its Shutdown waits for the requests in flight,
	// and a stream client or a run's event follower stays until its part
	// ends. So the server's Close first ends the live half and bench-serve's
	// runs (their streams with them), then shuts down; the history closes
	// after, with bench-serve, so the requests in flight still read it.
	b.srv = Serve(fiberApp, ln, func(ctx context.Context) error {
		return errors.Join(b.parts.CloseFirst(ctx, liveSide), benchSide.StopRuns(ctx))
	})
	served = true
	b.parts.Add(b.srv)
	home.setAddr(ln.Addr().String())
	// The message keeps the address inline: scripts and tests read it
	// from "serving on http://ADDR " (panel/e2e, scripts/test-ollama).
	log.Info(fmt.Sprintf("serving on http://%s (home %s)", ln.Addr(), cfg.Home),
		logkey.Addr, ln.Addr().String(), logkey.Home, cfg.Home)
	if panelUI.Built() {
		log.Info(fmt.Sprintf("open the panel at http://%s/", browsable(ln.Addr())), logkey.URL, "http://"+browsable(ln.Addr())+"/")
	}
	// --reference-engine: a simulator with synthetic traffic feeding this
	// backend. The engine is an event producer: the producer token when
	// there is one, else the token.
	refEngine, err := StartReferenceEngine(ctx, ln.Addr().String(), cmp.Or(cfg.Live.EventsToken, cfg.Token), cfg.ReferenceEngine)
	if err != nil {
		return nil, err
	}
	b.parts.Add(refEngine)
	return b, nil
}

// Addr is the address the server listens on.
func (b *Backend) Addr() net.Addr { return b.addr }

// Done is closed when the server stops serving, on its own (Err says why)
// or after Close.
func (b *Backend) Done() <-chan struct{} { return b.srv.Done() }

// Err is why the server stopped serving; it is valid once Done is closed.
func (b *Backend) Err() error { return b.srv.Err() }

// Close closes the parts in the reverse order of their start, each bounding
// its own wait (so ctx should be one a signal has not cancelled), and
// returns their errors joined.
func (b *Backend) Close(ctx context.Context) error { return b.parts.Close(ctx) }

// LogErrors logs each of the errors in err (an errors.Join of them,
// nested or not) on a line of its own, at Error.
func LogErrors(log *slog.Logger, err error) {
	if err == nil {
		return
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			LogErrors(log, e)
		}
		return
	}
	log.Error(err.Error())
}

// browsable is addr as a browser can open it: a listener on every
// interface (0.0.0.0 or ::, as --addr :PORT gives) by 127.0.0.1.
func browsable(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok && (tcp.IP == nil || tcp.IP.IsUnspecified()) {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
	}
	return addr.String()
}

// warnExposed warns, loudly, when any client that reaches the server, or
// any web page the user opens, may start GPU jobs: listening beyond
// loopback (addr, not loopback), or letting every origin in
// (--cors-origins '*'), with no token.
func warnExposed(log *slog.Logger, addr string, loopback bool, guard *access.Guard, proxied bool) {
	if proxied && !guard.ProxyProtected() && !loopback {
		log.Warn(fmt.Sprintf("WARNING: the proxy at /v1 is open on %s, beyond loopback: anyone who can reach this port "+
			"may generate on the engine behind it. Set --proxy-token or --token. See docs/security.md.", addr), logkey.Addr, addr)
	}
	if guard.Protected() {
		return
	}
	if !loopback {
		log.Warn(fmt.Sprintf("WARNING: listening on %s, beyond loopback, with no --token: anyone who can reach this port "+
			"may post events, start and cancel GPU bench runs, and delete history. Set --token "+
			"(env MLX_METRICS_TOKEN) or bind 127.0.0.1. See docs/security.md.", addr), logkey.Addr, addr)
	}
	if guard.AnyOrigin() {
		log.Warn("WARNING: --cors-origins '*' with no --token: any web page the user opens may post events, " +
			"start and cancel GPU bench runs, delete history and generate through the proxy. " +
			"List the host origins instead of '*', or set --token. See docs/security.md.")
	}
}

// homePart holds the home's lock while serve runs; added first, it is
// released last.
type homePart struct{ lock *homelock.Lock }

// holdHome takes home for this serve. Another process holding it is an
// error (*homelock.InUseError); a lock that cannot be taken for another
// reason is logged and serve goes on without it.
func holdHome(log *slog.Logger, home string) (*homePart, error) {
	l, err := homelock.Acquire(home, "serve")
	var inUse *homelock.InUseError
	switch {
	case errors.As(err, &inUse):
		return nil, err
	case err != nil:
		log.Warn(fmt.Sprintf("home %s: %v (serving without its lock)", home, err), logkey.Home, home, logging.Err(err))
	}
	return &homePart{lock: l}, nil
}

func (h *homePart) setAddr(addr string) {
	if h.lock != nil {
		_ = h.lock.SetAddr(addr)
	}
}

func (h *homePart) Handlers(*Handlers) {}

func (h *homePart) Close(context.Context) error { return h.lock.Release() }
