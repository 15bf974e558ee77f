package benchapi

import (
	"encoding/csv"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/history"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/apierror"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

var histBase = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func histID(i int) string {
	return bench.NewRunID(histBase.Add(time.Duration(i)*time.Minute), fmt.Sprintf("%06x", i))
}

// newHistoryAPI serves the history routes over a history holding good
// entries 0..n-1 and, written under history's key layout
// (e/<startedAt hex>/<id>, i/<id>), the bad values given by index.
func newHistoryAPI(t *testing.T, n int, bad map[int]string) *testAPI {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "history")
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(txn *badger.Txn) error {
		for i, val := range bad {
			key := fmt.Sprintf("e/%016x/%s", uint64(histBase.Add(time.Duration(i)*time.Minute).UnixMilli()), histID(i))
			if err := txn.Set([]byte(key), []byte(val)); err != nil {
				return err
			}
			if err := txn.Set([]byte("i/"+histID(i)), []byte(key)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	hist, err := history.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hist.Close() })
	for i := range n {
		if _, isBad := bad[i]; isBad {
			continue
		}
		start := histBase.Add(time.Duration(i) * time.Minute)
		v := float64(i)
		err := hist.Put(bench.HistoryEntry{ID: histID(i), Profile: "p", StartedAt: start.UnixMilli(), Complete: true,
			Cells: []bench.CompactCell{{Key: "a", Status: bench.CellMeasured, DecodeTokensPerSecond: &v}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	api := &API{History: hist}
	return &testAPI{t: t, app: server.New(server.Options{}, api), api: api}
}

// TestUnreadableEntry: one bad value in history hides nothing else: the
// listing, the CSV and the readable entries answer; the bad one is reported,
// answers a clear error of its own, and can be deleted.
func TestUnreadableEntry(t *testing.T) {
	bad := map[int]string{
		2: "{not json",
		4: `{"id":"someone-else","cells":[]}`, // decodes, but is not the run its key names
	}
	ta := newHistoryAPI(t, 6, bad)

	var hl bench.HistoryList
	r := ta.do("GET", "/history", "")
	if r.status != 200 {
		t.Fatalf("GET /history: %d %s", r.status, r.body)
	}
	r.decode(t, &hl)
	if len(hl.Entries) != 4 || len(hl.Problems) != 2 || hl.Problems[0].ID != histID(4) || hl.Problems[1].ID != histID(2) {
		t.Fatalf("history = %d entries, problems %+v", len(hl.Entries), hl.Problems)
	}
	if n := ta.api.History.Unreadable(); n != 2 {
		t.Fatalf("Unreadable() = %d, want 2", n)
	}

	r = ta.do("GET", "/history?format=csv", "")
	rows, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
	if r.status != 200 || err != nil || len(rows) != 1+4 || r.header.Get(HeaderUnreadable) != "2" {
		t.Fatalf("CSV: %d, %d rows, %v, header %q: %s", r.status, len(rows), err, r.header.Get(HeaderUnreadable), r.body)
	}

	tests := []struct {
		method, path string
		status       int
		errHas       string
	}{
		{"GET", "/history/" + histID(1), 200, ""},
		{"GET", "/history/" + histID(2), fiber.StatusConflict, "entry is unreadable: invalid character"},
		{"GET", "/history/" + histID(4), fiber.StatusConflict, "bench forget"},
		{"DELETE", "/history/" + histID(2), fiber.StatusNoContent, ""},
		{"GET", "/history/" + histID(2), 404, "no finished run"},
		{"DELETE", "/history/" + histID(2), 404, "no finished run"},
		{"DELETE", "/history/" + histID(4), fiber.StatusNoContent, ""},
		{"DELETE", "/history/" + histID(1), fiber.StatusNoContent, ""},
		{"DELETE", "/history/..%2Fx", 404, ""},
	}
	for _, tt := range tests {
		r := ta.do(tt.method, tt.path, "")
		if r.status != tt.status {
			t.Fatalf("%s %s: %d %s", tt.method, tt.path, r.status, r.body)
		}
		if tt.errHas != "" {
			if e := r.apiError(t); !strings.Contains(e.Message, tt.errHas) || e.Type != apierror.TypeInvalidRequest {
				t.Fatalf("%s %s: error %+v", tt.method, tt.path, e)
			}
		}
	}
	hl = bench.HistoryList{}
	ta.do("GET", "/history", "").decode(t, &hl)
	if len(hl.Entries) != 3 || len(hl.Problems) != 0 || ta.api.History.Unreadable() != 0 {
		t.Fatalf("after deletes: %d entries, problems %+v, unreadable %d", len(hl.Entries), hl.Problems, ta.api.History.Unreadable())
	}
}
