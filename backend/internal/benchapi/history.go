package benchapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/history"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// HeaderUnreadable tells a CSV client how many unreadable entries the
// export skipped (a CSV body has no place for them).
const HeaderUnreadable = "X-History-Unreadable"

// HeaderTruncated says a CSV export stopped at maxCSVBytes: ask for fewer
// runs (?limit, ?host).
const HeaderTruncated = "X-History-Truncated"

// maxListBytes and maxCSVBytes bound a list and a CSV export, which
// repeats a run's columns on each of its cells' rows (variables for the
// tests).
var (
	maxListBytes = bench.MaxListBytes
	maxCSVBytes  = 64 << 20
)

// errListFull stops a history list at its size bound.
var errListFull = errors.New("the list is full")

// listHistory answers newest first: JSON (?limit read as the original
// reads it, historyLimit) or, with ?format=csv, one row
// per cell (every run unless ?limit is given); ?host keeps one host's runs.
// Unreadable entries are skipped: listed under problems in JSON, counted in
// the CSV's X-History-Unreadable header.
func (a *API) listHistory(c *fiber.Ctx) error {
	format := c.Query("format", "json")
	host := c.Query("host") // one host's runs, in either format
	switch format {
	case "json":
		args := c.Context().QueryArgs()
		limit := historyLimit(string(args.Peek("limit")), args.Has("limit"))
		// Each run is encoded once: to measure the list, and as its part.
		var runs []json.RawMessage
		size, truncated := 0, false
		problems, err := a.history.Each(limit, host, func(e bench.HistoryEntry) error {
			b, err := json.Marshal(e.View())
			if err != nil {
				return err
			}
			if size += len(b); size > maxListBytes && len(runs) > 0 {
				truncated = true
				return errListFull
			}
			runs = append(runs, b)
			return nil
		})
		if err != nil && !errors.Is(err, errListFull) {
			return a.storageError(c, "read the history", err)
		}
		return c.JSON(bench.EncodedHistoryList(runs, problems, truncated))
	case "csv":
		limit, err := parseLimit(c.Query("limit"), 0, 0)
		if err != nil {
			return server.Error(c, fiber.StatusBadRequest, err.Error())
		}
		// The body is buffered until the handler returns, so the header
		// can still be set after the rows.
		cw, err := history.NewCSVWriter(c.Response().BodyWriter())
		if err != nil {
			return err
		}
		truncated := false
		problems, err := a.history.Each(limit, host, func(e bench.HistoryEntry) error {
			if len(c.Response().Body()) > maxCSVBytes {
				truncated = true
				return errListFull
			}
			return cw.Write(e)
		})
		if err == nil || errors.Is(err, errListFull) {
			err = cw.Flush()
		}
		if err != nil {
			c.Response().ResetBody()
			return a.storageError(c, "read the history", err)
		}
		if truncated {
			c.Set(HeaderTruncated, "true")
		}
		c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
		c.Set(fiber.HeaderContentDisposition, `attachment; filename="mlx-metrics-history.csv"`)
		c.Set(HeaderUnreadable, strconv.Itoa(len(problems)))
		return nil
	default:
		return server.Error(c, fiber.StatusBadRequest, fmt.Sprintf("format %q is not json or csv", capEcho(format)))
	}
}

func (a *API) getHistory(c *fiber.Ctx) error {
	id := c.Params("id")
	e, err := a.history.Get(id)
	switch {
	case errors.Is(err, history.ErrNotFound):
		return server.Error(c, fiber.StatusNotFound, fmt.Sprintf("no finished run %q in history", capEcho(id)))
	case errors.Is(err, history.ErrUnreadable):
		// 404 as the original answers for an entry it cannot parse; the
		// message says it is there and how to remove it.
		return server.Error(c, fiber.StatusNotFound, fmt.Sprintf(
			"run %s is in history, but %s; remove it with DELETE /api/metrics/history/%s or `mlx-metrics bench forget %s` (its run directory, if any, is untouched)",
			id, SafeMessage(err), id, id))
	case err != nil:
		return a.storageError(c, "read the history", err)
	}
	return c.JSON(e.View())
}

// deleteHistory removes one entry from history, readable or not; the run's
// directory is left alone.
func (a *API) deleteHistory(c *fiber.Ctx) error {
	id := c.Params("id")
	err := a.history.Delete(id)
	if errors.Is(err, history.ErrNotFound) {
		return server.Error(c, fiber.StatusNotFound, fmt.Sprintf("no finished run %q in history", capEcho(id)))
	}
	if err != nil {
		return a.storageError(c, "delete from the history", err)
	}
	return c.SendStatus(fiber.StatusNoContent)
}
