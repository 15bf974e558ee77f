package main

// -sequential: single requests, one at a time, the form the LLM gateways
// publish their overhead in (a gateway's median added latency over
// sequential requests to a mock upstream). Request i of a round goes to
// every side in turn, starting from side i mod the number of sides, so no
// side always follows the same one and drift in the machine's load falls
// on all of them alike.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"
)

func runSequential(ctx context.Context, cfg config, sides []*side, body []byte) error {
	results := map[string][]phase{}
	for r := range cfg.rounds {
		ps := make([]phase, len(sides))
		cpu0 := make([]time.Duration, len(sides))
		for j, s := range sides {
			if s.proxy != nil {
				cpu0[j] = cpuTime(s.proxy.pid)
			}
		}
		start := time.Now()
		for i := range cfg.sequential {
			for k := range sides {
				j := (i + k) % len(sides)
				if ctx.Err() != nil {
					return fmt.Errorf("timed out in round %d: %w", r+1, ctx.Err())
				}
				res, err := stream(ctx, sides[j], body)
				if err != nil {
					return fmt.Errorf("round %d, request %d, %s: %w%s", r+1, i+1, sides[j].name, err, sides[j].logTail())
				}
				ps[j].add(res, nil)
			}
		}
		wall := time.Since(start)
		for j, s := range sides {
			ps[j].wall = wall
			if s.proxy != nil {
				ps[j].proxyCPU = cpuTime(s.proxy.pid) - cpu0[j]
			}
			results[s.name] = append(results[s.name], ps[j])
		}
		fmt.Fprintf(os.Stderr, "bench-proxy: round %d of %d done\n", r+1, cfg.rounds)
	}
	reportSequential(cfg, sides, results)
	return nil
}

// reportSequential prints each side's latency to the first token and to
// the end of the stream, and what it adds to direct's: the difference of
// the medians (and of the p99s) over every request of the run, with the
// rounds' range of the median's.
func reportSequential(cfg config, sides []*side, results map[string][]phase) {
	d := results["direct"]
	dAll := pool(d)
	fmt.Println()
	fmt.Printf("Sequential requests, one at a time (%d per side per round, %d rounds), %d tokens each; added = the side's minus direct's:\n", cfg.sequential, cfg.rounds, cfg.tokens)
	fmt.Println()
	fmt.Println("side    | TTFT p50/p99 ms   | added TTFT median ms (rounds min..max) | added TTFT p99 | hops' share added median | total p50/p99 ms  | added total median ms (rounds min..max) | added total p99 | CPU ms per 1000 events")
	fmt.Println("--------|-------------------|----------------------------------------|----------------|--------------------------|-------------------|-----------------------------------------|-----------------|-----------------------")
	fmt.Printf("%-7s | %7.2f / %-7.2f | %-38s | %-14s | %-24s | %7.2f / %-7.2f | %-39s | %-15s | -\n", "direct",
		ms(pct(dAll.ttfts, 0.5)), ms(pct(dAll.ttfts, 0.99)), "", "", "", ms(pct(dAll.totals, 0.5)), ms(pct(dAll.totals, 0.99)), "", "")
	for _, s := range sides[1:] {
		p := results[s.name]
		pAll := pool(p)
		var ttftAdded, totalAdded []float64
		for i := range d {
			ttftAdded = append(ttftAdded, ms(pct(p[i].ttfts, 0.5)-pct(d[i].ttfts, 0.5)))
			totalAdded = append(totalAdded, ms(pct(p[i].totals, 0.5)-pct(d[i].totals, 0.5)))
		}
		hops := "n/a"
		if len(pAll.hops) > 0 && len(dAll.hops) > 0 {
			hops = fmt.Sprintf("%+.3f", ms(pct(pAll.hops, 0.5)-pct(dAll.hops, 0.5)))
		}
		var cpu time.Duration
		for _, ph := range p {
			cpu += ph.proxyCPU
		}
		fmt.Printf("%-7s | %7.2f / %-7.2f | %+.3f (%+.3f..%+.3f)%-14s | %+14.3f | %-24s | %7.2f / %-7.2f | %+.3f (%+.3f..%+.3f)%-15s | %+15.3f | %.1f\n",
			s.name, ms(pct(pAll.ttfts, 0.5)), ms(pct(pAll.ttfts, 0.99)),
			ms(pct(pAll.ttfts, 0.5)-pct(dAll.ttfts, 0.5)), slices.Min(ttftAdded), slices.Max(ttftAdded), "",
			ms(pct(pAll.ttfts, 0.99)-pct(dAll.ttfts, 0.99)), hops,
			ms(pct(pAll.totals, 0.5)), ms(pct(pAll.totals, 0.99)),
			ms(pct(pAll.totals, 0.5)-pct(dAll.totals, 0.5)), slices.Min(totalAdded), slices.Max(totalAdded), "",
			ms(pct(pAll.totals, 0.99)-pct(dAll.totals, 0.99)),
			float64(cpu.Milliseconds())/max(float64(pAll.tokens)/1000, 1e-9))
	}
	fmt.Printf("\nload average at the end: %s\n", loadAvg())
}
