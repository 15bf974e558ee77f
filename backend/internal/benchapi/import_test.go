package benchapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// importNow is the server's clock in the import tests: a day after the
// records below.
var importNow = time.UnixMilli(1796280000000)

func importRecord(edit func(r *bench.RunRecord)) string {
	r := bench.RunRecord{
		ID: "20261202T100000Z-hand01", Profile: "smoke", Complete: true,
		StartedAt: importNow.Add(-24 * time.Hour).UnixMilli(), FinishedAt: importNow.Add(-24*time.Hour + time.Minute).UnixMilli(),
		Cells: []bench.CellResult{{Key: "m/tree/a", Status: bench.CellMeasured, Samples: []bench.Sample{
			{Phase: bench.PhaseDecode, Run: 1, CompletionTokens: 64, TTFTMs: 12, TotalMs: 1300, DecodeTokensPerSecond: 50},
		}}},
	}
	if edit != nil {
		edit(&r)
	}
	b, _ := json.Marshal(r)
	return string(b)
}

func ptrTo[T any](v T) *T { return &v }

// TestImportRun: POST /history keeps a run.json made elsewhere (a hand
// `bench run`) in history, once; a bad record is a 400 (413 when too large)
// that says why and leaves history as it was.
func TestImportRun(t *testing.T) {
	ta := newTestAPIOpts(t, 1, Options{Clock: clock.NewFake(importNow)})
	tests := []struct {
		name   string
		path   string
		body   string
		status int
		want   string // in the error message
	}{
		{"a run.json", "/history?runDirectory=/home/me/runs/hand01", importRecord(nil), http.StatusCreated, ""},
		{"the same run again", "/history", importRecord(nil), http.StatusConflict, "in history already"},
		{"not JSON", "/history", "run.json", http.StatusBadRequest, "run.json"},
		{"two objects", "/history", importRecord(nil) + importRecord(nil), http.StatusBadRequest, "one JSON object"},
		{"stray brackets after", "/history", importRecord(nil) + "]}}}", http.StatusBadRequest, "nothing after it"},
		{"no id", "/history", `{"profile":"smoke"}`, http.StatusBadRequest, "no id"},
		{"an id that is a path", "/history", importRecord(func(r *bench.RunRecord) { r.ID = "../../etc" }), http.StatusBadRequest, "id:"},
		{"a decode rate past the bounds", "/history", importRecord(func(r *bench.RunRecord) {
			r.ID = "hand02"
			r.Cells[0].Samples[0].DecodeTokensPerSecond = 1e300
		}), http.StatusBadRequest, "decodeTokensPerSecond"},
		// Compact keeps only positive samples: a negative figure would be
		// dropped without a word, not refused.
		{"a negative TTFT sample", "/history", importRecord(func(r *bench.RunRecord) {
			r.ID = "hand05"
			r.Cells[0].Samples[0].TTFTMs = -50
		}), http.StatusBadRequest, "cells[0].samples[0].ttftMs -50"},
		{"a negative cold start", "/history", importRecord(func(r *bench.RunRecord) {
			r.ID = "hand06"
			r.Cells[0].ColdStartMs = ptrTo(-5.0)
		}), http.StatusBadRequest, "coldStartMs -5"},
		{"a negative peak RSS", "/history", importRecord(func(r *bench.RunRecord) {
			r.ID = "hand07"
			r.Cells[0].PeakRSSBytes = -5
		}), http.StatusBadRequest, "peakRssBytes -5"},
		{"finished next year", "/history", importRecord(func(r *bench.RunRecord) {
			r.ID = "hand03"
			r.FinishedAt = importNow.Add(365 * 24 * time.Hour).UnixMilli()
		}), http.StatusBadRequest, "finishedAt"},
		{"over 8 MiB", "/history", importRecord(nil) + strings.Repeat(" ", MaxImportBytes), http.StatusRequestEntityTooLarge, "at most 8 MiB"},
		{"a control character in runDirectory", "/history?runDirectory=%1b%5b2J", importRecord(func(r *bench.RunRecord) { r.ID = "hand04" }), http.StatusBadRequest, "runDirectory"},
	}
	for _, tt := range tests {
		res := ta.do(http.MethodPost, tt.path, tt.body)
		if res.status != tt.status {
			t.Fatalf("%s: status %d (%s), want %d", tt.name, res.status, res.body, tt.status)
		}
		if tt.want != "" {
			if msg := res.apiError(t).Message; !strings.Contains(msg, tt.want) || len(msg) > 600 {
				t.Errorf("%s: message %q, want one about %q", tt.name, msg, tt.want)
			}
		}
	}
	var list bench.HistoryList
	ta.do(http.MethodGet, "/history", "").decode(t, &list)
	if len(list.Entries) != 1 {
		t.Fatalf("history holds %d runs after the imports, want the one good one", len(list.Entries))
	}
	e := list.Entries[0]
	if e.ID != "20261202T100000Z-hand01" || e.RunDirectory != "/home/me/runs/hand01" || !e.Complete ||
		len(e.Cells) != 1 || e.Cells[0].DecodeTokensPerSecond == nil || *e.Cells[0].DecodeTokensPerSecond != 50 {
		t.Errorf("imported entry %+v", e)
	}
}

// FuzzDecodeImport: whatever body and runDirectory a client sends, the
// decoder answers an entry that passes Check and encodes, or an error with
// a bounded message; it never panics.
func FuzzDecodeImport(f *testing.F) {
	for _, seed := range []string{importRecord(nil), "", "{", "null", `{"id":"x"}`, `{"id":5}`, `{"id":"a","startedAt":1e300}`,
		importRecord(func(r *bench.RunRecord) { r.Cells[0].PeakRSSBytes = 1 << 62 }),
		importRecord(func(r *bench.RunRecord) { r.Cells[0].Samples[0].TTFTMs = -5 })} {
		f.Add([]byte(seed), "/home/me/runs/x")
	}
	now := clock.NewFake(importNow)
	f.Fuzz(func(t *testing.T, body []byte, dir string) {
		e, err := DecodeImport(body, dir, now)
		if err != nil {
			if len(err.Error()) > 600 {
				t.Fatalf("unbounded message: %d bytes", len(err.Error()))
			}
			return
		}
		if err := json.Unmarshal(body, new(any)); err != nil {
			t.Fatalf("decoded an entry from a body that is not one JSON value: %v", err)
		}
		if err := e.Check(importNow); err != nil {
			t.Fatalf("decoded an entry that fails Check: %v", err)
		}
		if _, err := json.Marshal(e); err != nil {
			t.Fatalf("decoded an entry that does not encode: %v", err)
		}
	})
}
