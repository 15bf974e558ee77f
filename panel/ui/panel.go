// Package ui holds the panel's go-app components: the root Panel (the
// connection, its state and the tabs) and one view per subject.
package ui

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/api"
	"github.com/mlx-bun/mlx-metrics/panel/charts"
	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/routes"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// Connection is the element's `connection` property: where the API and the
// snapshot stream are. The loader resolves both against the host page.
type Connection struct {
	APIBase   string `json:"apiBase"`
	EventsURL string `json:"eventsUrl"`
	// Token is the bearer token the backend's --token asks of changes
	// (starting and cancelling runs); empty when it asks none.
	Token string `json:"token,omitempty"`
}

// DefaultConnection is the backend's own API, for a frame opened directly.
var DefaultConnection = Connection{APIBase: routes.Prefix, EventsURL: routes.Stream}

// Connection states.
const (
	StateWaiting     = "waiting"     // connecting, no snapshot yet
	StateLive        = "live"        // snapshots arriving
	StateInterrupted = "interrupted" // the stream failed; a retry is scheduled
	StateRetrying    = "retrying"    // reconnecting after an interruption
	StatePaused      = "paused"      // the page is hidden: no stream until it shows
	// StateUnreached is shown, not held: live, but the backend does not
	// reach the event source it follows (snapshot.Source).
	StateUnreached = "unreached"
)

// Tabs, in order.
var Tabs = []struct{ Key, Label string }{
	{"serving", "Serving"},
	{"models", "Models"},
	{"caches", "Caches"},
	{"requests", "Requests"},
	{"bench", "Benchmarks"},
}

// Retry backoff after an interruption: doubling from the first, capped,
// then spread by jitter (backoff), so that the tabs open on a restarted
// backend do not all reconnect at the same instants.
const (
	firstRetry = 500 * time.Millisecond
	maxRetry   = 5 * time.Second
)

// Panel is the root component.
type Panel struct {
	app.Compo

	conn     Connection
	snap     *snapshot.Snapshot
	windows  *Windows // snap's per-model windows, from a stream frame (decodeFrame)
	state    string
	since    time.Time
	failures int
	retryIn  time.Duration
	jitter   func() float64 // the backoff's spread, 0..1; nil: rand.Float64
	lastErr  string
	tab      string
	palette  charts.Palette
	dark     bool
	// lostAt is when the stream was lost, kept through the retries that
	// follow until a snapshot arrives again.
	lostAt time.Time
	lease  *bench.Lease
	// benchRuns are when the backend's listed jobs held the GPU.
	benchRuns []charts.Span
	// fleet is true when the backend serves a fleet view (--fleet): the
	// Fleet tab shows then.
	fleet bool

	s   *stream
	gen int // connection generation; stale callbacks compare it
	// hidden is true while the page is hidden: the stream is closed then
	// (see watchVisibility).
	hidden   bool
	unlisten []func()
}

// NewPanel is the panel on conn, showing tab (the first when empty).
func NewPanel(conn Connection, tab string) *Panel {
	if tab == "" {
		tab = Tabs[0].Key
	}
	return &Panel{conn: conn, tab: tab, state: StateWaiting, palette: charts.Light}
}

func (p *Panel) OnMount(ctx app.Context) {
	if !app.IsClient {
		return
	}
	w := app.Window()
	given, ok := readConnection(w.Get("mlxMetricsConnection"))
	embedded := w.Get("document").Get("documentElement").Get("classList").Call("contains", "embedded").Bool()
	switch {
	case ok:
		p.conn = given
	case p.conn.APIBase == "":
		p.conn = DefaultConnection
	}
	p.readTheme()
	// frame.js turns the host's messages into these window events.
	p.listen(ctx, "mlx-metrics-connection", func(ctx app.Context, detail app.Value) {
		if c, ok := readConnection(detail); ok && p.SetConnection(c) {
			if p.hidden {
				p.pause()
			} else {
				p.connect(ctx)
			}
		}
	})
	p.listen(ctx, "mlx-metrics-theme", func(ctx app.Context, detail app.Value) { p.readTheme() })
	p.unlisten = append(p.unlisten, watchVisibility(ctx, p.setHidden))
	p.hidden = pageHidden()
	if embedded && !ok {
		// The element sends the connection right after the frame's ready;
		// wait for it rather than open a stream to replace at once, but not
		// forever: an element that never answers gets the default.
		ctx.After(connectionWait, func(ctx app.Context) {
			if p.s == nil && !p.hidden {
				p.connect(ctx)
			}
		})
	} else if p.hidden {
		p.pause()
	} else {
		p.connect(ctx)
	}
	p.pollLease(ctx)
	p.probeFleet(ctx)
}

