package live

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/backend/internal/ingest"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// FuzzPostThenSnapshot is the server's property over HTTP: whatever body a
// producer posts to /events, twice (sums and counts carry across posts),
// the server answers it with a 2xx or 4xx and JSON, and GET /snapshot
// then answers 200 with valid JSON.
func FuzzPostThenSnapshot(f *testing.F) {
	at := t0.UnixMilli()
	for _, seed := range []string{
		recorded,
		"",
		" \n\t",
		"[",
		"null",
		`[{"type":"model.load","at":1764690000010,"model":"m","phase":"finished","ms":1,"weightsBytes":1}]`,
		strings.ReplaceAll(recorded, `"tokensPerSecond":80`, `"tokensPerSecond":1e308`),
		strings.ReplaceAll(recorded, `"weightsBytes":100`, `"weightsBytes":9223372036854775807`),
		`{"type":"cache.sample","at":1764690000500,"model":"m","cache":"prefix","bytes":1,"capacityBytes":null,"hits":9223372036854775807,"misses":9223372036854775807}`,
		`{"type":"scheduler.sample","at":9000000000000000,"model":"m","active":1,"capacity":1,"queued":0,"tokensPerSecond":1}`,
		`{"type":"request.finished","at":1764690001500,"model":"\u001b[2J","requestId":"r","finish":"stop","promptTokens":1,"cachedPromptTokens":0,"completionTokens":1,"queueMs":0,"ttftMs":NaN,"totalMs":1}`,
		"data: {\"type\":\"model.load\"}\n\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		b := bus.New()
		clk := clock.NewFake(time.UnixMilli(at))
		l := New(b, Options{Clock: clk})
		defer l.Close()
		app := server.New(server.Options{}, liveRoutes(l, ingest.NewHTTP(b, ingest.Options{Clock: clk}))...)
		for post := range 2 {
			req := httptest.NewRequest("POST", "/api/metrics/events", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/x-ndjson")
			resp, err := app.Test(req, -1)
			if err != nil {
				t.Fatal(err)
			}
			reply, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode >= 500 || !json.Valid(reply) {
				t.Fatalf("post %d: status %d, body %.300q", post+1, resp.StatusCode, reply)
			}
			b.Flush()
			clk.Advance(time.Second)
		}
		clk.Advance(time.Minute)
		resp, err := app.Test(httptest.NewRequest("GET", "/api/metrics/snapshot", nil), -1)
		if err != nil {
			t.Fatal(err)
		}
		snap, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !json.Valid(snap) {
			t.Fatalf("GET /snapshot: status %d, body %.300q", resp.StatusCode, snap)
		}
	})
}
