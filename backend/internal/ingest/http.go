package ingest

import (
	"bytes"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/shared/apierror"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// MaxListedRejections bounds the rejections a reply lists; the count is
// always exact.
const MaxListedRejections = 100

// HTTP is the feature serving POST /events.
type HTTP struct {
	*Source
}

// NewHTTP publishes posted events to b. Who may post is the access
// package's (the backend's --token and --events-token).
func NewHTTP(b *bus.Bus, opts Options) *HTTP {
	return &HTTP{Source: NewSource("POST /events", b, Live, opts)}
}

// Reply is the answer to POST /events: core events accepted, valid events
// of other types ignored (catalog.changed, job.state, module events), and
// rejections. When events were rejected and no core event was accepted the
// status is 400 and Error says why, in the API's error format; what was
// accepted before a rejection always stands.
type Reply struct {
	Error    *apierror.Detail `json:"error,omitempty"`
	Accepted int              `json:"accepted"`
	Ignored  int              `json:"ignored"`
	Rejected int              `json:"rejected"`
	// Duplicates are requests another source reported already (a proxy in
	// front of a server that publishes too): counted once, there.
	Duplicates int         `json:"duplicates,omitempty"`
	Errors     []Rejection `json:"errors"`
	Truncated  bool        `json:"errorsTruncated,omitempty"`
}

// Handle answers POST /events.
func (h *HTTP) Handle(c *fiber.Ctx) error {
	body := c.Body()
	if len(bytes.TrimSpace(body)) == 0 {
		return fiber.NewError(fiber.StatusBadRequest, "empty body: send events as NDJSON (one JSON object a line) or a JSON array")
	}
	shift, err := retimeShift(c.Query("retime"), body, h.opts.Clock.Now())
	if err != nil {
		return err
	}
	reply := Reply{Errors: []Rejection{}}
	reject := func(r Rejection) {
		reply.Rejected++
		if len(reply.Errors) < MaxListedRejections {
			reply.Errors = append(reply.Errors, r)
		} else {
			reply.Truncated = true
		}
	}
	err = Decode(bytes.NewReader(body), func(ev events.Event, pos Rejection) {
		if r := retime(&ev, shift); r != "" {
			pos.Field, pos.Reason = "at", r
			h.reject(pos)
			reject(pos)
			return
		}
		switch out, r := h.offer(ev, pos); out {
		case accepted:
			reply.Accepted++
		case ignored:
			reply.Ignored++
		case refused:
			reject(r) // offer counted and logged it
		case duplicate:
			reply.Duplicates++
		}
	}, func(r Rejection) {
		h.reject(r)
		reject(r)
	})
	if err != nil {
		// The array broke off: what came before it stands, the rest is one
		// rejection.
		r := Rejection{Reason: err.Error()}
		h.reject(r)
		reject(r)
	}
	if reply.Accepted == 0 && reply.Rejected > 0 {
		msg := fmt.Sprintf("no event accepted: %d rejected", reply.Rejected)
		if reply.Ignored > 0 {
			msg += fmt.Sprintf(" (%d of types the metrics ignore)", reply.Ignored)
		}
		d := apierror.New(fiber.StatusBadRequest, msg).Error
		reply.Error = &d
		return c.Status(fiber.StatusBadRequest).JSON(reply)
	}
	return c.JSON(reply)
}

// retimeShift is what ?retime=now adds to every event's at: the batch's
// newest core event moves to now and the others keep their gaps to it, so
// events written by hand, or recorded days ago, are accepted as live
// (`mlx-metrics events replay` does the same by default). Only core events
// set it: another type's at is never checked, so a far one would move every
// core event out of bounds. It costs a second decoding of the body, only
// when asked.
func retimeShift(retime string, body []byte, now time.Time) (int64, error) {
	switch retime {
	case "":
		return 0, nil
	case "now":
	default:
		return 0, fiber.NewError(fiber.StatusBadRequest, "retime: want now (move the newest event to now) or nothing")
	}
	newest := int64(0)
	_ = Decode(bytes.NewReader(body), func(ev events.Event, _ Rejection) {
		if ev.Payload != nil {
			newest = max(newest, ev.At)
		}
	}, func(Rejection) {})
	if newest == 0 {
		return 0, nil
	}
	return now.UnixMilli() - newest, nil
}

// retime adds shift to ev's at, or says why the shifted at is no time.
// Parse bounded at to 1..events.MaxAt, so the sum cannot overflow.
func retime(ev *events.Event, shift int64) string {
	at := ev.At + shift
	if at < 1 || at > events.MaxAt {
		return fmt.Sprintf("%d moved by ?retime=now (%+d ms, the batch's newest core event to now) is %d, outside 1 to %d",
			ev.At, shift, at, int64(events.MaxAt))
	}
	ev.At = at
	return ""
}
