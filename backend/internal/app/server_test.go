package app

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// Close runs beforeShutdown first, then shuts the server down; a server
// that stopped on its own is not shut down again.
func TestServerClose(t *testing.T) {
	errBefore := errors.New("a part failed to close")
	for _, tc := range []struct {
		name        string
		stopFirst   bool // the listener fails before Close
		beforeErr   error
		wantErr     error
		wantServing bool
	}{
		{name: "serving", wantServing: true},
		{name: "serving, a part's error", beforeErr: errBefore, wantErr: errBefore, wantServing: true},
		{name: "stopped on its own", stopFirst: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			fa := fiber.New(fiber.Config{DisableStartupMessage: true})
			fa.Get("/", func(c *fiber.Ctx) error { return c.SendString("ok") })
			var (
				servingAtBefore bool
				s               *Server
			)
			s = Serve(fa, ln, func(context.Context) error {
				select {
				case <-s.Done():
				default:
					servingAtBefore = true
				}
				return tc.beforeErr
			})
			if tc.stopFirst {
				ln.Close()
				<-s.Done()
			} else {
				// A request answered: the server is serving.
				res, err := http.Get("http://" + ln.Addr().String() + "/")
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
			}
			err = s.Close(context.Background())
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) || tc.wantErr == nil && err != nil {
				t.Fatalf("Close = %v, want %v", err, tc.wantErr)
			}
			if servingAtBefore != tc.wantServing {
				t.Errorf("serving when beforeShutdown ran: %v, want %v", servingAtBefore, tc.wantServing)
			}
			<-s.Done() // Close returned: the server has stopped
			if !tc.stopFirst && s.Err() != nil {
				t.Errorf("Err after Close = %v", s.Err())
			}
			var h Handlers
			if s.Handlers(&h); h != (Handlers{}) {
				t.Errorf("handlers %+v, want none", h)
			}
		})
	}
}
