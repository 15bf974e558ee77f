package fleet

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	shared "github.com/mlx-bun/mlx-metrics/shared/fleet"
)

// Feature serves GET /api/metrics/fleet: the view of Service, or, without
// one (serve without --fleet), {"enabled": false}, so the panel knows to
// show no Fleet tab.
type Feature struct{ S *Service }

// Handle answers GET /api/metrics/fleet.
func (f Feature) Handle(c *fiber.Ctx) error {
	if f.S == nil {
		return c.JSON(shared.View{Hosts: []shared.Host{}, Rows: []shared.Row{}})
	}
	// Cloned: Fiber's strings live in a buffer the next request reuses,
	// and these become cache keys.
	r := Request{Range: strings.Clone(c.Query("range")), Host: strings.Clone(c.Query("host")), Model: strings.Clone(c.Query("model"))}
	v, err := f.S.View(c.UserContext(), r)
	var re *RequestError
	var qe *QueryError
	switch {
	case errors.As(err, &re):
		return server.Error(c, fiber.StatusBadRequest, re.Message)
	case errors.As(err, &qe):
		status := http.StatusBadGateway
		if qe.Kind == KindTimeout {
			status = http.StatusGatewayTimeout
		}
		return server.Error(c, status, "the fleet's query API: "+qe.Message)
	case errors.Is(err, ErrBusy):
		c.Set(fiber.HeaderRetryAfter, "5")
		return server.Error(c, fiber.StatusServiceUnavailable, err.Error())
	case err != nil:
		return server.Error(c, http.StatusBadGateway, "the fleet's query API: "+clip(err.Error()))
	}
	return c.JSON(v)
}
