package peers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// num is a number a tool wrote. Any other value (a string, an object, a
// number past float64) is kept as bad rather than failing the whole file,
// so one broken entry costs only itself.
type num struct {
	v       float64
	present bool // the key was there and not null
	bad     bool // there, but not a finite number
	inf     bool // vLLM's "inf" request rate: every request at once
}

func (n *num) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		return nil
	case b[0] == '"':
		n.present = true
		var s string
		json.Unmarshal(b, &s)
		if s == "inf" || s == "Infinity" {
			n.inf = true
			return nil
		}
		n.bad = true
		return nil
	}
	n.present = true
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		n.bad = true
		return nil
	}
	n.v = v
	return nil
}

// vals reads one entry's figures: each missing one is 0 and counted in
// missing (by name), each out of bounds noted in bad. An entry with a bad
// figure is left out.
type vals struct {
	missing []string
	bad     []string
}

// f is a figure: at least 0 and at most bench.MaxFigure, times scale.
func (v *vals) f(name string, n num, scale float64) float64 {
	switch {
	case !n.present:
		v.missing = append(v.missing, name)
		return 0
	case n.bad || n.inf:
		v.bad = append(v.bad, name+" is not a number")
		return 0
	}
	x := n.v * scale
	if x < 0 || x > bench.MaxFigure || math.IsNaN(x) || math.IsInf(x, 0) {
		v.bad = append(v.bad, fmt.Sprintf("%s %g is outside 0..%g", name, x, float64(bench.MaxFigure)))
		return 0
	}
	return x
}

// count is a whole count of requests or tokens, 0 to limit.
func (v *vals) count(name string, n num, limit float64) int64 {
	x := v.f(name, n, 1)
	if x > limit || x != math.Trunc(x) {
		v.bad = append(v.bad, fmt.Sprintf("%s %g is not a count of 0..%g", name, x, limit))
		return 0
	}
	return int64(x)
}

// opt is a figure the tool writes only when asked: absent is not missing.
func (v *vals) opt(name string, n num, scale float64) *float64 {
	if !n.present {
		return nil
	}
	x := v.f(name, n, scale)
	return &x
}

// maxTokens bounds a point's token totals: the most requests a point may
// send, each of the longest prompt and output.
const maxTokens = float64(bench.MaxLoadRequests) * 2 * bench.MaxLoadTokens

// dist reads a distribution's fields, named metric+" mean" and so on.
type distNums struct {
	mean, std, median, p90, p95, p99, p999, count num
}

// dist is d scaled to milliseconds; count stands in where d has none.
func (v *vals) dist(metric string, d distNums, scale float64, count int64) bench.Dist {
	if !d.mean.present && !d.median.present {
		v.missing = append(v.missing, metric)
		return bench.Dist{}
	}
	out := bench.Dist{
		Mean:   v.f(metric+" mean", d.mean, scale),
		Std:    v.f(metric+" std", d.std, scale),
		Median: v.f(metric+" median", d.median, scale),
		P90:    v.f(metric+" p90", d.p90, scale),
		P95:    v.f(metric+" p95", d.p95, scale),
		P99:    v.f(metric+" p99", d.p99, scale),
		P999:   v.f(metric+" p99.9", d.p999, scale),
	}
	out.Count = int(count)
	if d.count.present {
		out.Count = int(v.count(metric+" count", d.count, float64(bench.MaxLoadRequests)*bench.MaxLoadTokens))
	}
	return out
}

// keep adds the entry, or a problem saying why it was left out; the
// missing figures are counted for the run's one problem naming them.
func (r *result) keep(what string, v vals, e entry) {
	if len(v.bad) > 0 {
		r.problem("%s: %s: left out", what, clip(v.bad[0], 200))
		return
	}
	if r.missing == nil {
		r.missing = map[string]int{}
	}
	for _, m := range v.missing {
		r.missing[m]++
	}
	r.entries = append(r.entries, e)
}

// pythonLiterals quotes the NaN, Infinity and -Infinity that Python's json
// writes for non-finite floats (not JSON), so they decode as bad numbers
// of their entry instead of failing the whole file.
func pythonLiterals(b []byte) []byte {
	if !bytes.Contains(b, []byte("NaN")) && !bytes.Contains(b, []byte("Infinity")) {
		return b
	}
	var out []byte
	last := 0
	inString, escaped := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			continue
		}
		for _, lit := range []string{"-Infinity", "Infinity", "NaN"} {
			if bytes.HasPrefix(b[i:], []byte(lit)) {
				out = append(out, b[last:i]...)
				out = append(out, '"')
				out = append(out, lit...)
				out = append(out, '"')
				i += len(lit) - 1
				last = i + 1
				break
			}
		}
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// innerCount is how many values the arrays inside an array hold (vLLM's
// itls: one array of gaps a request), counted without keeping them.
type innerCount struct {
	n       int64
	present bool
}

func (c *innerCount) UnmarshalJSON(b []byte) error {
	if b[0] != '[' {
		return nil
	}
	c.present = true
	depth := 0
	inString, escaped, fresh := false, false, false
	for _, ch := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case ch == '\\':
				escaped = true
			case ch == '"':
				inString = false
			}
			continue
		}
		switch ch {
		case '"':
			inString = true
		case '[', '{':
			depth++
			fresh = depth == 2
			continue
		case ']', '}':
			depth--
		case ',':
			if depth == 2 {
				c.n++
			}
		case ' ', '\t', '\r', '\n':
			continue
		}
		if depth == 2 && fresh && ch != ']' {
			c.n++ // the first value of an inner array
		}
		fresh = false
	}
	return nil
}

// naiveTime reads an ISO time without a zone (Python's datetime.now()
// written as it is) as UTC; one with a zone as what it says.
func naiveTime(s string) (t time.Time, naive, ok bool) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "20060102-150405"} {
		if t, err := time.Parse(layout, s); err == nil && t.After(earliest) && t.Before(latest) {
			return t, layout != time.RFC3339Nano, true
		}
	}
	return time.Time{}, false, false
}

// The times a result may carry: none before the project or past 2100.
var (
	earliest = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	latest   = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
)

// unixTime is seconds since the epoch as a time, if it is one between 2020
// and 2100.
func unixTime(n num) (time.Time, bool) {
	if !n.present || n.bad || n.v < float64(earliest.Unix()) || n.v > float64(latest.Unix()) {
		return time.Time{}, false
	}
	return time.UnixMicro(int64(n.v * 1e6)), true
}

// secondsDuration is s seconds (0..bench.MaxFigure) as a duration.
func secondsDuration(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
