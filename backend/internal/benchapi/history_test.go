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
	"github.com/mlx-bun/mlx-metrics/shared/clock"
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
	hist, err := history.Open(dir, history.Options{})
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
			Cells: []bench.CompactCell{{Key: "a", Model: "m", Kind: bench.KindTree, Status: bench.CellMeasured, DecodeTokensPerSecond: &v}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	api := New(nil, hist, nil, nil, Options{})
	return &testAPI{t: t, app: server.New(server.Options{}, routes(api)...), api: api}
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
	if n := ta.api.history.Unreadable(); n != 2 {
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
		// 404 as the original answers an entry it cannot parse, saying why.
		{"GET", "/history/" + histID(2), 404, "entry is unreadable: invalid character"},
		{"GET", "/history/" + histID(4), 404, "bench forget"},
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
	if len(hl.Entries) != 3 || len(hl.Problems) != 0 || ta.api.history.Unreadable() != 0 {
		t.Fatalf("after deletes: %d entries, problems %+v, unreadable %d", len(hl.Entries), hl.Problems, ta.api.history.Unreadable())
	}
}

// TestHistoryFullDisk: with the disk below history's reserve, importing and
// forgetting a run answer 503 of the storage-full type, counted as errors,
// and history is left as it was; reads go on.
func TestHistoryFullDisk(t *testing.T) {
	var free uint64 = history.MinFree
	hist, err := history.Open(t.TempDir(), history.Options{FreeSpace: func(string) (uint64, error) { return free, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { free = history.MinFree; hist.Close() })
	kept := bench.HistoryEntry{ID: histID(0), Profile: "p", StartedAt: histBase.UnixMilli(), Complete: true}
	if err := hist.Put(kept); err != nil {
		t.Fatal(err)
	}
	free = history.MinFree - 1
	var seen []int
	api := New(nil, hist, nil, nil, Options{Clock: clock.NewFake(importNow)})
	ta := &testAPI{t: t, app: server.New(server.Options{OnError: func(_ *fiber.Ctx, status int) { seen = append(seen, status) }}, routes(api)...), api: api}
	tests := []struct {
		name, method, path, body string
	}{
		{"import", "POST", "/history", importRecord(nil)},
		{"forget", "DELETE", "/history/" + kept.ID, ""},
	}
	for _, tt := range tests {
		res := ta.do(tt.method, tt.path, tt.body)
		if res.status != fiber.StatusServiceUnavailable {
			t.Fatalf("%s: status %d (%s), want 503", tt.name, res.status, res.body)
		}
		if e := res.apiError(t); e.Type != apierror.TypeStorageFull || !strings.Contains(e.Message, "storage full") || strings.Contains(e.Message, "/") {
			t.Errorf("%s: error %+v, want type %s saying storage full, no path", tt.name, e, apierror.TypeStorageFull)
		}
	}
	if len(seen) != len(tests) {
		t.Errorf("OnError saw %v, want the %d refusals", seen, len(tests))
	}
	var list bench.HistoryList
	ta.do("GET", "/history", "").decode(t, &list)
	if len(list.Entries) != 1 || list.Entries[0].ID != kept.ID {
		t.Fatalf("history after the refused writes: %+v, want the one entry", list.Entries)
	}
}

// GET /history?host= lists one host's runs (imported ones keep theirs),
// the limit counting them.
func TestHistoryByHost(t *testing.T) {
	ta := newTestAPI(t, 0)
	for i := range 6 {
		host := []string{"studio-1", "studio-2"}[i%2]
		err := ta.api.history.Put(bench.HistoryEntry{ID: histID(i), Profile: "p", StartedAt: histBase.Add(time.Duration(i) * time.Minute).UnixMilli(),
			Complete: true, Machine: bench.Machine{Host: host}, Cells: []bench.CompactCell{}})
		if err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		query string
		want  []string
	}{
		{"?host=studio-2", []string{histID(5), histID(3), histID(1)}},
		{"?host=studio-1&limit=2", []string{histID(4), histID(2)}},
		{"?host=elsewhere", nil},
		{"?limit=2", []string{histID(5), histID(4)}},
	}
	for _, tt := range tests {
		var hl bench.HistoryList
		ta.do("GET", "/history"+tt.query, "").decode(t, &hl)
		var got []string
		for _, e := range hl.Entries {
			got = append(got, e.ID)
		}
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("GET /history%s: %v, want %v", tt.query, got, tt.want)
		}
		// The CSV keeps the same runs (one row each: they have no cells).
		rows, err := csv.NewReader(strings.NewReader(string(ta.do("GET", "/history"+tt.query+"&format=csv", "").body))).ReadAll()
		got = nil
		for _, row := range rows[1:] {
			got = append(got, row[0])
		}
		if err != nil || strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("GET /history%s&format=csv: %v %v, want %v", tt.query, got, err, tt.want)
		}
	}
}

// One list answers at most bench.MaxListBytes of runs, newest first, and
// says it stopped short; a CSV export at most maxCSVBytes, saying so in a
// header. A few runs of many cells and long texts cost gigabytes before.
func TestHistoryListBounded(t *testing.T) {
	ta := newTestAPI(t, 0)
	defer func(list, csv int) { maxListBytes, maxCSVBytes = list, csv }(maxListBytes, maxCSVBytes)
	maxListBytes, maxCSVBytes = 2<<20, 2<<20
	const runs = 6
	note := strings.Repeat("n", 4000)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range runs {
		start := base.Add(time.Duration(i) * time.Second)
		cells := make([]bench.CompactCell, 250) // ~1 MB encoded
		for j := range cells {
			cells[j] = bench.CompactCell{Key: fmt.Sprint(j), Status: bench.CellMeasured, Note: note}
		}
		if err := ta.api.history.Put(bench.HistoryEntry{ID: bench.NewRunID(start, "x"), Profile: "p", StartedAt: start.UnixMilli(), Cells: cells}); err != nil {
			t.Fatal(err)
		}
	}
	r := ta.do("GET", "/history?limit=1000", "")
	var hl bench.HistoryList
	r.decode(t, &hl)
	if !hl.Truncated || len(hl.Entries) == 0 || len(hl.Entries) >= runs || len(r.body) > maxListBytes+(1<<20) {
		t.Fatalf("%d runs in %d bytes, truncated %v; want fewer than %d within %d bytes, truncated",
			len(hl.Entries), len(r.body), hl.Truncated, runs, maxListBytes)
	}
	if want := bench.NewRunID(base.Add((runs-1)*time.Second), "x"); hl.Entries[0].ID != want {
		t.Errorf("first run %s, want the newest %s", hl.Entries[0].ID, want)
	}
	if r := ta.do("GET", "/history?limit=1", ""); strings.Contains(string(r.body), `"truncated"`) {
		t.Errorf("a list within the bound says truncated")
	}

	csv := ta.do("GET", "/history?format=csv", "")
	if csv.status != 200 || csv.header.Get(HeaderTruncated) != "true" || len(csv.body) > maxCSVBytes+(1<<20) {
		t.Fatalf("CSV: %d, %d bytes, %s %q", csv.status, len(csv.body), HeaderTruncated, csv.header.Get(HeaderTruncated))
	}
	if all := ta.do("GET", "/history?format=csv&limit=1", ""); all.header.Get(HeaderTruncated) != "" {
		t.Errorf("a CSV within the bound says truncated")
	}
}
