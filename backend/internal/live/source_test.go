package live

import (
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// A source's state is in the snapshot, and moves its version only when it
// changes, as an event's change does; the two add up.
func TestSetSource(t *testing.T) {
	const at = 1_796_280_000_000
	down := snapshot.Source{Kind: snapshot.SourceFollow, Host: "h:9", State: snapshot.SourceUnreached, Since: at, FailedAttempts: 1}
	downAgain := down
	downAgain.FailedAttempts = 2
	up := snapshot.Source{Kind: snapshot.SourceFollow, Host: "h:9", State: snapshot.SourceConnected, Since: at + 5}
	sample := events.Event{Type: events.TypeSchedulerSample, At: at,
		Payload: &events.SchedulerSample{Model: "m", Active: 1, Capacity: 4, TokensPerSecond: 9}}
	b := bus.New()
	l := New(b, Options{Clock: clock.NewFake(time.UnixMilli(at))})
	defer l.Close()
	for i, step := range []struct {
		src     *snapshot.Source
		ev      *events.Event
		version uint64
		want    []snapshot.Source
	}{
		{nil, nil, 0, nil},
		{&down, nil, 1, []snapshot.Source{down}},
		{&down, nil, 1, []snapshot.Source{down}}, // the same again: no change
		{nil, &sample, 2, []snapshot.Source{down}},
		{&downAgain, nil, 3, []snapshot.Source{downAgain}}, // the same host: replaced
		{&up, nil, 4, []snapshot.Source{up}},
	} {
		if step.src != nil {
			l.SetSource(*step.src)
		}
		if step.ev != nil {
			b.Publish(*step.ev)
			b.Flush()
		}
		snap := l.Snapshot(time.UnixMilli(at))
		if snap.Version != step.version || l.Version() != step.version || len(snap.Sources) != len(step.want) {
			t.Fatalf("step %d: version %d (live %d), sources %+v; want %d, %+v", i, snap.Version, l.Version(), snap.Sources, step.version, step.want)
		}
		for j := range step.want {
			if snap.Sources[j] != step.want[j] {
				t.Errorf("step %d: source %+v, want %+v", i, snap.Sources[j], step.want[j])
			}
		}
	}
}
