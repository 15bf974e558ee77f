package ui

import (
	"bytes"
	"encoding/csv"
	"net/url"
	"strconv"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// loadCSVHeader names the per-point CSV's columns: rates per second,
// times in ms, as the run recorded them.
var loadCSVHeader = []string{
	"run", "cell", "point", "repeat", "search", "arrival", "offered_rate", "concurrency",
	"requests", "completed", "errors", "duration_s", "send_rate", "request_throughput", "output_throughput",
	"total_token_throughput", "input_tokens", "output_tokens",
	"ttft_mean_ms", "ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms",
	"tpot_mean_ms", "tpot_p50_ms", "tpot_p90_ms", "tpot_p99_ms",
	"itl_mean_ms", "itl_p50_ms", "itl_p90_ms", "itl_p99_ms",
	"e2el_mean_ms", "e2el_p50_ms", "e2el_p90_ms", "e2el_p99_ms",
	"goodput", "good_requests", "saturated",
}

// loadCSV is a cell's load points as CSV, a row per point and repeat, made
// in the panel from the history entry (the run's per-request records stay
// in its run directory). A figure no request reported is empty.
func loadCSV(runID string, c bench.CompactCell) string {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(loadCSVHeader)
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	dist := func(d bench.Dist) []string {
		if d.Count == 0 {
			return []string{"", "", "", ""}
		}
		return []string{num(d.Mean), num(d.Median), num(d.P90), num(d.P99)}
	}
	for _, p := range c.LoadPoints {
		goodput := ""
		if p.Goodput != nil {
			goodput = num(*p.Goodput)
		}
		row := []string{runID, c.Key, strconv.Itoa(p.Point), strconv.Itoa(p.Repeat), p.Search, p.Arrival,
			num(p.OfferedRate), strconv.Itoa(p.Concurrency), strconv.Itoa(p.Requests), strconv.Itoa(p.Completed),
			strconv.Itoa(p.Errors), num(p.DurationS), num(p.SendRate), num(p.RequestThroughput), num(p.OutputThroughput),
			num(p.TotalTokenThroughput), strconv.FormatInt(p.InputTokens, 10), strconv.FormatInt(p.OutputTokens, 10)}
		for _, d := range []bench.Dist{p.TTFT, p.TPOT, p.ITL, p.E2EL} {
			row = append(row, dist(d)...)
		}
		row = append(row, goodput, strconv.Itoa(p.GoodRequests), strconv.FormatBool(p.Saturated))
		w.Write(row)
	}
	w.Flush()
	return b.String()
}

// csvDataURL is text as a data: URL, for a download link: the CSV is made
// in the panel, so there is no route to link to.
func csvDataURL(text string) string {
	return "data:text/csv;charset=utf-8," + url.PathEscape(text)
}

// loadCSVName is the file a cell's points download as: the run and the
// cell's key, with what a file name should not hold as "_".
func loadCSVName(runID, key string) string {
	name := []byte(runID + "-" + key + "-load.csv")
	for i, ch := range name {
		ok := ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '-' || ch == '_'
		if !ok {
			name[i] = '_'
		}
	}
	return string(name)
}
