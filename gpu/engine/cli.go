package engine

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/cliflag"
	"github.com/mlx-bun/mlx-metrics/shared/logkey"
)

// UsageError is a bad flag or configuration (exit status 2).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Command is `mlx-metrics engine`: it parses args and serves the reference
// engine until ctx ends.
func Command(ctx context.Context, args []string, stderr io.Writer) error {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("engine", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: mlx-metrics engine [--port PORT] [--model NAME] [flags]

Serves the reference engine: a simulator of an OpenAI-compatible LLM server
(/v1/completions, /v1/chat/completions, /v1/models, /health; no model, no
GPU). Its step times follow the cost model the flags set, so a benchmark
of it measures those rates.

Examples:
  mlx-metrics engine --port 8000
  mlx-metrics engine --port 8000 --decode-rate 2000 --prefill-rate 100000 --load-ms 50
  mlx-metrics engine --publish http://127.0.0.1:7878   # feed a backend's panel

flags:
`)
		fs.PrintDefaults()
	}
	host := fs.String("host", "127.0.0.1", "`ADDRESS` to listen on")
	port := fs.Int("port", 8000, "`PORT` to listen on (0 picks one)")
	publish := fs.String("publish", os.Getenv("MLX_METRICS_ENGINE_PUBLISH"), "POST events as NDJSON to this backend `URL` (http://127.0.0.1:7878 or its full /api/metrics/events URL) (env MLX_METRICS_ENGINE_PUBLISH, which a backend can set for the engines its bench runs start)")
	// The token's env twin is read after parsing: as a flag default -h
	// would print it.
	publishToken := fs.String("publish-token", "", "bearer `TOKEN` for --publish (env MLX_METRICS_EVENTS_TOKEN, else MLX_METRICS_TOKEN)")
	fs.StringVar(&cfg.Model, "model", cfg.Model, "model `NAME` to serve")
	fs.Float64Var(&cfg.PrefillRate, "prefill-rate", cfg.PrefillRate, "prefill `RATE` in prompt tokens per second")
	fs.Float64Var(&cfg.DecodeRate, "decode-rate", cfg.DecodeRate, "decode `RATE` in tokens per second of a lone stream")
	fs.Float64Var(&cfg.BatchSlowdown, "batch-slowdown", cfg.BatchSlowdown, "extra decode step time per additional decoding row, as a `FRACTION` (0.05 = +5% each)")
	fs.IntVar(&cfg.BatchCapacity, "batch-capacity", cfg.BatchCapacity, "`ROWS` in the batch (the rest wait in the queue)")
	fs.IntVar(&cfg.PrefillChunk, "prefill-chunk", cfg.PrefillChunk, "prompt `TOKENS` prefilled per step (chunked prefill)")
	fs.IntVar(&cfg.PageTokens, "page-tokens", cfg.PageTokens, "`TOKENS` per KV page and prefix-cache block")
	fs.Int64Var(&cfg.KVBytesPerToken, "kv-bytes-per-token", cfg.KVBytesPerToken, "simulated KV `BYTES` of one token")
	fs.Int64Var(&cfg.KVBudgetBytes, "kv-budget", cfg.KVBudgetBytes, "KV cache budget in `BYTES`")
	fs.Int64Var(&cfg.PrefixCacheBytes, "prefix-cache-bytes", cfg.PrefixCacheBytes, "prefix cache budget in `BYTES` (0 disables it)")
	fs.IntVar(&cfg.MaxContext, "max-context", cfg.MaxContext, "prompt + completion `TOKENS` per request")
	fs.Int64Var(&cfg.WeightsBytes, "weights-bytes", cfg.WeightsBytes, "simulated weights size in `BYTES`")
	loadMs := fs.Int64("load-ms", cfg.LoadTime.Milliseconds(), "simulated model load time in `MS` (/health answers 503 until then)")
	sampleMs := fs.Int64("sample-ms", cfg.SampleInterval.Milliseconds(), "scheduler/cache sample period while busy, in `MS`")
	if err := cliflag.Parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &UsageError{err}
	}
	if fs.NArg() > 0 {
		return &UsageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if *publishToken == "" {
		*publishToken = os.Getenv("MLX_METRICS_EVENTS_TOKEN")
		if *publishToken == "" {
			*publishToken = os.Getenv("MLX_METRICS_TOKEN") // a backend with only --token
		}
	}
	cfg.LoadTime = time.Duration(*loadMs) * time.Millisecond
	cfg.SampleInterval = time.Duration(*sampleMs) * time.Millisecond
	if err := cfg.Validate(); err != nil {
		return &UsageError{err}
	}
	if *port < 0 || *port > 65535 {
		return &UsageError{fmt.Errorf("port: %d is outside 0..65535", *port)}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("port %d is taken: another process listens on %s; pass another --port (0 picks a free one)", *port, *host)
	} else if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "reference engine (a simulator, not a model) serving %q on http://%s/v1\n", cfg.Model, ln.Addr())
	return Serve(ctx, cfg, ln, ServeOptions{PublishURL: *publish, PublishToken: *publishToken, Logger: slog.New(slog.NewTextHandler(stderr, nil))})
}

// ServeOptions configure Serve. The zero value is the defaults.
type ServeOptions struct {
	// PublishURL is the backend the engine's events are posted to; they
	// are posted nowhere when empty.
	PublishURL string
	// PublishToken is the bearer token for PublishURL.
	PublishToken string
	// Logger takes what Serve has to say (slog.Default() when nil).
	Logger *slog.Logger
}

// Serve runs an engine with cfg on ln until ctx ends, publishing its events
// as o says.
func Serve(ctx context.Context, cfg Config, ln net.Listener, o ServeOptions) error {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	var opts Options
	var pub *Publisher
	if o.PublishURL != "" {
		var err error
		if pub, err = NewPublisher(o.PublishURL, PublisherOptions{Token: o.PublishToken, Logger: o.Logger}); err != nil {
			ln.Close()
			return &UsageError{err}
		}
		opts.Sink = pub.Send
		o.Logger.Info("publishing events to "+pub.URL(), logkey.URL, pub.URL())
	}
	e, err := New(cfg, opts)
	if err != nil {
		ln.Close()
		return &UsageError{err}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pubDone := make(chan struct{})
	if pub != nil {
		go func() { pub.Run(ctx); close(pubDone) }()
	} else {
		close(pubDone)
	}
	engineDone := make(chan struct{})
	go func() { e.Run(ctx); close(engineDone) }()

	srv := &http.Server{Handler: e.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
		shut, stop := context.WithTimeout(context.Background(), 5*time.Second)
		defer stop()
		// Streams in flight end when the engine stops; Shutdown waits for them.
		cancel()
		err = srv.Shutdown(shut)
	}
	cancel()
	<-engineDone
	<-pubDone
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
