package jobs

import (
	"context"
	"testing"
	"time"
)

// TestWatch: a watcher is woken by a new job and by the job's end, and
// told to stop once the service closes.
func TestWatch(t *testing.T) {
	h := newHarness(t, t.TempDir(), 4)
	woken := func(what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(wait): // a safeguard against a hang
			t.Fatalf("not woken by %s", what)
		}
	}
	ch, closing := h.svc.Watch()
	if closing {
		t.Fatal("closing before Close")
	}
	j := h.submit("ok")
	woken("a submitted job", ch)
	h.done(j.ID)
	// The job's end was a change: a watch taken before it was woken; one
	// taken after stays open until the next change.
	after, _ := h.svc.Watch()
	select {
	case <-after:
		t.Fatal("woken with no change since the watch")
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := h.svc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	woken("Close", after)
	if _, closing := h.svc.Watch(); !closing {
		t.Fatal("Watch after Close does not say closing")
	}
}
