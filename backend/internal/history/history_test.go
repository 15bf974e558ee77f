package history

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

var base = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func entry(i int) bench.HistoryEntry {
	start := base.Add(time.Duration(i) * time.Minute)
	v := float64(i)
	return bench.HistoryEntry{
		ID:         bench.NewRunID(start, fmt.Sprintf("%06x", i)),
		Profile:    "smoke",
		Scope:      bench.ScopeScoped,
		StartedAt:  start.UnixMilli(),
		FinishedAt: start.Add(5 * time.Second).UnixMilli(),
		DurationMs: 5000,
		Complete:   true,
		Cells: []bench.CompactCell{
			{Key: "m/tree/a", Model: "m", Kind: bench.KindTree, Configuration: "a", Status: bench.CellMeasured, DecodeTokensPerSecond: &v},
			{Key: "m/reference/b", Model: "m", Kind: bench.KindReference, Configuration: "b", Status: bench.CellFailed, Note: "decode: timeout, retried once"},
		},
	}
}

func open(t testing.TB) *Store {
	t.Helper()
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestOrderingAndLimits(t *testing.T) {
	s := open(t)
	const n = 10000
	// Insert out of time order: ordering must come from the keys.
	for i := range n {
		j := (i * 7919) % n // 7919 is prime to n, so this is a permutation
		if err := s.Put(entry(j)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		limit, want int
	}{{1, 1}, {50, 50}, {1000, 1000}, {0, n}, {n + 5, n}}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.limit), func(t *testing.T) {
			got, problems, err := s.List(tt.limit)
			if err != nil || len(problems) != 0 {
				t.Fatal(err)
			}
			if len(got) != tt.want {
				t.Fatalf("len = %d, want %d", len(got), tt.want)
			}
			for k, e := range got {
				if want := entry(n - 1 - k).ID; e.ID != want {
					t.Fatalf("entry %d = %s, want %s", k, e.ID, want)
				}
			}
		})
	}
}

func TestGetAndReplace(t *testing.T) {
	s := open(t)
	e := entry(3)
	if err := s.Put(e); err != nil {
		t.Fatal(err)
	}
	// Re-putting with another start time must not leave the old key behind.
	e.StartedAt += 1000
	e.Complete = false
	e.Problems = []string{"cell x: failed"}
	if err := s.Put(e); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(e.ID)
	if err != nil || got.Complete || len(got.Problems) != 1 || *got.Cells[0].DecodeTokensPerSecond != 3 {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if all, _, _ := s.List(0); len(all) != 1 {
		t.Fatalf("replaced entry listed %d times", len(all))
	}
	for _, id := range []string{"nope", "", "../x", "a/b", e.ID + "x"} {
		if _, err := s.Get(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q) err = %v", id, err)
		}
	}
	if err := s.Put(bench.HistoryEntry{ID: "../evil"}); err == nil {
		t.Error("Put accepted a malformed id")
	}
}

// PutNew keeps a new run and leaves one history holds as it is.
func TestPutNew(t *testing.T) {
	s := open(t)
	e := entry(4)
	if err := s.PutNew(e); err != nil {
		t.Fatal(err)
	}
	again := e
	again.Complete = false
	if err := s.PutNew(again); !errors.Is(err, ErrExists) {
		t.Fatalf("PutNew of a kept run: %v, want ErrExists", err)
	}
	if got, err := s.Get(e.ID); err != nil || !got.Complete {
		t.Fatalf("the kept run changed: %+v, %v", got, err)
	}
	if err := s.PutNew(bench.HistoryEntry{ID: "../evil"}); err == nil || errors.Is(err, ErrExists) {
		t.Errorf("PutNew of a malformed id: %v", err)
	}
}

