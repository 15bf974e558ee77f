package benchapi

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/history"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/strictjson"
)

// MaxImportBytes bounds POST /history's body, a run.json: a large plan's
// record is a few hundred KiB of samples.
const MaxImportBytes = 8 << 20

// ErrTooLarge is what DecodeImport answers, wrapped, for a body over
// MaxImportBytes: the route says 413.
var ErrTooLarge = errors.New("the body is too large")

// maxRunDirectory bounds the runDirectory query, kept as the entry's note of
// where its record is (shown, never read: the server opens no file it names).
const maxRunDirectory = 1024

// importRun keeps a run recorded elsewhere (`mlx-metrics bench run` by hand,
// another machine) in history: the body is its run.json, as the runner wrote
// it, and the answer is the history entry made of it (201), or 409 when
// history has that run already.
func (a *API) importRun(c *fiber.Ctx) error {
	e, err := DecodeImport(c.Body(), c.Query("runDirectory"), a.opts.Clock)
	switch {
	case errors.Is(err, ErrTooLarge):
		return server.Error(c, fiber.StatusRequestEntityTooLarge, err.Error())
	case err != nil:
		return server.Error(c, fiber.StatusBadRequest, err.Error())
	}
	switch err := a.history.PutNew(e); {
	case errors.Is(err, history.ErrExists):
		return server.Error(c, fiber.StatusConflict, fmt.Sprintf(
			"run %s is in history already; to import it again, forget it first (DELETE /api/metrics/history/%s)", e.ID, e.ID))
	case err != nil:
		return a.storageError(c, "keep the run in history", err)
	}
	return c.Status(fiber.StatusCreated).JSON(e.View())
}

// DecodeImport turns a run.json into the history entry that keeps it,
// checked against the bounds of bench.HistoryEntry.Check; runDirectory is
// where the record stays. Errors quote no unbounded input.
func DecodeImport(body []byte, runDirectory string, now clock.Clock) (bench.HistoryEntry, error) {
	const what = "POST /history takes a run's run.json"
	if len(body) > MaxImportBytes {
		return bench.HistoryEntry{}, fmt.Errorf("%w: %s of at most %d MiB, not %d bytes", ErrTooLarge, what, MaxImportBytes>>20, len(body))
	}
	if len(runDirectory) > maxRunDirectory || strings.IndexFunc(runDirectory, unicode.IsControl) >= 0 {
		return bench.HistoryEntry{}, fmt.Errorf("runDirectory: at most %d bytes, no control characters", maxRunDirectory)
	}
	var rec bench.RunRecord
	if err := strictjson.Decode(body, &rec, false); errors.Is(err, strictjson.ErrTrailing) {
		return bench.HistoryEntry{}, fmt.Errorf("%s: one JSON object, and nothing after it", what)
	} else if err != nil {
		return bench.HistoryEntry{}, fmt.Errorf("%s (a JSON object): %s", what, capEcho(err.Error()))
	}
	if rec.ID == "" {
		return bench.HistoryEntry{}, fmt.Errorf("%s: this one has no id (is it a run.json?)", what)
	}
	if err := rec.Check(); err != nil {
		return bench.HistoryEntry{}, fmt.Errorf("the run's %v", err)
	}
	e := bench.Compact(rec, runDirectory)
	if err := e.Check(now.Now()); err != nil {
		return bench.HistoryEntry{}, fmt.Errorf("the run's %v", err)
	}
	return e, nil
}