// probeFleet asks the backend whether it serves a fleet view, once.
func (p *Panel) probeFleet(ctx app.Context) {
	c := &api.Client{Base: p.conn.APIBase, Token: p.conn.Token}
	ctx.Async(func() {
		cctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		v, err := c.Fleet(cctx, "")
		// A fleet view that fails (502, 504) is one all the same: its tab
		// says why.
		var ae *api.Error
		failing := errors.As(err, &ae) && (ae.Status == 502 || ae.Status == 504)
		ctx.Dispatch(func(ctx app.Context) { p.fleet = err == nil && v.Enabled || failing })
	})
}

// tabs are the views offered: Tabs, and Fleet where the backend has one.
func (p *Panel) tabs() []struct{ Key, Label string } {
	if !p.fleet {
		return Tabs
	}
	return append(append([]struct{ Key, Label string }{}, Tabs...), struct{ Key, Label string }{"fleet", "Fleet"})
}

// leasePoll is how often the panel reads the GPU lease, to show a bench
// run holding the GPU beside the serving figures.
const leasePoll = 5 * time.Second

func (p *Panel) pollLease(ctx app.Context) {
	c := &api.Client{Base: p.conn.APIBase, Token: p.conn.Token}
	ctx.Async(func() {
		cctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		l, err := c.Jobs(cctx)
		ctx.Dispatch(func(ctx app.Context) {
			if err == nil {
				p.lease, p.benchRuns = &l.Lease, benchRuns(l.Jobs)
			} else {
				p.lease = nil // unknown: show nothing rather than a stale claim
			}
			ctx.After(leasePoll, p.pollLease)
		})
	})
}

// benchRuns are when jobs held the GPU: from the runner's start to the
// job's end (open while it runs). Queued jobs never held it.
func benchRuns(jobs []bench.Job) []charts.Span {
	var out []charts.Span
	for _, j := range jobs {
		if j.StartedAt > 0 {
			out = append(out, charts.Span{From: j.StartedAt, To: j.FinishedAt})
		}
	}
	return out
}

// connectionWait bounds how long an embedded frame waits for the element's
// connection before using the backend's own.
const connectionWait = 2 * time.Second

func (p *Panel) OnDismount() {
	p.gen++
	p.s.close()
	for _, f := range p.unlisten {
		f()
	}
}

// listen handles a window event on the UI goroutine.
func (p *Panel) listen(ctx app.Context, event string, h func(app.Context, app.Value)) {
	w := app.Window()
	f := app.FuncOf(func(this app.Value, args []app.Value) any {
		var detail app.Value
		if len(args) > 0 {
			detail = args[0].Get("detail")
		}
		ctx.Dispatch(func(ctx app.Context) { h(ctx, detail) })
		return nil
	})
	w.Call("addEventListener", event, f)
	p.unlisten = append(p.unlisten, func() {
		w.Call("removeEventListener", event, f)
		f.Release()
	})
}

func readConnection(v app.Value) (Connection, bool) {
	if v == nil || !v.Truthy() {
		return Connection{}, false
	}
	c := Connection{APIBase: v.Get("apiBase").String(), EventsURL: v.Get("eventsUrl").String()}
	if t := v.Get("token"); t.Truthy() {
		c.Token = t.String()
	}
	if c.APIBase == "" {
		return Connection{}, false
	}
	if c.EventsURL == "" {
		c.EventsURL = strings.TrimRight(c.APIBase, "/") + "/stream"
	}
	return c, true
}

