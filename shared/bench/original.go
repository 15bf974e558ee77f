package bench

import (
	"errors"
	"fmt"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/strictjson"
)

// The original TypeScript module kept one JSON file per finished run in
// <home>/metrics/history/ (its bench.ts: <id>.json, a BenchHistoryEntry of
// its protocol.ts): times as ISO text, machine null when unknown, and each
// tree cell named by its tree (baseline or candidate) beside its
// configuration. That is the shape the API shows a run in (RunView, less
// its millisecond additions, which the original did not write) with other
// cells; Entry makes this module's history entry of it.
type OriginalEntry struct {
	RunView
	Cells []OriginalCell `json:"cells"` // in place of RunView's
}

// OriginalCell is the original's BenchCell: CompactCell's figures, with
// the tree or reference that ran it.
type OriginalCell struct {
	CompactCell
	Tree      string `json:"tree,omitempty"`
	Reference string `json:"reference,omitempty"`
}

// DecodeOriginalEntry reads one of the original's history files into this
// module's entry, held to HistoryEntry.Check as an imported run is. Errors
// quote no unbounded input.
func DecodeOriginalEntry(data []byte, now time.Time) (HistoryEntry, error) {
	var o OriginalEntry
	if err := strictjson.Decode(data, &o, false); errors.Is(err, strictjson.ErrTrailing) {
		return HistoryEntry{}, errors.New("not one JSON object: something follows it")
	} else if err != nil {
		return HistoryEntry{}, fmt.Errorf("not the original's history entry: %.200s", err)
	}
	if o.ID == "" {
		return HistoryEntry{}, errors.New("no id (is it one of the original's history entries?)")
	}
	e, err := o.Entry()
	if err != nil {
		return HistoryEntry{}, err
	}
	if err := e.Check(now); err != nil {
		return HistoryEntry{}, err
	}
	return e, nil
}

// Entry is o as this module keeps it. A tree cell's configuration gains
// its tree ("default/candidate", as the cell's key says it), since both
// trees ran each configuration; a reference cell's is its reference.
func (o OriginalEntry) Entry() (HistoryEntry, error) {
	started, err := isoMillis(o.StartedAt)
	if err != nil {
		return HistoryEntry{}, fmt.Errorf("startedAt: %w", err)
	}
	// The original always wrote finishedAt; null would mean unknown, and
	// its duration then says when it ended.
	finished := started + o.DurationMs
	if o.FinishedAt != nil {
		if finished, err = isoMillis(*o.FinishedAt); err != nil {
			return HistoryEntry{}, fmt.Errorf("finishedAt: %w", err)
		}
	}
	e := o.RunView.Entry()
	e.StartedAt, e.FinishedAt = started, finished
	e.Cells = make([]CompactCell, len(o.Cells))
	for i, c := range o.Cells {
		cell := c.CompactCell
		switch {
		case c.Tree != "" && cell.Configuration != "":
			cell.Configuration += "/" + c.Tree
		case c.Tree != "":
			cell.Configuration = c.Tree
		case c.Reference != "" && cell.Configuration == "":
			cell.Configuration = c.Reference
		}
		e.Cells[i] = cell
	}
	return e, nil
}

// isoMillis reads the original's times: JavaScript's toISOString.
func isoMillis(s string) (int64, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("%.40q is not an ISO 8601 time", s)
	}
	return t.UnixMilli(), nil
}
