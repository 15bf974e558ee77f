// Package otlp pushes the live serving metrics to an OpenTelemetry
// Collector (or any OTLP receiver) over gRPC or HTTP/protobuf, for fleets
// that collect by push rather than by scraping Prometheus.
//
// What it pushes is what GET /api/metrics/prometheus serves: each push
// gathers the Prometheus exporter's registry and converts it with the
// OpenTelemetry Prometheus bridge, so the two cannot drift. Counters and
// histograms go out cumulative, which is also why a failed push is not
// retried: the next one carries everything it would have.
package otlp

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promBridge "go.opentelemetry.io/contrib/bridges/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/backend/internal/printable"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/logkey"
)

// The protocols of --otlp-protocol, named as OTEL_EXPORTER_OTLP_PROTOCOL
// names them.
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http/protobuf"
)

// Defaults and bounds.
const (
	DefaultInterval = 15 * time.Second
	MinInterval     = time.Second
	MaxInterval     = time.Hour
	// maxTimeout bounds one push, so a hung collector cannot hold the
	// next push or the shutdown.
	maxTimeout = 10 * time.Second
	// httpPath is the OTLP/HTTP metrics path, added to an endpoint URL
	// that has none (as the OpenTelemetry SDKs do with
	// OTEL_EXPORTER_OTLP_ENDPOINT).
	httpPath = "/v1/metrics"
)

// Options configure a Pusher.
type Options struct {
	// Endpoint is the receiver's URL: http://host:4317 (gRPC) or
	// http://host:4318 (HTTP, /v1/metrics added when there is no path).
	// http means plain text, https TLS.
	Endpoint string
	// Protocol is ProtocolGRPC or ProtocolHTTP.
	Protocol string
	// Interval is the time between pushes (DefaultInterval when 0).
	Interval time.Duration
	// Logf reports a receiver failing and answering again (one line per
	// change, not per push), at Warn and Info (slog.Default() when nil).
	Logger *slog.Logger
	// Clock stamps the last push (clock.Real{} when nil).
	Clock clock.Clock
}

// OptionError is a value of Options that Check refuses: Field names it
// ("endpoint", "protocol" or "interval") and Reason says why.
type OptionError struct {
	Field, Reason string
}

func (e *OptionError) Error() string { return "otlp " + e.Field + ": " + e.Reason }

// Check validates o, with the defaults filled in. A refused value is an
// *OptionError.
func (o Options) Check() (Options, error) {
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.Interval < MinInterval || o.Interval > MaxInterval {
		return o, &OptionError{"interval", fmt.Sprintf("%v, want from %v to %v", o.Interval, MinInterval, MaxInterval)}
	}
	if o.Protocol == "" {
		o.Protocol = ProtocolHTTP // the OpenTelemetry SDKs' default
	}
	if o.Protocol != ProtocolGRPC && o.Protocol != ProtocolHTTP {
		return o, &OptionError{"protocol", fmt.Sprintf("%q, want %s or %s", o.Protocol, ProtocolGRPC, ProtocolHTTP)}
	}
	u, err := url.Parse(o.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" {
		return o, &OptionError{"endpoint", "want an http(s)://host:port URL, without credentials, query or fragment"}
	}
	switch {
	case o.Protocol == ProtocolGRPC && u.Path != "" && u.Path != "/":
		return o, &OptionError{"endpoint", "a gRPC endpoint has no path"}
	case o.Protocol == ProtocolHTTP && (u.Path == "" || u.Path == "/"):
		u.Path = httpPath
		o.Endpoint = u.String()
	}
	o.Logger = logging.Or(o.Logger)
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return o, nil
}

// Pusher pushes a registry's metrics every interval until Shutdown.
type Pusher struct {
	opts     Options
	provider *sdkmetric.MeterProvider
	exp      *countingExporter
}