// readTheme takes the chart palette from the frame's resolved theme and CSS
// custom properties, so charts follow the host's theming too.
func (p *Panel) readTheme() {
	doc := app.Window().Get("document").Get("documentElement")
	p.dark = doc.Get("dataset").Get("theme").String() == "dark"
	pal := charts.Light
	if p.dark {
		pal = charts.Dark
	}
	style := app.Window().Call("getComputedStyle", doc)
	if v := strings.TrimSpace(style.Call("getPropertyValue", "--mm-fg").String()); v != "" {
		pal.Text = v
	}
	if v := strings.TrimSpace(style.Call("getPropertyValue", "--mm-border").String()); v != "" {
		pal.Muted = v
	}
	p.palette = pal
}

// connect (re)opens the stream; callbacks of an older connection are
// ignored through gen.
func (p *Panel) connect(ctx app.Context) {
	p.s.close()
	p.gen++
	gen := p.gen
	if p.state != StateRetrying {
		p.state = StateWaiting
		p.since = time.Now()
	}
	p.s = openStream(p.conn.EventsURL, "snapshot",
		func(data string) {
			s, windows, err := decodeFrame([]byte(data))
			ctx.Dispatch(func(ctx app.Context) {
				if gen != p.gen {
					return
				}
				if err != nil {
					p.lastErr = "bad snapshot: " + err.Error()
					return
				}
				p.Apply(s, time.Now())
				p.windows = windows
			})
		},
		func() {
			ctx.Dispatch(func(ctx app.Context) {
				if gen != p.gen {
					return
				}
				p.interrupted(ctx, time.Now())
			})
		},
	)
}

// setHidden closes the stream when the page is hidden and opens it again
// when it shows; the figures stay on screen meanwhile, marked paused.
func (p *Panel) setHidden(ctx app.Context, hidden bool) {
	if hidden == p.hidden {
		return
	}
	p.hidden = hidden
	if hidden {
		p.pause()
		return
	}
	p.failures = 0
	p.connect(ctx)
}

// pause closes the stream (a scheduled retry then does nothing).
func (p *Panel) pause() {
	p.s.close()
	p.s = nil
	p.gen++
	p.state, p.since = StatePaused, time.Now()
}

// SetConnection switches to c, when it differs from the connection in use,
// and forgets the old one's figures and state: its snapshot, failures,
// error and the time its stream was lost. It reports whether it switched;
// the caller then connects.
func (p *Panel) SetConnection(c Connection) bool {
	if c == p.conn {
		return false
	}
	p.conn, p.snap, p.state = c, nil, StateWaiting
	p.failures, p.lastErr, p.lostAt = 0, "", time.Time{}
	return true
}

// Apply shows a snapshot and marks the stream live.
func (p *Panel) Apply(s *snapshot.Snapshot, now time.Time) {
	p.snap, p.windows = s, nil
	if p.state != StateLive {
		p.state, p.since = StateLive, now
	}
	p.failures, p.lastErr, p.lostAt = 0, "", time.Time{}
}

// Interrupt records the stream's failure at now: the time of the loss is
// kept through the retries that follow, and the URL is named.
func (p *Panel) Interrupt(now time.Time) {
	if p.lostAt.IsZero() {
		p.lostAt = now
	}
	p.state, p.since = StateInterrupted, now
	jitter := rand.Float64
	if p.jitter != nil {
		jitter = p.jitter
	}
	p.retryIn = backoff(p.failures, jitter())
	p.failures++
	p.lastErr = "stream lost at " + format.Clock(p.lostAt.UnixMilli()) + ": cannot reach " + p.conn.EventsURL
}

// Stale reports whether the figures shown are no longer live.
func (p *Panel) Stale() bool { return p.snap != nil && p.state != StateLive }

// interrupted closes the failed stream and schedules a retry.
func (p *Panel) interrupted(ctx app.Context, now time.Time) {
	p.s.close()
	p.Interrupt(now)
	ctx.After(p.retryIn, func(ctx app.Context) {
		if p.retry() {
			p.connect(ctx)
		}
	})
}

// retry marks the stream retrying when its retry is due, and reports
// whether it is: not when it reconnected, or was paused, meanwhile.
func (p *Panel) retry() bool {
	if p.state != StateInterrupted {
		return false
	}
	p.state = StateRetrying
	return true
}

