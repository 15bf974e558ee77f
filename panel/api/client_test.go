package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

func TestClient(t *testing.T) {
	var gotBody map[string]string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/metrics/bench/profiles", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(bench.ProfileList{Profiles: []bench.Profile{{Name: "smoke", Scope: "all", Cells: 2}}})
	})
	mux.HandleFunc("POST /api/metrics/bench", func(w http.ResponseWriter, r *http.Request) {
		json.NewDecoder(r.Body).Decode(&gotBody)
		if gotBody["profile"] == "busy" {
			w.WriteHeader(http.StatusConflict)
			w.Write([]byte(`{"error":{"message":"the GPU is held by job j1","type":"invalid_request_error"}}`))
			return
		}
		w.WriteHeader(http.StatusAccepted)
		json.NewEncoder(w).Encode(bench.Job{ID: "j2", Profile: gotBody["profile"], Status: bench.StatusQueued}.View())
	})
	mux.HandleFunc("DELETE /api/metrics/bench/{id}", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(bench.Job{ID: r.PathValue("id"), Status: bench.StatusCancelled}.View())
	})
	mux.HandleFunc("GET /api/metrics/history", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("limit") != "20" {
			http.Error(w, "bad limit", http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(bench.HistoryList{Entries: []bench.HistoryEntry{{ID: "r1"}}})
	})
	mux.HandleFunc("GET /api/metrics/bench", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte("boom"))
	})
	mux.HandleFunc("GET /api/metrics/history/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "long" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusBadGateway)
		w.Write([]byte(strings.Repeat("a", 299) + "ééé"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := &Client{Base: srv.URL + "/api/metrics/"}
	ctx := context.Background()

	tests := []struct {
		name    string
		call    func() (any, error)
		want    any
		wantErr *Error
	}{
		{"profiles", func() (any, error) { p, err := c.Profiles(ctx); return len(p), err }, 1, nil},
		{"start", func() (any, error) { j, err := c.Start(ctx, "smoke"); return j.ID + "/" + j.Profile, err }, "j2/smoke", nil},
		{"start refused", func() (any, error) { _, err := c.Start(ctx, "busy"); return nil, err }, nil, &Error{409, "the GPU is held by job j1"}},
		{"cancel", func() (any, error) { j, err := c.Cancel(ctx, "j 1"); return j.ID, err }, "j 1", nil},
		{"history", func() (any, error) { h, err := c.History(ctx, 20); return len(h.Entries), err }, 1, nil},
		{"plain error", func() (any, error) { _, err := c.Jobs(ctx); return nil, err }, nil, &Error{500, "boom"}},
		{"no route", func() (any, error) { _, err := c.Entry(ctx, "nope"); return nil, err }, nil, &Error{404, "404 page not found"}},
		{"long error cut on a character", func() (any, error) { _, err := c.Entry(ctx, "long"); return nil, err }, nil, &Error{502, strings.Repeat("a", 299) + "…"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.call()
			if tt.wantErr != nil {
				var e *Error
				if !errors.As(err, &e) || *e != *tt.wantErr {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
	if got := c.ReportURL("j/1"); got != srv.URL+"/api/metrics/bench/j%2F1/report" {
		t.Errorf("ReportURL = %s", got)
	}
}

// A token goes with changes only, as a bearer token.
func TestClientToken(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Method+" "+r.Header.Get("Authorization"))
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	ctx := context.Background()
	c := &Client{Base: srv.URL + "/api/metrics", Token: "s3cret"}
	c.Jobs(ctx)
	c.Start(ctx, "smoke")
	c.Cancel(ctx, "j1")
	(&Client{Base: srv.URL + "/api/metrics"}).Start(ctx, "smoke")
	want := []string{"GET ", "POST Bearer s3cret", "DELETE Bearer s3cret", "POST "}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Errorf("requests %q, want %q", seen, want)
	}
}

// A backend that does not answer, or is not there, is said in words that
// name it, never as Go's "context deadline exceeded" or a fetch error.
func TestClientNoAnswer(t *testing.T) {
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // never answers: the client's deadline ends the call
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	defer slow.Close()
	defer close(hang)
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL
	gone.Close() // nothing listens there any more

	for _, tc := range []struct {
		name, base string
		timeout    time.Duration
		want       error
		text       string
	}{
		{"no answer in time", slow.URL + "/api/metrics", 100 * time.Millisecond, ErrTimeout,
			"no answer in time from the backend at " + slow.URL + "/api/metrics"},
		{"nothing listening", goneURL + "/api/metrics", time.Minute, ErrUnreachable,
			"cannot reach the backend at " + goneURL + "/api/metrics"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			_, err := (&Client{Base: tc.base}).Jobs(ctx)
			if !errors.Is(err, tc.want) || err.Error() != tc.text {
				t.Errorf("err = %v, want %q", err, tc.text)
			}
		})
	}
}
