package lease

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// fixed is the options of a lease whose clock stays at t0.
func fixed() Options { return Options{Clock: clock.NewFake(t0)} }

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
			l := New("no GPU found", fixed())
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

func mustEnqueue(t *testing.T, l *Lease, holder string) *Ticket {
	t.Helper()
	tk, err := l.Enqueue(holder)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func ready(tk *Ticket) bool {
	select {
	case <-tk.Ready():
		return true
	default:
		return false
	}
}

func TestEnqueueFIFO(t *testing.T) {
	l := New("dev", fixed())
	a := mustEnqueue(t, l, "a")
	b := mustEnqueue(t, l, "b")
	c := mustEnqueue(t, l, "c")
	if !ready(a) || ready(b) || ready(c) {
		t.Fatal("only a should hold")
	}
	if _, err := l.Enqueue("b"); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate enqueue: %v", err)
	}
	if s := l.State(); s.Waiting != 2 || s.Holder != "a" || l.Position("b") != 1 || l.Position("c") != 2 || l.Position("a") != 0 {
		t.Fatalf("state = %+v", s)
	}
	if _, err := l.TryAcquire("d"); !errors.Is(err, ErrHeld) {
		t.Fatalf("TryAcquire while waiters: %v", err)
	}
	a.Release()
	if !ready(b) || ready(c) || l.State().Holder != "b" || l.Position("c") != 1 {
		t.Fatalf("after a: %+v", l.State())
	}
	b.Release()
	b.Release() // twice is harmless: c keeps it
	if !ready(c) || l.State().Holder != "c" {
		t.Fatal("c should hold")
	}
	c.Release()
	if s := l.State(); s.Held || s.Waiting != 0 {
		t.Fatalf("final state %+v", s)
	}
}

func TestReleaseWhileWaitingLeavesQueue(t *testing.T) {
	l := New("dev", fixed())
	a := mustEnqueue(t, l, "a")
	b := mustEnqueue(t, l, "b")
	c := mustEnqueue(t, l, "c")
	b.Release()
	if p := l.Position("c"); p != 1 {
		t.Fatalf("c position = %d, want 1", p)
	}
	a.Release()
	if !ready(c) || ready(b) {
		t.Fatal("c should hold, b never")
	}
	c.Release()
	if l.State().Held {
		t.Fatal("held after all released")
	}
}

func TestAcquire(t *testing.T) {
	l := New("dev", fixed())
	rel, err := l.Acquire(context.Background(), "a")
	if err != nil || l.State().Holder != "a" {
		t.Fatalf("free lease: %v %+v", err, l.State())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Acquire(ctx, "b"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	if s := l.State(); s.Waiting != 0 {
		t.Fatalf("b still waits: %+v", s)
	}
	got := make(chan error, 1)
	go func() {
		r, err := l.Acquire(context.Background(), "c")
		if err == nil {
			r()
		}
		got <- err
	}()
	// A bound, not a wait: c queues at once unless Acquire is broken.
	stuck := time.After(time.Minute)
	for l.Position("c") == 0 { // until c waits behind a
		select {
		case err := <-got:
			t.Fatalf("c's Acquire returned while a held the lease (err %v)", err)
		case <-stuck:
			t.Fatal("c never queued behind a")
		default:
			runtime.Gosched()
		}
	}
	rel()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}
