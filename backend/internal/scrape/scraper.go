package scrape

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// maxBody bounds one scrape; real engines answer in tens of kilobytes.
const maxBody = 16 << 20

// pollTimeout bounds one scrape in Run, so a hung engine cannot stall it.
const pollTimeout = 10 * time.Second

// Scraper polls one target and publishes what it maps.
type Scraper struct {
	target  Target
	client  *http.Client
	publish func(events.Event)
	now     func() time.Time
	logf    func(format string, args ...any)

	mu      sync.Mutex
	mapper  *mapper
	lastErr string
}

// Option adjusts a Scraper.
type Option func(*Scraper)

// WithClock replaces time.Now, for tests.
func WithClock(now func() time.Time) Option { return func(s *Scraper) { s.now = now } }

// WithClient replaces the HTTP client.
func WithClient(c *http.Client) Option { return func(s *Scraper) { s.client = c } }

// WithLogf replaces log.Printf for reporting a target going down or up.
func WithLogf(f func(string, ...any)) Option { return func(s *Scraper) { s.logf = f } }

// New returns a scraper of t that hands each event to publish.
func New(t Target, publish func(events.Event), opts ...Option) *Scraper {
	s := &Scraper{
		target:  t,
		client:  &http.Client{},
		publish: publish,
		now:     time.Now,
		logf:    log.Printf,
		mapper:  newMapper(t.Kind, t.Model),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Poll scrapes once and publishes the events, returning how many.
func (s *Scraper) Poll(ctx context.Context) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.poll(ctx)
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		return n, err // stopped: that says nothing of the target
	}
	// Log changes of state only: a target down for an hour is one line.
	switch msg := errString(err); {
	case msg != "" && msg != s.lastErr:
		s.logf("scrape %s: %v", s.target.URL, err)
	case msg == "" && s.lastErr != "":
		s.logf("scrape %s: answering again", s.target.URL)
	}
	s.lastErr = errString(err)
	return n, err
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (s *Scraper) poll(ctx context.Context) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.target.URL, nil)
	if err != nil {
		return 0, err
	}
	// The classic text format: every one of these engines serves it.
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1")
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %s", resp.Status)
	}
	at := s.now()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return 0, fmt.Errorf("parsing metrics: %w", err)
	}
	evs := s.mapper.Map(fams, at)
	if len(evs) == 0 && s.mapper.kind == KindAuto {
		return 0, fmt.Errorf("no vllm:, sglang:, llamacpp: or mlx_ metrics found; give the kind as URL,kind")
	}
	for _, ev := range evs {
		s.publish(ev)
	}
	return len(evs), nil
}

// Run polls at every tick until ctx ends; the first poll is immediate.
// Errors are logged, never fatal: an engine restarting comes back.
func (s *Scraper) Run(ctx context.Context, tick <-chan time.Time) {
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, pollTimeout)
		_, _ = s.Poll(pctx)
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
	}
}

// RunAll scrapes every target each interval until ctx ends.
func RunAll(ctx context.Context, targets []Target, interval time.Duration, publish func(events.Event)) {
	var wg sync.WaitGroup
	for _, t := range targets {
		s := New(t, publish)
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk := time.NewTicker(interval)
			defer tk.Stop()
			s.Run(ctx, tk.C)
		}()
	}
	wg.Wait()
}
