package ingest

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/sse"
)

const (
	// okLine is in the host's flat form; the others in the envelope form
	// earlier recordings use: both are read.
	okLine  = `{"type":"scheduler.sample","at":1764690000000,"model":"m","active":1,"capacity":8,"queued":0,"tokensPerSecond":10}`
	okOther = `{"type":"catalog.changed","at":1764690000001}`
	badType = `{"type":"scheduler.sample","at":1764690000000,"data":{"model":"m","active":"one","capacity":8,"queued":0,"tokensPerSecond":10}}`
	badNeg  = `{"type":"model.memory","at":1764690000000,"data":{"model":"m","weightsBytes":-1,"kvBytes":0,"prefixCacheBytes":0}}`
	badMiss = `{"type":"model.memory","at":1764690000000,"data":{"model":"m","kvBytes":0,"prefixCacheBytes":0}}`
)

func idx(i int) *int { return &i }

type decoded struct {
	accepted []events.Type
	rejected []Rejection
	err      string
}

func decode(input string) decoded {
	var d decoded
	err := Decode(strings.NewReader(input),
		func(ev events.Event, _ Rejection) { d.accepted = append(d.accepted, ev.Type) },
		func(r Rejection) { d.rejected = append(d.rejected, r) })
	if err != nil {
		d.err = err.Error()
	}
	return d
}

// padded is an ignored event of n bytes or a little more.
func padded(n int) string {
	return `{"type":"x","at":1,"data":"` + strings.Repeat("a", max(n-29, 0)) + `"}`
}

