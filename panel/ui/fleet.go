package ui

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/api"
	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/fleet"
)

// FleetPoll is how often the Fleet view reads the fleet while it is open:
// each read is 16 queries on the fleet's query API (docs/fleet.md).
const FleetPoll = 15 * time.Second

// fleetRanges are the ranges the view offers, as the backend names them.
var fleetRanges = []struct{ Key, Label string }{{"15m", "15 min"}, {"1h", "1 h"}, {"6h", "6 h"}, {"24h", "24 h"}}

// FleetView shows every host the backend's fleet query API sees, reporting
// or not, and each host's figures by model over a range. It reads GET
// /fleet itself; a failed read is said, as what it is, and the last
// figures stay on screen, greyed, as the live tabs do when their stream is
// lost. The other views are not touched by it.
type FleetView struct {
	app.Compo

	API   string
	Token string
	// Poll is how often it reads while open (FleetPoll); zero reads on
	// mount and when the range changes only (tests).
	Poll time.Duration

	rng         string
	view        *fleet.View
	err         string
	fetchedFrom string
	gen         int
}

func (v *FleetView) OnMount(ctx app.Context) {
	if v.rng == "" {
		v.rng = fleetRanges[0].Key
	}
	v.fetch(ctx, true)
}

func (v *FleetView) OnUpdate(ctx app.Context) {
	if v.API != v.fetchedFrom {
		v.view, v.err = nil, ""
		v.fetch(ctx, true)
	}
}

// fetch reads the fleet; chain keeps reading every Poll. A read of an
// older range or connection (gen) is dropped when it answers.
func (v *FleetView) fetch(ctx app.Context, chain bool) {
	v.gen++
	gen, base, rng := v.gen, v.API, v.rng
	v.fetchedFrom = base
	c := &api.Client{Base: base, Token: v.Token}
	ctx.Async(func() {
		cctx, cancel := context.WithTimeout(context.Background(), requestTimeout+5*time.Second)
		defer cancel()
		f, err := c.Fleet(cctx, rng)
		ctx.Dispatch(func(ctx app.Context) {
			if gen != v.gen {
				return
			}
			v.apply(f, err)
			if chain && v.Poll > 0 {
				ctx.After(v.Poll, func(ctx app.Context) {
					if gen == v.gen {
						v.fetch(ctx, true)
					}
				})
			}
		})
	})
}

// apply shows a read's answer: the view, or, for a failure, why, with the
// last view kept to show greyed.
func (v *FleetView) apply(f fleet.View, err error) {
	var ae *api.Error
	switch {
	case errors.As(err, &ae):
		v.err = ae.Message // the backend's word: which fault, from where
	case err != nil:
		v.err = errText(err)
	default:
		v.view, v.err = &f, ""
	}
}

func (v *FleetView) Render() app.UI {
	stale := v.err != "" && v.view != nil
	class := "view fleet"
	if stale {
		class += " stale"
	}
	return app.Div().Class(class).ID("view-fleet").Body(
		app.Div().Class("fleet-bar").Body(
			app.Div().Class("ranges").Attr("role", "group").Aria("label", "range").Body(app.Range(fleetRanges).Slice(func(i int) app.UI {
				r := fleetRanges[i]
				return app.Button().Class("range").DataSet("range", r.Key).Aria("pressed", fmt.Sprint(r.Key == v.rng)).Text(r.Label).
					OnClick(func(ctx app.Context, e app.Event) {
						if v.rng != r.Key {
							v.rng = r.Key
							v.fetch(ctx, true)
						}
					}, app.EventScope(r.Key))
			})),
			v.renderStatus(),
		),
		v.renderBody(),
	)
}

