package loadgen

import (
	"strings"
	"testing"
	"time"
)

type stampAt int64

func (s stampAt) lastArrival() int64 { return int64(s) }

// A stamp is believed only when it is before now and not long before; the
// time it gives keeps now's monotonic reading.
func TestArrivedAt(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name  string
		stamp int64
		want  time.Duration // from now
		ok    bool
	}{
		{"none", 0, 0, false},
		{"5 ms before", now.Add(-5 * time.Millisecond).UnixNano(), -5 * time.Millisecond, true},
		{"now", now.UnixNano(), 0, true},
		{"after now", now.Add(time.Millisecond).UnixNano(), 0, false},
		{"too old", now.Add(-maxArrivalLag - time.Second).UnixNano(), 0, false},
		{"negative", -1, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at, ok := arrivedAt(now, stampAt(tt.stamp))
			if ok != tt.ok || at.Sub(now) != tt.want {
				t.Errorf("arrivedAt = now%+v, %v; want now%+v, %v", at.Sub(now), ok, tt.want, tt.ok)
			}
			if !strings.Contains(at.String(), " m=") {
				t.Error("the result lost now's monotonic reading")
			}
		})
	}
}

// untilStamped calls try until it reports a stamped read, for at most 10 s.
// The kernel turns receive stamps on for every socket a moment after the
// first asks (deferred work, which signals nothing): on a busy machine that
// moment outlasts many quick tries, so the tries are spaced out by a
// millisecond after the first few.
func untilStamped(t *testing.T, try func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		if try() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		if i >= 10 {
			time.Sleep(time.Millisecond)
		}
	}
}