func TestDecode(t *testing.T) {
	huge := padded(1<<20 + 29)
	over := padded(events.MaxLineBytes + 100) // over an event's limit, within the array's read bound
	for _, tc := range []struct {
		name     string
		input    string
		accepted []events.Type
		rejected []Rejection
		err      string
	}{
		{name: "empty"},
		{name: "blank lines", input: "\n\n  \n"},
		{
			name:     "NDJSON",
			input:    okLine + "\n" + okOther + "\n",
			accepted: []events.Type{events.TypeSchedulerSample, "catalog.changed"},
		},
		{
			name:     "NDJSON without final newline, CRLF and blank lines",
			input:    okLine + "\r\n\r\n" + okOther,
			accepted: []events.Type{events.TypeSchedulerSample, "catalog.changed"},
		},
		{
			name:     "NDJSON bad lines counted, the rest kept",
			input:    badType + "\n" + okLine + "\n" + badNeg + "\n\n" + badMiss + "\nnot json\n" + okOther,
			accepted: []events.Type{events.TypeSchedulerSample, "catalog.changed"},
			rejected: []Rejection{
				{Line: 1, Field: "active", Reason: "wrong type: want int, got JSON string"},
				{Line: 3, Field: "weightsBytes", Reason: "must be from 0 to 1125899906842624, got -1"},
				{Line: 5, Field: "weightsBytes", Reason: "missing"},
				{Line: 6, Reason: "not a JSON event object: invalid character 'o' in literal null (expecting 'u')"},
			},
		},
		{
			name:     "1 MB line is rejected and skipped",
			input:    okLine + "\n" + huge + "\n" + okOther + "\n",
			accepted: []events.Type{events.TypeSchedulerSample, "catalog.changed"},
			rejected: []Rejection{{Line: 2, Reason: "line is 1048605 bytes, over the 65536-byte limit"}},
		},
		{
			name:     "JSON array",
			input:    " [" + okLine + "," + badNeg + "," + okOther + "]",
			accepted: []events.Type{events.TypeSchedulerSample, "catalog.changed"},
			rejected: []Rejection{{Index: idx(1), Field: "weightsBytes", Reason: "must be from 0 to 1125899906842624, got -1"}},
		},
		{
			name:     "broken JSON array keeps what came before",
			input:    "[" + okLine + ", {oops",
			accepted: []events.Type{events.TypeSchedulerSample},
			err:      "JSON array element 1: invalid character 'o' looking for beginning of object key string",
		},
		{
			name:     "JSON array with blanks after it",
			input:    "[" + okLine + "]\r\n\n ",
			accepted: []events.Type{events.TypeSchedulerSample},
		},
		{
			name:     "JSON array with more after it keeps the array",
			input:    "[" + okLine + "] junk",
			accepted: []events.Type{events.TypeSchedulerSample},
			err:      "more than blanks after the JSON array: send one array, or NDJSON",
		},
		{
			name:     "two JSON arrays",
			input:    "[" + okLine + "][" + okOther + "]",
			accepted: []events.Type{events.TypeSchedulerSample},
			err:      "more than blanks after the JSON array: send one array, or NDJSON",
		},
		{
			name:     "array element over the event limit is rejected, the array goes on",
			input:    "[" + okLine + "," + over + "," + okOther + "]",
			accepted: []events.Type{events.TypeSchedulerSample, "catalog.changed"},
			rejected: []Rejection{{Index: idx(1), Reason: "event is 65636 bytes, over the 65536-byte limit"}},
		},
		{
			name:     "1 MB array element ends the array, keeping what came before",
			input:    "[" + okLine + "," + huge + "," + okOther + "]",
			accepted: []events.Type{events.TypeSchedulerSample},
			err:      "JSON array element 1 is over the 65536-byte limit for one event: the rest of the array is not read",
		},
		{
			// The decoder holds the blanks after an element with the next.
			name:     "1 MB of blanks inside an array count with the next element",
			input:    "[" + okLine + strings.Repeat(" ", 1<<20) + "," + okOther + "]",
			accepted: []events.Type{events.TypeSchedulerSample},
			err:      "JSON array element 1 is over the 65536-byte limit for one event: the rest of the array is not read",
		},
		{
			name:     "1 MB of blanks after the array are read, not held",
			input:    "[" + okLine + "]" + strings.Repeat("\n", 1<<20),
			accepted: []events.Type{events.TypeSchedulerSample},
		},
		{
			name:     "1 MB string after the array",
			input:    "[" + okLine + "]" + `"` + strings.Repeat("a", 1<<20) + `"`,
			accepted: []events.Type{events.TypeSchedulerSample},
			err:      "more than blanks after the JSON array: send one array, or NDJSON",
		},
		{
			name:     "array elements that are not objects",
			input:    `[1, "x", null]`,
			rejected: []Rejection{{Index: idx(0), Reason: ""}, {Index: idx(1), Reason: ""}, {Index: idx(2), Reason: ""}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decode(tc.input)
			if !reflect.DeepEqual(got.accepted, tc.accepted) {
				t.Errorf("accepted %v, want %v", got.accepted, tc.accepted)
			}
			if len(got.rejected) != len(tc.rejected) {
				t.Fatalf("rejected %+v, want %+v", got.rejected, tc.rejected)
			}
			for i, r := range got.rejected {
				want := tc.rejected[i]
				if want.Reason == "" { // only the position matters
					want.Reason, want.Field = r.Reason, r.Field
				}
				if !reflect.DeepEqual(r, want) {
					t.Errorf("rejection %d: %+v, want %+v", i, r, want)
				}
			}
			if got.err != tc.err {
				t.Errorf("error %q, want %q", got.err, tc.err)
			}
		})
	}
}

