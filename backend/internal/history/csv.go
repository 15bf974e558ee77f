package history

import (
	"encoding/csv"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/printable"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// CSVHeader names the columns of WriteCSV: the run's fields, the cell's,
// then one column per figure of bench.Figures, named by its JSON field.
var CSVHeader = func() []string {
	h := []string{
		"id", "profile", "scope", "startedAt", "durationMs", "complete", "exitCode", "chip",
		"cellKey", "model", "kind", "configuration", "status", "note",
	}
	for _, f := range bench.Figures {
		h = append(h, f.Field)
	}
	return h
}()

// CSVWriter writes history as CSV, one row per cell (a run without cells
// gets one row with empty cell columns, so it still shows). A figure that
// was not measured is an empty field.
type CSVWriter struct {
	w *csv.Writer
}

// NewCSVWriter writes the header to w.
func NewCSVWriter(w io.Writer) (*CSVWriter, error) {
	cw := &CSVWriter{w: csv.NewWriter(w)}
	return cw, cw.w.Write(CSVHeader)
}

// Write adds e's rows.
func (cw *CSVWriter) Write(e bench.HistoryEntry) error {
	run := []string{
		CSVText(e.ID), CSVText(e.Profile), CSVText(e.Scope),
		time.UnixMilli(e.StartedAt).UTC().Format(time.RFC3339Nano),
		strconv.FormatInt(e.DurationMs, 10),
		strconv.FormatBool(e.Complete),
		strconv.Itoa(e.ExitCode),
		CSVText(e.Machine.Chip),
	}
	if len(e.Cells) == 0 {
		return cw.w.Write(append(run, make([]string, len(CSVHeader)-len(run))...))
	}
	for _, c := range e.Cells {
		row := append(append([]string{}, run...),
			CSVText(c.Key), CSVText(c.Model), CSVText(c.Kind), CSVText(c.Configuration), CSVText(string(c.Status)), CSVText(c.Note))
		for _, f := range bench.Figures {
			row = append(row, num(f.Get(c)))
		}
		if err := cw.w.Write(row); err != nil {
			return err
		}
	}
	return nil
}

// Flush flushes the rows and reports any write error.
func (cw *CSVWriter) Flush() error {
	cw.w.Flush()
	return cw.w.Error()
}

// CSVText is a text cell made inert for terminals and spreadsheets. Plan
// text and model names come from files anyone with the plans directory
// can write, or from an imported run.json: control characters (ESC, BEL:
// a terminal showing the file acts on them), bidi controls and invalid
// UTF-8 are U+FFFD, printable's rule for outside text (not cut: the
// run.json it came from is bounded). One that starts with = + - @ would
// be read as a formula, so it gets a leading single quote, as OWASP's CSV
// injection guidance says. Figures are written by num and need none.
func CSVText(s string) string {
	s = printable.Cut(s, math.MaxInt)
	if s != "" && strings.ContainsRune("=+-@", rune(s[0])) {
		return "'" + s
	}
	return s
}

func num(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}
