package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestRunSequential: every side gets its N requests a round, one at a
// time (never two in flight), and request i of a round starts at side
// i mod the number of sides.
func TestRunSequential(t *testing.T) {
	var mu sync.Mutex
	var order []string
	inFlight := 0
	handler := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			inFlight++
			if inFlight > 1 {
				t.Errorf("%s: %d requests in flight", name, inFlight)
			}
			order = append(order, name)
			mu.Unlock()
			defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 3 {
				fmt.Fprintf(w, "data: {\"text\":\"%d\"}\n\n", i)
				w.(http.Flusher).Flush()
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
		}
	}
	var sides []*side
	for _, name := range []string{"direct", "a", "b"} {
		srv := httptest.NewServer(handler(name))
		defer srv.Close()
		sides = append(sides, &side{name: name, url: srv.URL, client: srv.Client()})
	}
	cfg := config{rounds: 2, sequential: 4, tokens: 3}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := runSequential(ctx, cfg, sides, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	var want []string
	for range cfg.rounds {
		for i := range cfg.sequential {
			for k := range sides {
				want = append(want, sides[(i+k)%len(sides)].name)
			}
		}
	}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("requests went to\n%v\nwant\n%v", order, want)
	}
}
