package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// healthAt reads the value at path ("ingest.replay.done", "scrape.0.polls")
// in a decoded /healthz report; ok is false where there is none.
func healthAt(report map[string]any, path string) (v any, ok bool) {
	v = report
	for _, key := range strings.Split(path, ".") {
		switch node := v.(type) {
		case map[string]any:
			if v, ok = node[key]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(node) {
				return nil, false
			}
			v = node[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// A serve run with every kind of source lists each in /healthz: POST
// /events, the replay (its counts, and done once it has ended), the
// follower, each scrape target and the proxy (what it published, and its
// rejections).
func TestHealthzListsEverySource(t *testing.T) {
	session := hostSession(time.Now().Add(-10 * time.Minute).UnixMilli()) // 9 core events, 2 ignored
	file := filepath.Join(t.TempDir(), "host.ndjson")
	if err := os.WriteFile(file, []byte(session), 0o644); err != nil {
		t.Fatal(err)
	}
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i, line := range strings.Split(strings.TrimSpace(session), "\n") {
			fmt.Fprintf(w, "id: %d\ndata: %s\n\n", i+1, line)
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer host.Close()
	vllm, err := os.ReadFile(filepath.Join("..", "..", "internal", "scrape", "testdata", "vllm-1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(vllm)
	}))
	defer engine.Close()
	// The proxy's upstream reports a usage given in the request's user
	// field, so one request can claim more tokens than an event may carry
	// (counted, its tokens as unreported); "404" refuses the request,
	// which counts under no model.
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			User string `json:"user"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		if req.User == "404" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"message":"no such model","type":"not_found"}}`)
			return
		}
		fmt.Fprintf(w, `{"id":"c1","model":"m","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":%s,"completion_tokens":2}}`, req.User)
	}))
	defer upstream.Close()

	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--addr", addr, "--home", t.TempDir(), "--replay", file, "--events-url", host.URL,
			"--scrape", engine.URL + ",vllm", "--proxy-to", upstream.URL})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	base := "http://" + addr
	client := &http.Client{Timeout: 5 * time.Second}
	var report map[string]any
	read := func() {
		report = nil
		resp, err := client.Get(base + "/healthz")
		if err != nil {
			return // not listening yet
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(raw, &report); err != nil {
			t.Fatalf("/healthz: %v: %s", err, raw)
		}
	}
	number := func(path string) float64 {
		v, _ := healthAt(report, path)
		n, _ := v.(float64)
		return n
	}
	// Polls /healthz until cond holds, with a deadline: the sources run on
	// their own goroutines, and the proxy may publish after its answer.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(25 * time.Millisecond) {
			if read(); report != nil && cond() {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never happened: /healthz %v", what, report)
			}
		}
	}
	waitFor("the replay, the follower and a scrape", func() bool {
		done, _ := healthAt(report, "ingest.replay.done")
		return done == true && number("ingest.follow.events.accepted") == 9 && number("scrape.0.polls") >= 1
	})
	for _, prompt := range []string{"12", "2000000000", "404"} {
		resp, err := client.Post(base+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"m","user":"`+prompt+`","messages":[{"role":"user","content":"hello"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	waitFor("the proxy's three measurements", func() bool {
		return number("proxy.events.accepted")+number("proxy.events.rejected") == 3
	})

	for _, tc := range []struct {
		path string
		want any // nil: present, any value
	}{
		{"ingest.http.accepted", 0.0},
		{"ingest.replay.file", "host.ndjson"},
		{"ingest.replay.done", true},
		{"ingest.replay.events.accepted", 9.0},
		{"ingest.replay.events.ignored", 2.0},
		{"ingest.replay.events.rejected", 0.0},
		{"ingest.follow.url", host.URL},
		{"ingest.follow.connected", true},
		{"ingest.follow.events.accepted", 9.0},
		{"ingest.follow.events.ignored", 2.0},
		{"ingest.follow.duplicates", 0.0},
		{"scrape.0.url", engine.URL + "/metrics"},
		{"scrape.0.kind", "vllm"},
		{"scrape.0.failures", 0.0},
		{"scrape.0.accepted", nil},
		{"scrape.0.lastPollAt", nil},
		{"proxy.upstream", upstream.URL},
		{"proxy.events.accepted", 3.0}, // one under no model, one without its impossible usage
		{"proxy.events.rejected", 0.0},
	} {
		t.Run(tc.path, func(t *testing.T) {
			got, ok := healthAt(report, tc.path)
			if !ok || (tc.want != nil && got != tc.want) {
				t.Errorf("/healthz %s = %v (present %v), want %v", tc.path, got, ok, tc.want)
			}
		})
	}
}
