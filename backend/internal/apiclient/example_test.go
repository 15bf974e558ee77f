package apiclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/mlx-bun/mlx-metrics/backend/internal/apiclient"
	"github.com/mlx-bun/mlx-metrics/shared/apierror"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

func Example() {
	// A stand-in for `mlx-metrics serve`, on 127.0.0.1.
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/metrics/history", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, bench.HistoryList{Entries: []bench.HistoryEntry{
			{ID: "20261202T100000Z-bbbb", Profile: "standard", Complete: true},
		}})
	})
	mux.HandleFunc("GET /api/metrics/history/{id}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, apierror.New(http.StatusNotFound, "no finished run "+r.PathValue("id")+" in history"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	c, err := apiclient.New(srv.URL, apiclient.Options{Token: "secret"})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	list, err := c.History(ctx, 5)
	if err != nil {
		panic(err)
	}
	for _, e := range list.Entries {
		fmt.Println(e.ID, e.Profile, e.Complete)
	}

	_, err = c.HistoryEntry(ctx, "nope")
	fmt.Println(err)
	if ae, ok := errors.AsType[*apiclient.Error](err); ok {
		fmt.Println(ae.Status, ae.Type)
	}
	// Output:
	// 20261202T100000Z-bbbb standard true
	// GET /history/nope: no finished run nope in history (404)
	// 404 invalid_request_error
}