func (v *FleetView) renderStatus() app.UI {
	switch {
	case v.err != "" && v.view != nil:
		return app.P().Class("fleet-status error").DataSet("fault", "true").Text(
			"Cannot read the fleet: " + v.err + ". The figures below are as of " + format.Clock(v.view.At) + ".")
	case v.err != "":
		return app.P().Class("fleet-status error").DataSet("fault", "true").Text("Cannot read the fleet: " + v.err)
	case v.view == nil:
		return app.P().Class("fleet-status").Text("Reading the fleet…")
	}
	s := fmt.Sprintf("From %s, hosts by %s; updated %s.", v.view.Source, v.view.HostLabel, format.Clock(v.view.At))
	if v.view.Partial {
		s += " Partial answer: " + strings.Join(v.view.Warnings, "; ")
	}
	return app.P().Class("fleet-status").DataSet("partial", fmt.Sprint(v.view.Partial)).Text(s)
}

func (v *FleetView) renderBody() app.UI {
	if v.view == nil {
		return nil
	}
	f := v.view
	if len(f.Hosts) == 0 {
		return section("Hosts", empty("The query API has seen no mlx-metrics backend over this range: is it scraping them?"))
	}
	hosts := append([]fleet.Host(nil), f.Hosts...)
	sort.SliceStable(hosts, func(i, j int) bool { return hosts[i].Reporting && !hosts[j].Reporting })
	return app.Div().Class("fleet-body").Body(
		section("Hosts", app.Ul().Class("hosts").Body(app.Range(hosts).Slice(func(i int) app.UI {
			h := hosts[i]
			state := "reporting"
			if !h.Reporting {
				state = "not reporting"
			}
			return app.Li().Class("host").DataSet("host", h.Host).DataSet("reporting", fmt.Sprint(h.Reporting)).Body(
				app.Span().Class("dot"),
				app.Span().Class("host-name").Text(h.Host),
				app.Span().Class("host-state").Text(state),
			)
		}))),
		section("By host and model", app.Div().Class("table-wrap").Body(app.Table().Class("table fleet-table").Body(
			app.THead().Body(app.Tr().Body(
				app.Th().Text("host"), app.Th().Text("model"), thNum("tok/s"), thNum("req/s"),
				thNum("TTFT p50 / p95 / p99"), thNum("TPOT p50 / p95 / p99"), thNum("end-to-end p50 / p95 / p99"),
				thNum("KV use"), thNum("queued"), thNum("errors"),
			)),
			app.TBody().Body(
				app.Range(f.Rows).Slice(func(i int) app.UI { return fleetRow(f.Rows[i], f.Hosts) }),
				app.If(f.Others != nil, func() app.UI {
					o := *f.Others
					o.Host, o.Model = fmt.Sprintf("others (%d)", o.Rows), ""
					return fleetRow(o, nil)
				}),
			),
		))),
		app.Details().Class("queries").Body(
			app.Summary().Text(fmt.Sprintf("The %d queries of each refresh", len(f.Queries))),
			app.Ul().Body(app.Range(sortedKeys(f.Queries)).Slice(func(i int) app.UI {
				k := sortedKeys(f.Queries)[i]
				return app.Li().Body(app.Span().Class("query-name").Text(k), app.Code().Text(f.Queries[k]))
			})),
		),
	)
}

func fleetRow(r fleet.Row, hosts []fleet.Host) app.UI {
	reporting := true
	for _, h := range hosts {
		if h.Host == r.Host {
			reporting = h.Reporting
		}
	}
	q := func(x fleet.Quantiles) string {
		return secs(x.P50) + " / " + secs(x.P95) + " / " + secs(x.P99)
	}
	kv := "–"
	if r.KVUsage != nil {
		kv = format.Percent(*r.KVUsage)
	}
	return app.Tr().DataSet("host", r.Host).DataSet("reporting", fmt.Sprint(reporting)).Body(
		app.Td().Text(r.Host), app.Td().Body(modelName(r.Model)),
		tdNum(num(r.TokensPerSecond, 1)), tdNum(num(r.RequestsPerSecond, 2)),
		tdNum(q(r.TTFT)), tdNum(q(r.TPOT)), tdNum(q(r.E2E)),
		tdNum(kv), tdNum(num(r.QueueDepth, 0)), tdNum(num(r.Errors, 0)),
	)
}

// secs is a time in seconds as the panel writes times; "–" when null.
func secs(v *float64) string {
	if v == nil {
		return "–"
	}
	return format.Ms(*v * 1000)
}

func num(v *float64, digits int) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.*f", digits, *v)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
