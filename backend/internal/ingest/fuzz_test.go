package ingest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/sse"
)

var fuzzSeeds = []string{
	okLine + "\n" + okOther + "\n" + badType,
	"[" + okLine + "," + badNeg + "]",
	"[" + okLine + ",{oops",
	"id: 7\ndata: " + okLine + "\n\nretry: 100\ndata: [" + okOther + "]\n\n",
	"data: " + okLine + "\ndata: more\n\n: comment\nid: \x00\n\n",
	"\n\n  \r\n", "[]", "[[[[", "",
	// Array elements over an event's limit: rejected within the read
	// bound, the body's end past it; blanks and a string after the array.
	"[" + okLine + "," + padded(events.MaxLineBytes+1) + "," + okOther + "]",
	"[" + okLine + "," + padded(maxElementRead+1) + "," + okOther + "]",
	"[" + okLine + strings.Repeat(" ", maxElementRead) + "]",
	"[" + okLine + "]\n \r\t" + `"x"`,
}

// FuzzDecode: whatever the body, Decode does not panic, reports each
// element once (accepted or rejected), and only events that parse.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		n := 0
		_ = Decode(bytes.NewReader(body), func(ev events.Event, pos Rejection) {
			n++
			if ev.Type == "" || ev.At <= 0 {
				t.Fatalf("accepted an invalid event %#v", ev)
			}
			if pos.Line == 0 && pos.Index == nil {
				t.Fatalf("accepted event without a position")
			}
		}, func(r Rejection) {
			n++
			if r.Reason == "" {
				t.Fatalf("rejection without a reason: %+v", r)
			}
		})
		if n > len(body)+1 {
			t.Fatalf("%d outcomes from %d bytes", n, len(body))
		}
	})
}

// FuzzDecodeSSE: the same for a followed event stream, and an id handed
// back is bounded and free of NUL.
func FuzzDecodeSSE(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, _ = decodeSSE(bytes.NewReader(body), sse.Options{}, func(ev events.Event, pos Rejection) {
			if ev.Type == "" || pos.Line <= 0 {
				t.Fatalf("accepted %#v at %+v", ev, pos)
			}
		}, func(r Rejection) {
			if r.Reason == "" {
				t.Fatalf("rejection without a reason: %+v", r)
			}
		}, func(id string) {
			if len(id) > 1024 || bytes.IndexByte([]byte(id), 0) >= 0 {
				t.Fatalf("id %q", id)
			}
		})
	})
}
