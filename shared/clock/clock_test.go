package clock

import (
	"context"
	"runtime"
	"testing"
	"time"
)

var t0 = time.UnixMilli(1_764_690_000_000)

func TestFakeTicker(t *testing.T) {
	f := NewFake(t0)
	tk := f.NewTicker(500 * time.Millisecond)
	got := make(chan time.Time)
	go func() {
		for tm := range tk.C() {
			got <- tm
		}
	}()
	for _, step := range []struct {
		advance time.Duration
		tick    bool
		at      time.Duration // since t0, when tick
	}{
		{400 * time.Millisecond, false, 0},
		{100 * time.Millisecond, true, 500 * time.Millisecond},
		{2 * time.Second, true, 2500 * time.Millisecond}, // missed ticks are skipped
		{499 * time.Millisecond, false, 0},
		{1 * time.Millisecond, true, 3 * time.Second},
	} {
		done := make(chan struct{})
		go func() { f.Advance(step.advance); close(done) }()
		if step.tick {
			if tm := <-got; !tm.Equal(t0.Add(step.at)) {
				t.Fatalf("tick at %v, want %v", tm.Sub(t0), step.at)
			}
		}
		<-done
	}
	tk.Stop()
	f.Advance(time.Hour) // a stopped ticker does not block Advance
}

// Reset restarts the period from now, and a tick due before the reset is
// not delivered after it.
func TestFakeTickerReset(t *testing.T) {
	f := NewFake(t0)
	tk := f.NewTicker(500 * time.Millisecond)
	f.Advance(300 * time.Millisecond)
	tk.Reset(500 * time.Millisecond)
	done := make(chan struct{})
	go func() { f.Advance(400 * time.Millisecond); close(done) }() // t0+700: the old period's tick is not due any more
	select {
	case <-done:
	case tm := <-tk.C():
		t.Fatalf("tick at %v, before the reset period ended", tm.Sub(t0))
	}
	done = make(chan struct{})
	go func() { f.Advance(100 * time.Millisecond); close(done) }()
	if tm := <-tk.C(); !tm.Equal(t0.Add(800 * time.Millisecond)) {
		t.Fatalf("tick at %v, want 800ms", tm.Sub(t0))
	}
	<-done

	// A tick being delivered when the ticker is reset is dropped, as a
	// real ticker drops one pending in its channel.
	done = make(chan struct{})
	go func() { f.Advance(500 * time.Millisecond); close(done) }()
	for {
		f.mu.Lock()
		due := f.now.Equal(t0.Add(1300 * time.Millisecond))
		f.mu.Unlock()
		if due {
			break
		}
		runtime.Gosched()
	}
	tk.Reset(time.Second)
	select {
	case <-done:
	case tm := <-tk.C():
		t.Fatalf("stale tick at %v delivered after Reset", tm.Sub(t0))
	}
}

func TestFakeSleep(t *testing.T) {
	f := NewFake(t0)
	ctx := context.Background()
	woke := make(chan error)
	go func() { woke <- f.Sleep(ctx, time.Second) }()
	if err := f.WaitForSleepers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	f.Advance(999 * time.Millisecond)
	if f.Sleepers() != 1 {
		t.Fatal("woke early")
	}
	f.Advance(time.Millisecond)
	if err := <-woke; err != nil {
		t.Fatal(err)
	}

	cctx, cancel := context.WithCancel(ctx)
	go func() { woke <- f.Sleep(cctx, time.Second) }()
	if err := f.WaitForSleepers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-woke; err != context.Canceled {
		t.Fatalf("cancelled sleep returned %v", err)
	}
	if n := f.Sleepers(); n != 0 {
		t.Fatalf("a cancelled sleep is still counted: %d", n)
	}
}

func TestRealSleepCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (Real{}).Sleep(ctx, time.Hour); err != context.Canceled {
		t.Fatalf("got %v", err)
	}
}

func TestFakeAfter(t *testing.T) {
	f := NewFake(time.Unix(100, 0))
	ch := f.After(time.Second)
	if f.Sleepers() != 1 {
		t.Fatalf("%d sleepers, want the After", f.Sleepers())
	}
	f.Advance(999 * time.Millisecond)
	select {
	case <-ch:
		t.Fatal("fired early")
	default:
	}
	f.Advance(time.Millisecond)
	if got := <-ch; !got.Equal(time.Unix(101, 0)) {
		t.Fatalf("fired with %v", got)
	}
	if got := <-f.After(0); !got.Equal(time.Unix(101, 0)) {
		t.Fatalf("After(0) = %v", got)
	}
}
