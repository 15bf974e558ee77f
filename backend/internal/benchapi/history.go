package benchapi

import (
	"errors"
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/history"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// listHistory answers newest first: JSON (?limit, default 50, at most 1000)
// or, with ?format=csv, one row per cell (every run unless ?limit is given).
func (a *API) listHistory(c *fiber.Ctx) error {
	format := c.Query("format", "json")
	switch format {
	case "json":
		limit, err := parseLimit(c.Query("limit"), DefaultHistoryLimit, MaxHistoryLimit)
		if err != nil {
			return server.Error(c, fiber.StatusBadRequest, err.Error())
		}
		entries, err := a.History.List(limit)
		if err != nil {
			return err
		}
		return c.JSON(bench.HistoryList{Entries: entries})
	case "csv":
		limit, err := parseLimit(c.Query("limit"), 0, 0)
		if err != nil {
			return server.Error(c, fiber.StatusBadRequest, err.Error())
		}
		c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
		c.Set(fiber.HeaderContentDisposition, `attachment; filename="mlx-metrics-history.csv"`)
		cw, err := history.NewCSVWriter(c.Response().BodyWriter())
		if err != nil {
			return err
		}
		if err := a.History.Each(limit, cw.Write); err != nil {
			return err
		}
		return cw.Flush()
	default:
		return server.Error(c, fiber.StatusBadRequest, fmt.Sprintf("format %q is not json or csv", format))
	}
}

func (a *API) getHistory(c *fiber.Ctx) error {
	id := c.Params("id")
	e, err := a.History.Get(id)
	if errors.Is(err, history.ErrNotFound) {
		return server.Error(c, fiber.StatusNotFound, fmt.Sprintf("no finished run %q in history", id))
	}
	if err != nil {
		return err
	}
	return c.JSON(e)
}