func TestPersists(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(entry(1)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.Get(entry(1).ID); err != nil || got.ID != entry(1).ID {
		t.Fatalf("entry lost on reopen: %+v %v", got, err)
	}
}

func TestCSV(t *testing.T) {
	var buf bytes.Buffer
	cw, err := NewCSVWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	noCells := entry(2)
	noCells.Cells = nil
	noCells.Complete = false
	hostile := entry(3)
	hostile.Profile = "=HYPERLINK(\"http://x\",\"y\")"
	hostile.Machine.Chip = "@SUM(1)"
	hostile.ExitCode = -1
	hostile.Cells = []bench.CompactCell{{Key: "+cmd", Model: "-2+3", Configuration: "\t=1", Note: "fine = ok", Status: bench.CellFailed}}
	// Text from an imported run.json: raw controls a terminal (cat, less)
	// or a spreadsheet would act on, a bidi override, invalid UTF-8.
	raw := entry(4)
	raw.Profile = "p\x1b]8;;http://x\x07link\x1b]8;;\x07"
	raw.Machine.Chip = "M3\u202eXaM"
	raw.Cells = []bench.CompactCell{{Key: "k\x00", Model: "m\xff", Note: "line\nbreak\r\tend", Status: bench.CellFailed}}
	for _, e := range []bench.HistoryEntry{entry(1), noCells, hostile, raw} {
		if err := cw.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := cw.Flush(); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range CSVHeader {
		col[h] = i
	}
	tests := []struct {
		row    int
		column string
		want   string
	}{
		{0, "id", "id"},
		{1, "id", entry(1).ID},
		{1, "startedAt", "2026-12-02T12:01:00Z"},
		{1, "cellKey", "m/tree/a"},
		{1, "decodeTokensPerSecond", "1"},
		{1, "complete", "true"},
		{2, "cellKey", "m/reference/b"},
		{2, "decodeTokensPerSecond", ""},
		{2, "note", "decode: timeout, retried once"},
		{3, "id", noCells.ID},
		{3, "complete", "false"},
		{3, "cellKey", ""},
		// Spreadsheet formulas from plan text are made inert; figures
		// (a negative exit code) are left as numbers.
		{4, "profile", "'=HYPERLINK(\"http://x\",\"y\")"},
		{4, "chip", "'@SUM(1)"},
		{4, "cellKey", "'+cmd"},
		{4, "model", "'-2+3"},
		{4, "configuration", "\uFFFD=1"},
		{4, "note", "fine = ok"},
		{4, "exitCode", "-1"},
		// Controls, bidi controls and invalid UTF-8 are U+FFFD
		// (printable's rule for outside text), line breaks too.
		{5, "profile", "p\uFFFD]8;;http://x\uFFFDlink\uFFFD]8;;\uFFFD"},
		{5, "chip", "M3\uFFFDXaM"},
		{5, "cellKey", "k\uFFFD"},
		{5, "model", "m\uFFFD"},
		{5, "note", "line\uFFFDbreak\uFFFD\uFFFDend"},
	}
	if len(rows) != 6 {
		t.Fatalf("rows = %d, want 6:\n%v", len(rows), rows)
	}
	for _, tt := range tests {
		if got := rows[tt.row][col[tt.column]]; got != tt.want {
			t.Errorf("row %d %s = %q, want %q", tt.row, tt.column, got, tt.want)
		}
	}
}

// BenchmarkList50 is GET /history's default page over histories of growing
// size: its cost must not grow with the history.
func BenchmarkList50(b *testing.B) {
	for _, size := range []int{1000, 10000} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			s := open(b)
			for i := range size {
				if err := s.Put(entry(i)); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				got, _, err := s.List(50)
				if err != nil || len(got) != 50 {
					b.Fatal(len(got), err)
				}
			}
		})
	}
}

func BenchmarkGet(b *testing.B) {
	s := open(b)
	for i := range 10000 {
		if err := s.Put(entry(i)); err != nil {
			b.Fatal(err)
		}
	}
	id := entry(5000).ID
	for b.Loop() {
		if _, err := s.Get(id); err != nil {
			b.Fatal(err)
		}
	}
}

