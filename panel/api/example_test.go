package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/mlx-bun/mlx-metrics/panel/api"
)

// The client calls one backend's bench routes; a refusal comes back as an
// *api.Error with the API's own message, an unreachable backend as
// api.ErrUnreachable.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/metrics/bench/profiles":
			fmt.Fprint(w, `{"profiles":[{"name":"smoke","scope":"all","cells":2},{"name":"standard","scope":"all","cells":4}]}`)
		case "/api/metrics/bench":
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"error":{"message":"the GPU is held by job j1","type":"invalid_request_error"}}`)
		}
	}))
	defer srv.Close()
	c := &api.Client{Base: srv.URL + "/api/metrics"}
	ctx := context.Background()

	ps, _ := c.Profiles(ctx)
	fmt.Println(len(ps), ps[0].Name)

	_, err := c.Start(ctx, "smoke")
	var refused *api.Error
	fmt.Println(errors.As(err, &refused), refused.Status, refused.Message)

	gone := &api.Client{Base: "http://127.0.0.1:1/api/metrics"}
	_, err = gone.Jobs(ctx)
	fmt.Println(errors.Is(err, api.ErrUnreachable))
	// Output:
	// 2 smoke
	// true 409 the GPU is held by job j1
	// true
}
