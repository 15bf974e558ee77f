package scrape

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mlx-bun/mlx-metrics/backend/internal/health"
	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/backend/internal/redact"
	"github.com/mlx-bun/mlx-metrics/backend/internal/rejectlog"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/logkey"
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
	clock   clock.Clock
	log     *slog.Logger
	rejects *rejectlog.Log
	fails   *rejectlog.Log // the failed polls

	mu      sync.Mutex // one poll at a time
	mapper  *mapper
	lastErr string

	statsMu sync.Mutex // apart from mu: /healthz must not wait on a poll
	stats   Stats
}

// Stats is one target's reading, for /healthz: polls and failed polls, and
// the events they made, accepted (published) or rejected (outside the
// events' physical bounds, such as a counter past what an event may carry).
type Stats struct {
	URL           string `json:"url"`
	Kind          Kind   `json:"kind"` // "" until auto-detection decided
	Polls         uint64 `json:"polls"`
	Failures      uint64 `json:"failures"`
	Accepted      uint64 `json:"accepted"`
	Rejected      uint64 `json:"rejected"`
	LastError     string `json:"lastError,omitempty"`
	LastRejection string `json:"lastRejection,omitempty"`
	// LastPollAt is the last successful poll, epoch ms; 0 before one.
	LastPollAt int64 `json:"lastPollAt"`
}

// Options configure a Scraper. The zero value is the defaults.
type Options struct {
	// Clock stamps the events and the last poll (clock.Real{} when nil).
	Clock clock.Clock
	// Client makes the requests (a plain &http.Client{} when nil; each
	// poll of Run is bounded to 10 s by its context).
	Client *http.Client
	// Logf reports a target going down or coming back, and its rejected
	// events: the first at once, then a count at most once a minute
	// (slog.Default() when nil).
	Logger *slog.Logger
}

// New returns a scraper of t that hands each event to publish.
func New(t Target, publish func(events.Event), opts Options) *Scraper {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	opts.Logger = logging.Or(opts.Logger)
	return &Scraper{
		target:  t,
		client:  opts.Client,
		publish: publish,
		clock:   opts.Clock,
		log:     opts.Logger,
		rejects: rejectlog.New("scrape "+redact.URL(t.URL), rejectlog.Options{Clock: opts.Clock, Logger: opts.Logger}),
		fails:   rejectlog.New("scrape "+redact.URL(t.URL), rejectlog.Options{Clock: opts.Clock, Logger: opts.Logger, Words: failWords}),
		mapper:  newMapper(t.Kind, t.Model),
		stats:   Stats{URL: redact.URL(t.URL), Kind: t.Kind},
	}
}

// Stats reads the target's counts.
func (s *Scraper) Stats() Stats {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	return s.stats
}

// Poll scrapes once and publishes the events, returning how many.
func (s *Scraper) Poll(ctx context.Context) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.poll(ctx)
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		return n, err // stopped: that says nothing of the target
	}
	// The first failure at once, then a count a minute: a target down for
	// an hour, or one that answers nothing its kind knows, is a few lines.
	switch {
	case err != nil:
		s.fails.Reject(err.Error())
	case s.lastErr != "":
		s.fails.Reset()
		s.log.Info("scrape "+s.stats.URL+": answering again", logkey.URL, s.stats.URL) // without its secrets
	}
	s.lastErr = errString(err)
	s.statsMu.Lock()
	s.stats.Polls++
	s.stats.Kind = s.mapper.kind
	if err != nil {
		s.stats.Failures++
		s.stats.LastError = redact.URLError(err) // the URL is Stats.URL, shown without its secrets
	} else {
		s.stats.LastError = ""
		s.stats.LastPollAt = s.clock.Now().UnixMilli()
	}
	s.statsMu.Unlock()
	return n, err
}

// someNames lists the first few family names, sorted, for a message.
func someNames(fams map[string]*dto.MetricFamily) string {
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	const shown = 3
	if len(names) > shown {
		return strings.Join(names[:shown], ", ") + ", …"
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// failWords word the log of failed polls.
var failWords = rejectlog.Words{First: "cannot read the target", Further: "failed polls",
	One: "more failed poll", Many: "more failed polls"}

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
	at := s.clock.Now()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return 0, fmt.Errorf("parsing metrics: %w", err)
	}
	evs := s.mapper.Map(fams, at)
	// Every model a dialect recognises gives a scheduler sample at each
	// poll: none is an exposition the kind does not read, not a quiet
	// engine, and is said as a failure rather than read as nothing.
	switch {
	case len(evs) == 0 && s.mapper.kind == KindAuto:
		return 0, fmt.Errorf("none of its %d metric families (%s) is one vLLM, SGLang (sglang: or sglang_), llama.cpp or mlx-metrics exposes with a model",
			len(fams), someNames(fams))
	case len(evs) == 0:
		err := fmt.Sprintf("none of its %d metric families is one a %s engine exposes", len(fams), s.mapper.kind)
		if k := detect(fams, s.target.Model); k != KindAuto {
			return 0, fmt.Errorf("%s: it reads as %s (give the kind %s, or auto)", err, k, k)
		}
		return 0, fmt.Errorf("%s: check the kind, or give auto", err)
	}
	n := 0
	for _, ev := range evs {
		// An engine's counters and gauges are input like any other.
		if err := events.Check(ev); err != nil {
			why := string(ev.Type) + ": " + err.Error()
			s.statsMu.Lock()
			s.stats.Rejected++
			s.stats.LastRejection = why
			s.statsMu.Unlock()
			s.rejects.Reject(why)
			continue
		}
		s.publish(ev)
		n++
	}
	s.statsMu.Lock()
	s.stats.Accepted += uint64(n)
	s.statsMu.Unlock()
	return n, nil
}

// Run polls at every tick until ctx ends; the first poll is immediate.
// Errors are logged, never fatal: an engine restarting comes back. When it
// returns it logs the count of rejections not logged yet.
func (s *Scraper) Run(ctx context.Context, tick <-chan time.Time) {
	defer s.rejects.Flush()
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

// Group is the scrapers of the --scrape targets.
type Group struct {
	scrapers []*Scraper
}

// NewGroup returns a scraper for each target, all publishing to publish
// and sharing opts.
func NewGroup(targets []Target, publish func(events.Event), opts Options) *Group {
	g := &Group{}
	for _, t := range targets {
		g.scrapers = append(g.scrapers, New(t, publish, opts))
	}
	return g
}

// Run scrapes every target each interval until ctx ends.
func (g *Group) Run(ctx context.Context, interval time.Duration) {
	var wg sync.WaitGroup
	for _, s := range g.scrapers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk := s.clock.NewTicker(interval)
			defer tk.Stop()
			s.Run(ctx, tk.C())
		}()
	}
	wg.Wait()
}

// Stats is every target's reading, in the order given.
func (g *Group) Stats() GroupStats {
	out := make(GroupStats, len(g.scrapers))
	for i, s := range g.scrapers {
		out[i] = s.Stats()
	}
	return out
}

// GroupStats is the /healthz section of the scrape targets: a list, as
// before, and "degraded" for the report while a target's last poll failed
// (it does not answer, or answers nothing its kind reads).
type GroupStats []Stats

// Status is health.StatusDegraded while a target's last poll failed.
func (g GroupStats) Status() string {
	for _, s := range g {
		if s.LastError != "" {
			return health.StatusDegraded
		}
	}
	return "ok"
}
