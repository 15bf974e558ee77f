package main

import (
	"strings"
	"testing"
	"time"
)

func TestReadGIN(t *testing.T) {
	log := strings.Join([]string{
		`time=2026-12-07T20:25:36.746Z level=INFO source=server.go:619 msg="llama runner started in 0.26 seconds"`,
		`[GIN] 2026/12/07 - 20:25:38 | 200 |  2.308591486s |       127.0.0.1 | POST     "/v1/completions"`,
		`[GIN] 2026/12/07 - 20:25:38 | 200 |      35.2µs |       127.0.0.1 | GET      "/v1/models"`,
		`[GIN] 2026/12/07 - 20:25:39 | 200 |  888.243197ms |       127.0.0.1 | POST     "/v1/chat/completions"`,
		`[GIN] 2026/12/07 - 20:25:40 | 500 |      812µs |       127.0.0.1 | POST     "/v1/completions"`,
		`[GIN] 2026/12/07 - 20:25:41 | 200 |  1m2.5s |       127.0.0.1 | POST     "/api/generate"`,
		`[GIN] 2026/12/07 - 20:25:42 | 200 |  1m2.5s |       127.0.0.1 | POST     "/v1/completions"`,
		`[GIN] 2026/12/07 - 20:25:42 | 200 |  not-a-duration |       127.0.0.1 | POST     "/v1/completions"`,
	}, "\n")
	got, err := readGIN(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	want := []logged{
		{"200", 2308591486 * time.Nanosecond, "/v1/completions"},
		{"200", 888243197 * time.Nanosecond, "/v1/chat/completions"},
		{"500", 812 * time.Microsecond, "/v1/completions"},
		{"200", 62500 * time.Millisecond, "/api/generate"},
		{"200", 62500 * time.Millisecond, "/v1/completions"},
	}
	if len(got) != len(want) {
		t.Fatalf("read %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// FuzzReadGIN: any log reads without a panic, every line read a
// completions request with a non-negative latency.
func FuzzReadGIN(f *testing.F) {
	f.Add(`[GIN] 2026/12/07 - 20:25:38 | 200 |  2.308591486s |       127.0.0.1 | POST     "/v1/completions"`)
	f.Add("[GIN] x | 200 | -5s | y | POST \"/v1/chat/completions\"\n")
	f.Fuzz(func(t *testing.T, log string) {
		got, _ := readGIN(strings.NewReader(log))
		for _, l := range got {
			if !strings.HasPrefix(l.endpoint, "/v1/") && !strings.HasPrefix(l.endpoint, "/api/") || len(l.status) != 3 || l.latency < 0 {
				t.Errorf("read %+v", l)
			}
		}
	})
}