// Start begins pushing what g gathers. The first push is one interval
// after the start; Shutdown pushes a last time.
func Start(ctx context.Context, g prometheus.Gatherer, o Options) (*Pusher, error) {
	o, err := o.Check()
	if err != nil {
		return nil, err
	}
	timeout := min(o.Interval, maxTimeout)
	var exp sdkmetric.Exporter
	switch o.Protocol {
	case ProtocolGRPC:
		exp, err = otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpointURL(o.Endpoint),
			otlpmetricgrpc.WithTimeout(timeout), otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: false}))
	default:
		exp, err = otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(o.Endpoint),
			otlpmetrichttp.WithTimeout(timeout), otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}))
	}
	if err != nil {
		return nil, fmt.Errorf("otlp exporter: %w", err)
	}
	// service.name first, so OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// can override it; host.name tells a fleet's hosts apart, as the
	// instance label does in Prometheus.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "mlx-metrics")),
		resource.WithFromEnv(), resource.WithHost(), resource.WithTelemetrySDK())
	if err != nil && res == nil {
		return nil, fmt.Errorf("otlp resource: %w", err)
	}
	counting := &countingExporter{Exporter: exp, endpoint: o.Endpoint, log: o.Logger, clock: o.Clock}
	reader := sdkmetric.NewPeriodicReader(counting,
		sdkmetric.WithInterval(o.Interval), sdkmetric.WithTimeout(timeout),
		sdkmetric.WithProducer(semantic{promBridge.NewMetricProducer(promBridge.WithGatherer(g))}))
	return &Pusher{
		opts:     o,
		provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res)),
		exp:      counting,
	}, nil
}

// ForceFlush pushes now.
func (p *Pusher) ForceFlush(ctx context.Context) error { return p.provider.ForceFlush(ctx) }

// Shutdown pushes a last time and stops.
func (p *Pusher) Shutdown(ctx context.Context) error { return p.provider.Shutdown(ctx) }

// Stats is the pusher's /healthz section.
type Stats struct {
	Endpoint   string `json:"endpoint"`
	Protocol   string `json:"protocol"`
	IntervalMs int64  `json:"intervalMs"`
	Pushes     uint64 `json:"pushes"`
	Failures   uint64 `json:"failures"`
	LastError  string `json:"lastError,omitempty"`
	// LastPushAt is the last successful push, epoch ms; 0 before one.
	LastPushAt int64 `json:"lastPushAt"`
}

// Stats reads the pusher's counts.
func (p *Pusher) Stats() Stats {
	s := p.exp.stats()
	s.Endpoint, s.Protocol, s.IntervalMs = p.opts.Endpoint, p.opts.Protocol, p.opts.Interval.Milliseconds()
	return s
}

// countingExporter counts pushes and failures and logs changes of state.
// It reports a failure to the SDK as success: the SDK would log it each
// push, and cumulative data needs no retry.
type countingExporter struct {
	sdkmetric.Exporter
	endpoint string
	log      *slog.Logger
	clock    clock.Clock

	mu   sync.Mutex
	stat Stats
}

// maxErrorText bounds the error kept for /healthz: a receiver's answer
// may be quoted in it.
const maxErrorText = 512

func (e *countingExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	err := e.Exporter.Export(ctx, rm)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.stat.Failures++
		// It may quote the collector's answer: no escape sequence of it
		// reaches the log or the terminal showing it.
		msg := printable.Cut(err.Error(), maxErrorText)
		if msg != e.stat.LastError {
			e.log.Warn(fmt.Sprintf("otlp push to %s: %s (logged again when it changes)", e.endpoint, msg), logkey.URL, e.endpoint)
		}
		e.stat.LastError = msg
		return nil
	}
	if e.stat.LastError != "" {
		e.log.Info("otlp push to "+e.endpoint+": answering again", logkey.URL, e.endpoint)
	}
	e.stat.Pushes++
	e.stat.LastError = ""
	e.stat.LastPushAt = e.clock.Now().UnixMilli()
	return nil
}

func (e *countingExporter) stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stat
}
