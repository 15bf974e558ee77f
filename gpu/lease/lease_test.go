package lease

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func fixed() time.Time { return t0 }

func TestTryAcquire(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(l *Lease)
		holder  string
		wantErr error
	}{
		{"free", func(*Lease) {}, "b", nil},
		{"held", func(l *Lease) { mustTry(t, l, "a") }, "b", ErrHeld},
		{"same holder", func(l *Lease) { mustTry(t, l, "b") }, "b", ErrDuplicate},
		{"released", func(l *Lease) { mustTry(t, l, "a")() }, "b", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New("no GPU found", fixed)
			tt.setup(l)
			rel, err := l.TryAcquire(tt.holder)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err == nil {
				s := l.State()
				if !s.Held || s.Holder != tt.holder || s.Since != t0.UnixMilli() || s.Device != "no GPU found" {
					t.Fatalf("state = %+v", s)
				}
				rel()
				rel() // twice is harmless
				if l.State().Held {
					t.Fatal("still held after release")
				}
			}
		})
	}
}

func mustTry(t *testing.T, l *Lease, holder string) Release {
	t.Helper()
	rel, err := l.TryAcquire(holder)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// acquireAsync starts Acquire and reports its result; it returns once the
// caller is in the queue, so the order of calls is the FIFO order.
func acquireAsync(ctx context.Context, l *Lease, holder string, pos int) <-chan Release {
	got := make(chan Release, 1)
	go func() {
		rel, err := l.Acquire(ctx, holder)
		if err != nil {
			close(got)
			return
		}
		got <- rel
	}()
	for l.Position(holder) != pos {
		// Yield until the goroutine has joined the queue (no timing
		// assumption: the loop ends on the lease's own state).
		runtime.Gosched()
	}
	return got
}

func TestAcquireFIFO(t *testing.T) {
	l := New("dev", fixed)
	ctx := context.Background()
	relA := mustTry(t, l, "a")
	b := acquireAsync(ctx, l, "b", 1)
	c := acquireAsync(ctx, l, "c", 2)
	if s := l.State(); s.Waiting != 2 || s.Holder != "a" {
		t.Fatalf("state = %+v", s)
	}
	if _, err := l.TryAcquire("d"); !errors.Is(err, ErrHeld) {
		t.Fatalf("TryAcquire while waiters: %v", err)
	}
	relA()
	relB := <-b
	if s := l.State(); s.Holder != "b" || l.Position("c") != 1 {
		t.Fatalf("after a: %+v, c at %d", s, l.Position("c"))
	}
	relB()
	relC := <-c
	if l.State().Holder != "c" {
		t.Fatal("c should hold")
	}
	relC()
	if s := l.State(); s.Held || s.Waiting != 0 {
		t.Fatalf("final state %+v", s)
	}
}

func TestAcquireCancelLeavesQueue(t *testing.T) {
	l := New("dev", fixed)
	relA := mustTry(t, l, "a")
	ctx, cancel := context.WithCancel(context.Background())
	b := acquireAsync(ctx, l, "b", 1)
	c := acquireAsync(context.Background(), l, "c", 2)
	cancel()
	if _, ok := <-b; ok {
		t.Fatal("b acquired after cancel")
	}
	if p := l.Position("c"); p != 1 {
		t.Fatalf("c position = %d, want 1", p)
	}
	relA()
	(<-c)()
	if l.State().Held {
		t.Fatal("held after all released")
	}
}