// putRaw stores val as entry i's value, as a bad write or a flipped byte
// would leave it.
func putRaw(t *testing.T, s *Store, i int, val string) {
	t.Helper()
	e := entry(i)
	err := s.db.Update(func(txn *badger.Txn) error {
		if err := txn.Set(entryKey(e), []byte(val)); err != nil {
			return err
		}
		return txn.Set([]byte(indexPrefix+e.ID), entryKey(e))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestUnreadable(t *testing.T) {
	tests := []struct {
		name string
		val  string
		hide string // what the problem's message must not quote
	}{
		{"torn json", `{"id":`, ""},
		{"binary", "\x00\xff\x10", ""},
		{"another run", `{"id":"x"}`, ""},
		{"wrong type", `{"id":5}`, ""},
		{"another run, named by a path", `{"id":"/home/alice/.mlx-metrics/metrics/history/000001.vlog"}`, "/home/alice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			for i := range 3 {
				if err := s.Put(entry(i)); err != nil {
					t.Fatal(err)
				}
			}
			putRaw(t, s, 1, tt.val)
			got, problems, err := s.List(0)
			if err != nil || len(got) != 2 || len(problems) != 1 || problems[0].ID != entry(1).ID {
				t.Fatalf("List = %d entries, %+v, %v", len(got), problems, err)
			}
			if msg := problems[0].Message; tt.hide != "" && strings.Contains(msg, tt.hide) {
				t.Fatalf("the problem %q quotes a path", msg)
			}
			// The limit counts readable entries.
			if got, _, _ := s.List(2); len(got) != 2 {
				t.Fatalf("List(2) = %d entries", len(got))
			}
			if _, err := s.Get(entry(1).ID); !errors.Is(err, ErrUnreadable) {
				t.Fatalf("Get err = %v", err)
			}
			if s.Unreadable() != 1 {
				t.Fatalf("Unreadable = %d", s.Unreadable())
			}
			if err := s.Delete(entry(1).ID); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(entry(1).ID); !errors.Is(err, ErrNotFound) {
				t.Fatalf("second Delete err = %v", err)
			}
			if got, problems, _ := s.List(0); len(got) != 2 || len(problems) != 0 || s.Unreadable() != 0 {
				t.Fatalf("after Delete: %d entries, %+v", len(got), problems)
			}
		})
	}
}

// TestDeleteWithBadIndex: an entry whose index entry is lost or damaged is
// still found, by its key, and deleted.
func TestDeleteWithBadIndex(t *testing.T) {
	for _, idx := range []string{"", "garbage"} {
		s := open(t)
		e := entry(1)
		if err := s.Put(e); err != nil {
			t.Fatal(err)
		}
		s.db.Update(func(txn *badger.Txn) error {
			if idx == "" {
				return txn.Delete([]byte(indexPrefix + e.ID))
			}
			return txn.Set([]byte(indexPrefix+e.ID), []byte(idx))
		})
		if got, err := s.Get(e.ID); err != nil || got.ID != e.ID {
			t.Fatalf("index %q: Get = %v", idx, err)
		}
		if err := s.Delete(e.ID); err != nil {
			t.Fatalf("index %q: Delete = %v", idx, err)
		}
		if got, _, _ := s.List(0); len(got) != 0 {
			t.Fatalf("index %q: still listed", idx)
		}
	}
}

// TestFullDisk: below MinFree free, every write refuses with ErrFull and
// leaves history as it was; reads go on; with room again, writes do too.
func TestFullDisk(t *testing.T) {
	var free uint64 = MinFree
	s, err := Open(t.TempDir(), Options{FreeSpace: func(string) (uint64, error) { return free, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { free = MinFree; s.Close() })
	if err := s.Put(entry(0)); err != nil {
		t.Fatal(err)
	}
	free = MinFree - 1
	tests := []struct {
		name  string
		write func() error
	}{
		{"Put", func() error { return s.Put(entry(1)) }},
		{"Put replacing", func() error { return s.Put(entry(0)) }},
		{"PutNew", func() error { return s.PutNew(entry(2)) }},
		{"Delete", func() error { return s.Delete(entry(0).ID) }},
	}
	for _, tt := range tests {
		if err := tt.write(); !errors.Is(err, ErrFull) {
			t.Errorf("%s on a full disk: %v, want ErrFull", tt.name, err)
		}
	}
	got, _, err := s.List(0)
	if err != nil || len(got) != 1 || got[0].ID != entry(0).ID {
		t.Fatalf("history after refused writes: %d entries, %v; want entry 0 alone", len(got), err)
	}
	if _, err := s.Get(entry(0).ID); err != nil {
		t.Fatalf("Get on a full disk: %v", err)
	}
	free = MinFree
	if err := s.PutNew(entry(1)); err != nil {
		t.Fatalf("PutNew with room again: %v", err)
	}
	if err := s.Delete(entry(0).ID); err != nil {
		t.Fatalf("Delete with room again: %v", err)
	}
}

// TestEachHost: Each(host) lists one host's readable runs; another host's
// are skipped without being decoded whole, and an entry whose host cannot
// be read is reported as before.
func TestEachHost(t *testing.T) {
	s := open(t)
	for i := range 4 {
		e := entry(i)
		e.Machine.Host = []string{"a", "b"}[i%2]
		if err := s.Put(e); err != nil {
			t.Fatal(err)
		}
	}
	// Host b's, but its cells are not a list: only a full decode fails.
	putRaw(t, s, 1, `{"id":"`+entry(1).ID+`","machine":{"host":"b"},"cells":5}`)
	putRaw(t, s, 2, `{"id":`) // torn: its host cannot be read either
	tests := []struct {
		host     string
		ids      []string
		problems []string
	}{
		{"", []string{entry(3).ID, entry(0).ID}, []string{entry(2).ID, entry(1).ID}},
		{"a", []string{entry(0).ID}, []string{entry(2).ID}},
		{"b", []string{entry(3).ID}, []string{entry(2).ID, entry(1).ID}},
		{"c", nil, []string{entry(2).ID}},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			var ids, problems []string
			ps, err := s.Each(0, tt.host, func(e bench.HistoryEntry) error { ids = append(ids, e.ID); return nil })
			for _, p := range ps {
				problems = append(problems, p.ID)
			}
			if err != nil || !slices.Equal(ids, tt.ids) || !slices.Equal(problems, tt.problems) {
				t.Errorf("Each(%q) = %v, problems %v, %v; want %v, problems %v", tt.host, ids, problems, err, tt.ids, tt.problems)
			}
		})
	}
}
