package bus

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

func ev(i int) events.Event { return events.Event{Type: "test.seq", At: int64(i)} }

// recorder collects the At of every event it handles.
type recorder struct {
	mu  sync.Mutex
	got []int64
}

func (r *recorder) handle(e events.Event) {
	r.mu.Lock()
	r.got = append(r.got, e.At)
	r.mu.Unlock()
}

func (r *recorder) seen() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.got...)
}

func seq(from, to int) []int64 {
	var s []int64
	for i := from; i <= to; i++ {
		s = append(s, int64(i))
	}
	return s
}

func TestDeliversInOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		queue int
		n     int
	}{
		{"one event", 8, 1},
		{"fits the queue", 8, 8},
		{"default queue", 0, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New()
			var r recorder
			cancel := b.Subscribe("rec", tc.queue, r.handle)
			defer cancel()
			for i := 1; i <= tc.n; i++ {
				b.Publish(ev(i))
			}
			b.Flush()
			if got := r.seen(); !slices.Equal(got, seq(1, tc.n)) {
				t.Fatalf("got %v, want 1..%d", got, tc.n)
			}
			st := b.Stats()
			if len(st) != 1 || st[0].Name != "rec" || st[0].Delivered != uint64(tc.n) || st[0].Dropped != 0 || st[0].Queued != 0 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

// A stalled subscriber keeps only its newest events and counts the rest.
func TestDropsOldestWhenFull(t *testing.T) {
	for _, tc := range []struct {
		name  string
		queue int
		extra int // published while the handler is stalled
	}{
		{"exactly full", 4, 4},
		{"one over", 4, 5},
		{"far over", 4, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New()
			entered := make(chan struct{})
			release := make(chan struct{})
			var r recorder
			cancel := b.Subscribe("slow", tc.queue, func(e events.Event) {
				if e.At == 0 {
					close(entered)
					<-release
					return
				}
				r.handle(e)
			})
			defer cancel()
			b.Publish(ev(0))
			<-entered // the handler now holds event 0; the queue is empty
			for i := 1; i <= tc.extra; i++ {
				b.Publish(ev(i)) // must not block
			}
			close(release)
			b.Flush()
			dropped := max(0, tc.extra-tc.queue)
			if got, want := r.seen(), seq(dropped+1, tc.extra); !slices.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
			st := b.Stats()[0]
			if st.Dropped != uint64(dropped) || st.Delivered != uint64(tc.extra-dropped+1) {
				t.Fatalf("stats %+v, want dropped %d", st, dropped)
			}
		})
	}
}

func TestPanickingHandlerIsSkipped(t *testing.T) {
	b := New()
	var r recorder
	cancel := b.Subscribe("flaky", 16, func(e events.Event) {
		if e.At%3 == 0 {
			panic(fmt.Sprintf("bad event %d", e.At))
		}
		r.handle(e)
	})
	defer cancel()
	var other recorder
	cancelOther := b.Subscribe("other", 16, other.handle)
	defer cancelOther()
	for i := 1; i <= 10; i++ {
		b.Publish(ev(i))
	}
	b.Flush()
	if got, want := r.seen(), []int64{1, 2, 4, 5, 7, 8, 10}; !slices.Equal(got, want) {
		t.Fatalf("flaky got %v, want %v", got, want)
	}
	if got := other.seen(); !slices.Equal(got, seq(1, 10)) {
		t.Fatalf("a panic in one subscriber affected another: %v", got)
	}
	st := b.Stats()
	if st[0].Failed != 3 || st[0].Delivered != 7 || st[0].LastFailure != "bad event 9" {
		t.Fatalf("flaky stats %+v", st[0])
	}
	if st[1].Failed != 0 || st[1].Delivered != 10 {
		t.Fatalf("other stats %+v", st[1])
	}
}

func TestCancel(t *testing.T) {
	b := New()
	var r recorder
	cancel := b.Subscribe("a", 8, r.handle)
	b.Publish(ev(1))
	b.Flush()
	cancel()
	cancel() // idempotent
	b.Publish(ev(2))
	b.Flush()
	if got := r.seen(); !slices.Equal(got, []int64{1}) {
		t.Fatalf("got %v after cancel", got)
	}
	if st := b.Stats(); len(st) != 0 {
		t.Fatalf("cancelled subscriber still listed: %+v", st)
	}
}

// Cancel returns even while events are queued behind a stalled handler,
// once that handler call returns, and releases a Flush waiting on it.
func TestCancelWhileBacklogged(t *testing.T) {
	// In a synctest bubble, synctest.Wait returns once every goroutine
	// blocks: Flush is waiting for the backlog before cancel starts, and
	// both are waiting when the handler is released, the path this test
	// names (a cancel's removal before Flush read the subscribers would
	// let Flush return at once).
	synctest.Test(t, func(t *testing.T) {
		b := New()
		entered := make(chan struct{})
		release := make(chan struct{})
		var once sync.Once
		cancel := b.Subscribe("stalled", 8, func(events.Event) {
			once.Do(func() { close(entered) })
			<-release
		})
		for i := 0; i < 5; i++ {
			b.Publish(ev(i))
		}
		<-entered
		flushed := make(chan struct{})
		go func() { b.Flush(); close(flushed) }()
		synctest.Wait() // Flush waits for the backlog
		cancelled := make(chan struct{})
		go func() { cancel(); close(cancelled) }()
		synctest.Wait() // cancel waits for the handler to return
		select {
		case <-flushed:
			t.Fatal("Flush returned while the handler held an event")
		case <-cancelled:
			t.Fatal("cancel returned while the handler held an event")
		default:
		}
		close(release)
		<-cancelled
		<-flushed
	})
}

func TestConcurrentPublishers(t *testing.T) {
	b := New()
	var mu sync.Mutex
	count := map[int64]int{}
	cancel := b.Subscribe("count", 1<<16, func(e events.Event) {
		mu.Lock()
		count[e.At]++
		mu.Unlock()
	})
	defer cancel()
	const writers, each = 8, 500
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				b.Publish(ev(w*each + i))
			}
		}(w)
	}
	// Subscribing and cancelling while publishing must be safe.
	extra := b.Subscribe("transient", 4, func(events.Event) {})
	extra()
	wg.Wait()
	b.Flush()
	if len(count) != writers*each {
		t.Fatalf("delivered %d distinct events, want %d", len(count), writers*each)
	}
	for k, n := range count {
		if n != 1 {
			t.Fatalf("event %d delivered %d times", k, n)
		}
	}
}

func BenchmarkPublish(b *testing.B) {
	for _, subs := range []int{1, 4} {
		b.Run(fmt.Sprintf("subscribers=%d", subs), func(b *testing.B) {
			bus := New()
			for i := 0; i < subs; i++ {
				defer bus.Subscribe(fmt.Sprint(i), 1<<14, func(events.Event) {})()
			}
			e := ev(1)
			b.ReportAllocs()
			for b.Loop() {
				bus.Publish(e)
			}
			bus.Flush()
		})
	}
}
