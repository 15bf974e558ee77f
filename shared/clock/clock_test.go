package clock

import (
	"context"
	"runtime"
	"slices"
	"sync"
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
	for deadline := time.Now().Add(10 * time.Second); ; { // until the tick at 1.3 s is offered
		if time.Now().After(deadline) {
			t.Fatal("the tick at 1.3 s was never offered")
		}
		f.mu.Lock()
		offered := f.offering == 1
		f.mu.Unlock()
		if offered {
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

func TestSleepUntil(t *testing.T) {
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		until   time.Duration // since t0
		sleeper bool          // the call waits for an Advance
		want    error
	}{
		{"past", ctx, -time.Second, false, nil},
		{"now", ctx, 0, false, nil},
		{"past, cancelled", cancelled, -time.Second, false, context.Canceled},
		{"future", ctx, time.Second, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFake(t0)
			woke := make(chan error, 1)
			go func() { woke <- SleepUntil(tt.ctx, f, t0.Add(tt.until)) }()
			if tt.sleeper {
				if err := f.WaitForSleepers(ctx, 1); err != nil {
					t.Fatal(err)
				}
				f.Advance(tt.until)
			}
			if err := <-woke; err != tt.want {
				t.Fatalf("SleepUntil = %v, want %v", err, tt.want)
			}
			if !f.Now().Equal(t0.Add(max(tt.until, 0))) {
				t.Fatalf("clock moved to %v", f.Now())
			}
		})
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

// An AfterFunc runs inside the Advance that reaches it, in the order the
// funcs fall due, and not at all once stopped.
func TestFakeAfterFunc(t *testing.T) {
	tests := []struct {
		name     string
		after    []time.Duration // one AfterFunc each, named by index
		stop     int             // index stopped before advancing; -1 for none
		advances []time.Duration
		want     [][]int // the funcs run by each advance
	}{
		{"runs when due", []time.Duration{time.Second}, -1,
			[]time.Duration{999 * time.Millisecond, time.Millisecond, time.Hour}, [][]int{nil, {0}, nil}},
		{"in the order due", []time.Duration{3 * time.Second, time.Second, 2 * time.Second}, -1,
			[]time.Duration{time.Minute}, [][]int{{1, 2, 0}}},
		{"stopped", []time.Duration{time.Second, time.Second}, 0,
			[]time.Duration{time.Second}, [][]int{{1}}},
		{"not yet due: zero waits for an Advance", []time.Duration{0}, -1,
			[]time.Duration{0}, [][]int{{0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFake(t0)
			var ran []int
			timers := make([]Timer, len(tt.after))
			for i, d := range tt.after {
				timers[i] = f.AfterFunc(d, func() { ran = append(ran, i) })
			}
			if len(ran) != 0 {
				t.Fatalf("ran %v before any Advance", ran)
			}
			if tt.stop >= 0 {
				if !timers[tt.stop].Stop() || timers[tt.stop].Stop() {
					t.Error("Stop: want true once, then false")
				}
			}
			if f.Sleepers() != 0 {
				t.Errorf("%d sleepers: an AfterFunc is none", f.Sleepers())
			}
			for i, d := range tt.advances {
				ran = nil
				f.Advance(d)
				if !slices.Equal(ran, tt.want[i]) {
					t.Errorf("advance %d: ran %v, want %v", i, ran, tt.want[i])
				}
			}
			for i, tm := range timers {
				if tm.Stop() {
					t.Errorf("timer %d stopped after it ran or was stopped", i)
				}
			}
		})
	}
}

// A sleeper due at the same instant as a timer wakes after the timer ran,
// so what the sleeper does next never races what the timer does.
func TestFakeTimerBeforeSleeper(t *testing.T) {
	f := NewFake(t0)
	var mu sync.Mutex
	var order []string
	f.AfterFunc(time.Second, func() {
		for range 100 {
			runtime.Gosched() // a sleeper already woken would run meanwhile
		}
		mu.Lock()
		order = append(order, "timer")
		mu.Unlock()
	})
	woke := make(chan struct{})
	go func() {
		_ = f.Sleep(context.Background(), time.Second)
		mu.Lock()
		order = append(order, "sleeper")
		mu.Unlock()
		close(woke)
	}()
	if err := f.WaitForSleepers(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	f.Advance(time.Second)
	<-woke
	if !slices.Equal(order, []string{"timer", "sleeper"}) {
		t.Errorf("order %v, want the timer first", order)
	}
}

func TestRealAfterFunc(t *testing.T) {
	done := make(chan struct{})
	(Real{}).AfterFunc(0, func() { close(done) })
	<-done
	if (Real{}).AfterFunc(time.Hour, func() {}).Stop() != true {
		t.Error("a pending real timer did not stop")
	}
}