// Server-sent events: fields, comments, multi-line data, arrays, bounds;
// an event is dispatched by its blank line, and one the stream ends inside
// is discarded with its id, as the SSE spec says.
func TestDecodeSSE(t *testing.T) {
	tests := []struct {
		name     string
		input    []string // lines, joined by "\n"
		accepted []events.Type
		rejected []int // their event numbers
		ids      []string
		retry    time.Duration
	}{
		{
			name: "fields, comments, an array, a bad event, an over-long one, a final one cut off",
			input: []string{
				": a comment",
				"retry: 2500",
				"event: event",
				"id: 1",
				"data: " + okLine,
				"",
				"data: " + badNeg,
				"",
				"data: [" + okOther + ",",
				"data: " + okLine + "]",
				"",
				"data: " + strings.Repeat("x", 70_000),
				"",
				"data: " + okOther, // no final blank line: discarded
			},
			accepted: []events.Type{events.TypeSchedulerSample, "catalog.changed", events.TypeSchedulerSample},
			rejected: []int{2, 4},
			ids:      []string{"1"},
			retry:    2500 * time.Millisecond,
		},
		{
			name:     "the last event ended by its blank line counts",
			input:    []string{"id: 1", "data: " + okLine, "", "id: 2", "data: " + okOther, "", ""},
			accepted: []events.Type{events.TypeSchedulerSample, "catalog.changed"},
			ids:      []string{"1", "2"},
		},
		{
			name:     "cut off after its data line: discarded with its id",
			input:    []string{"id: 1", "data: " + okLine, "", "id: 2", "data: " + okOther, ""},
			accepted: []events.Type{events.TypeSchedulerSample},
			ids:      []string{"1"},
		},
		{
			name:     "cut off inside a multi-line data",
			input:    []string{"data: [" + okOther + ",", "data: " + okLine + "]"},
			accepted: nil,
		},
		{
			name:     "cut off with CRLF",
			input:    []string{"data: " + okLine + "\r", ""},
			accepted: nil,
		},
		{
			name:  "an over-long event cut off is not rejected either",
			input: []string{"data: " + strings.Repeat("x", 70_000)},
		},
		{
			name:  "an id alone is kept, once its blank line comes",
			input: []string{"id: 7", "", "id: 8"},
			ids:   []string{"7"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var (
				accepted []events.Type
				rejected []int
				ids      []string
			)
			retry, err := decodeSSE(strings.NewReader(strings.Join(tc.input, "\n")), sse.Options{},
				func(ev events.Event, _ Rejection) { accepted = append(accepted, ev.Type) },
				func(r Rejection) { rejected = append(rejected, r.Line) },
				func(id string) { ids = append(ids, id) })
			if err != nil {
				t.Fatal(err)
			}
			if retry != tc.retry {
				t.Errorf("retry %v, want %v", retry, tc.retry)
			}
			if !slices.Equal(accepted, tc.accepted) || !slices.Equal(rejected, tc.rejected) || !slices.Equal(ids, tc.ids) {
				t.Errorf("accepted %v, rejected events %v, ids %q; want %v, %v, %q", accepted, rejected, ids, tc.accepted, tc.rejected, tc.ids)
			}
		})
	}
}

// endless is a body that never ends: prefix, then fill for ever. It counts
// what was read from it.
type endless struct {
	prefix string
	fill   byte
	read   int
}

func (e *endless) Read(p []byte) (int, error) {
	n := 0
	if e.read < len(e.prefix) {
		n = copy(p, e.prefix[e.read:])
	}
	for i := n; i < len(p); i++ {
		p[i] = e.fill
	}
	e.read += len(p)
	return len(p), nil
}

// An array element that never ends, or blanks that never do, stop the
// decoder within a bound: it holds no more than one event's limit and its
// read-ahead, whatever the body's length.
func TestDecodeArrayBounded(t *testing.T) {
	const bound = maxElementRead + 64<<10 // and Decode's bufio.Reader
	for _, tc := range []struct {
		name   string
		prefix string
		fill   byte
		err    string
	}{
		{"an element", "[" + okLine + `,{"type":"catalog.changed","at":1,"pad":"`, 'A',
			"JSON array element 1 is over the 65536-byte limit for one event: the rest of the array is not read"},
		{"the first element", `[{"type":"catalog.changed","at":1,"pad":"`, 'A',
			"JSON array element 0 is over the 65536-byte limit for one event: the rest of the array is not read"},
		{"blanks after an element", "[" + okLine, ' ',
			"JSON array element 1 is over the 65536-byte limit for one event: the rest of the array is not read"},
		{"blanks after a comma", "[" + okLine + ",", '\n',
			"JSON array element 1 is over the 65536-byte limit for one event: the rest of the array is not read"},
		{"a string after the array", "[" + okLine + `]"`, 'A',
			"more than blanks after the JSON array: send one array, or NDJSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &endless{prefix: tc.prefix, fill: tc.fill}
			var accepted []events.Type
			err := Decode(body, func(ev events.Event, _ Rejection) { accepted = append(accepted, ev.Type) },
				func(r Rejection) { t.Errorf("rejected %+v", r) })
			if err == nil || err.Error() != tc.err {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			if body.read > bound {
				t.Errorf("read %d bytes, over %d", body.read, bound)
			}
			if want := strings.Count(tc.prefix, okLine); len(accepted) != want {
				t.Errorf("accepted %v, want %d events", accepted, want)
			}
		})
	}
}