// backoff is the wait before retry number failures+1: half the doubled
// (and capped) wait, plus jitter (0..1) of the other half ("equal jitter").
func backoff(failures int, jitter float64) time.Duration {
	d := min(firstRetry<<min(failures, 10), maxRetry)
	return d/2 + time.Duration(jitter*float64(d/2))
}

// SetTab switches the view.
func (p *Panel) SetTab(tab string) { p.tab = tab }

func (p *Panel) Render() app.UI {
	return app.Div().ID("panel").Class("panel").DataSet("state", p.state).Body(
		app.Header().Class("head").Body(
			app.H1().Text("Metrics"),
			p.renderState(),
			app.Nav().Class("tabs").Aria("label", "views").Body(app.Range(p.tabs()).Slice(func(i int) app.UI {
				t := p.tabs()[i]
				return app.Button().Class("tab").DataSet("tab", t.Key).
					Aria("selected", fmt.Sprint(t.Key == p.tab)).Attr("role", "tab").
					Text(t.Label).
					OnClick(func(ctx app.Context, e app.Event) { p.tab = t.Key }, app.EventScope(t.Key))
			})),
		),
		// The view keeps its place whether the stale note shows or not, so
		// going stale does not mount it afresh (the Benchmarks view would
		// lose what it had read).
		app.Main().Class(p.bodyClass()).Body(
			app.Div().Class("note-slot").Body(staleNote(p.Stale(), p.snap)),
			p.renderView(),
		),
	)
}

func (p *Panel) bodyClass() string {
	if p.Stale() && p.tab != "bench" && p.tab != "fleet" {
		return "body stale"
	}
	return "body"
}

func (p *Panel) renderState() app.UI {
	label := map[string]string{
		StateWaiting:     "waiting for data",
		StateLive:        "live",
		StateInterrupted: "interrupted",
		StateRetrying:    "retrying",
		StatePaused:      "paused",
	}[p.state]
	detail := ""
	switch p.state {
	case StateInterrupted:
		detail = fmt.Sprintf("%s; retrying in %s (attempt %d)", p.lastErr, format.Duration(p.retryIn), p.failures)
	case StateRetrying:
		detail = fmt.Sprintf("%s; reconnecting (attempt %d)", p.lastErr, p.failures)
	case StateLive:
		if p.snap != nil {
			detail = "updated " + format.Clock(p.snap.At)
		}
		// A frame that failed to decode leaves the last good snapshot up;
		// say so rather than look live and current.
		if p.lastErr != "" {
			detail = strings.TrimPrefix(detail+"; "+p.lastErr, "; ")
		}
	case StateWaiting:
		detail = p.lastErr
	case StatePaused:
		detail = "while the page is hidden"
	}
	shown := p.state
	if src := unreached(p.snap); p.state == StateLive && src != nil {
		// The stream is live but carries nothing from the host: not "live".
		shown, label, detail = StateUnreached, "source not reached", unreachedDetail(src)
	}
	return app.Div().Class("conn").ID("conn").DataSet("state", shown).Attr("role", "status").Body(
		app.Span().Class("dot"),
		app.Span().Class("conn-label").Text(label),
		app.If(detail != "", func() app.UI { return app.Span().Class("conn-detail").Text(detail) }),
	)
}

func (p *Panel) renderView() app.UI {
	switch p.tab {
	case "models":
		return &ModelsView{Snap: p.snap, Palette: p.palette}
	case "caches":
		return &CachesView{Snap: p.snap, Palette: p.palette}
	case "requests":
		return &RequestsView{Snap: p.snap, Windows: p.windows}
	case "bench":
		return &BenchView{API: p.conn.APIBase, Token: p.conn.Token, Palette: p.palette, Poll: time.Second}
	case "fleet":
		return &FleetView{API: p.conn.APIBase, Token: p.conn.Token, Poll: FleetPoll}
	default:
		return &ServingView{Snap: p.snap, Windows: p.windows, Palette: p.palette, Lease: p.lease, BenchRuns: p.benchRuns}
	}
}
