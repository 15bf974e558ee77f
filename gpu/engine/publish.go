package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/logkey"
	"github.com/mlx-bun/mlx-metrics/shared/routes"
)

// Publisher POSTs events as NDJSON to a backend's /api/metrics/events. It
// batches (every FlushInterval or MaxBatch events) and never blocks the
// engine: when the backend is slow or down, events beyond the buffer are
// dropped and counted, as a metrics producer should.
type Publisher struct {
	url      string
	token    string
	client   *http.Client
	ch       chan events.Event
	dropped  atomic.Int64
	failures atomic.Int64
	log      *slog.Logger
}

// EventsPath is where a backend takes events.
const EventsPath = routes.Events

// Publisher tuning.
const (
	publishBuffer = 8192
	maxBatch      = 512
	flushInterval = 250 * time.Millisecond
)

// PublisherOptions configure a Publisher. The zero value is the defaults.
type PublisherOptions struct {
	// Token, when set, is sent as a bearer token (the backend's
	// --events-token or --token); none when empty.
	Token string
	// Logger reports failed posts, the first of a streak at Warn, and
	// the backend answering again at Info (slog.Default() when nil).
	Logger *slog.Logger
}

// NewPublisher checks target: a backend's base URL (http://host:port) or the
// full events URL.
func NewPublisher(target string, opts PublisherOptions) (*Publisher, error) {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("publish: %q is not an http(s) URL", target)
	}
	if p := strings.TrimRight(u.Path, "/"); p == "" {
		u.Path = EventsPath
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Publisher{
		url:    u.String(),
		token:  opts.Token,
		client: &http.Client{Timeout: 10 * time.Second},
		ch:     make(chan events.Event, publishBuffer),
		log:    opts.Logger,
	}, nil
}

// URL is where events go.
func (p *Publisher) URL() string { return p.url }

// Send queues ev; it is an engine sink.
func (p *Publisher) Send(ev events.Event) {
	select {
	case p.ch <- ev:
	default:
		p.dropped.Add(1)
	}
}

// Dropped counts events lost to a full buffer or a failed POST.
func (p *Publisher) Dropped() int64 { return p.dropped.Load() }

// Run posts batches until ctx ends, then flushes what is queued.
func (p *Publisher) Run(ctx context.Context) {
	tick := time.NewTicker(flushInterval)
	defer tick.Stop()
	var batch []events.Event
	post := func() {
		if len(batch) == 0 {
			return
		}
		if err := p.post(batch); err != nil {
			p.dropped.Add(int64(len(batch)))
			// Log the first failure of a streak, not every one.
			if p.failures.Add(1) == 1 {
				p.log.Warn("engine: publishing events to "+p.url+" failed (dropping them until it works)", logkey.URL, p.url, logkey.Err, err)
			}
		} else if p.failures.Swap(0) > 0 {
			p.log.Info("engine: publishing events to "+p.url+" works again", logkey.URL, p.url)
		}
		batch = batch[:0]
	}
	for {
		select {
		case ev := <-p.ch:
			batch = append(batch, ev)
			if len(batch) >= maxBatch {
				post()
			}
		case <-tick.C:
			post()
		case <-ctx.Done():
			for {
				select {
				case ev := <-p.ch:
					batch = append(batch, ev)
				default:
					post()
					return
				}
			}
		}
	}
}

func (p *Publisher) post(batch []events.Event) error {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	for _, ev := range batch {
		if err := enc.Encode(ev); err != nil {
			return err
		}
	}
	req, err := http.NewRequest(http.MethodPost, p.url, &body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}
