package stream

import (
	"testing"
	"time"
)

// The opening frame carries the time it is sent, not the time the shared
// frame was encoded: restamped in place when the snapshot starts with
// "at" (one encoding for every client), encoded afresh otherwise.
func TestOpeningCarriesSendTime(t *testing.T) {
	for _, tc := range []struct {
		name    string
		start   time.Time
		waits   []time.Duration // clock moves before each client joins
		leadKey bool
		encodes int // want, in all
	}{
		{"at once", t0, []time.Duration{0}, false, 1},
		{"a minute, then an hour later, same version", t0, []time.Duration{0, time.Minute, time.Hour}, false, 1},
		{"more digits than when encoded", time.UnixMilli(999), []time.Duration{0, time.Millisecond}, false, 1},
		{"negative time", time.UnixMilli(-5), []time.Duration{0, 10 * time.Millisecond}, false, 1},
		{"not stampable: encoded per client", t0, []time.Duration{0, time.Minute}, true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessWith(t, harnessConfig{start: tc.start, leadKey: tc.leadKey})
			h.src.set(7)
			for _, wait := range tc.waits {
				switch {
				case wait >= 500*time.Millisecond:
					h.advance(wait) // a tick comes
				case wait > 0:
					h.clk.Advance(wait)
				}
				r := h.connect() // the chunked framing is checked by the client
				if it := r.next(); it.retry != "1500" {
					t.Fatalf("first block %+v, want retry: 1500", it)
				}
				it := r.snapshot()
				if want := h.clk.Now().UnixMilli(); it.version != 7 || it.at != want {
					t.Fatalf("opening frame %+v, want version 7 at %d", it, want)
				}
			}
			if got := h.src.encoded(); got != tc.encodes {
				t.Errorf("encoded %d times, want %d", got, tc.encodes)
			}
		})
	}
}

// newFrame finds the leading "at" or leaves the frame unstampable.
func TestFrameStamp(t *testing.T) {
	for _, tc := range []struct {
		json, want string
	}{
		{`{"at":1,"x":2}`, `{"at":1764690000000,"x":2}`},
		{`{"at":-12,"x":2}`, `{"at":1764690000000,"x":2}`},
		{`{"at":12}`, `{"at":1764690000000}`},
		{`{"x":1,"at":2}`, ""},
		{`{"at":null}`, ""},
		{`{"at":"1"}`, ""},
		{`{"at":`, ""},
	} {
		f := newFrame(3, []byte(tc.json))
		if tc.want == "" {
			if f.stampable() {
				t.Errorf("%s: stampable, want not", tc.json)
			}
			continue
		}
		parts, size := f.stamped(nil, nil, t0)
		var got []byte
		for _, p := range parts {
			got = append(got, p...)
		}
		if want := "event: snapshot\ndata: " + tc.want + "\nid: 3\n\n"; string(got) != want || size != len(want) {
			t.Errorf("%s: stamped %q (size %d), want %q", tc.json, got, size, want)
		}
	}
}
