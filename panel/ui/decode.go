package ui

import (
	"encoding/json"
	"sort"

	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// A stream frame's per-model windows (Window.PerModel) are most of its
// bytes past a few models (77 % of a frame of 1,024), and decoding them
// was most of the panel's time per frame there; a view shows a few of them
// at most (the Serving view's first MaxRows rows, the Requests view's one
// model). So the panel decodes a frame less its per-model windows, which
// stay JSON (Windows) until a view asks for one
// (docs/performance.md#the-panels-cost-per-frame).

// wireSnapshot is a frame as the panel decodes it: the snapshot, its
// requests' window's PerModel (nil) shadowed by the JSON of each.
type wireSnapshot struct {
	snapshot.Snapshot
	Requests wireRequests `json:"requests"`
}

type wireRequests struct {
	snapshot.Requests
	Window wireWindow `json:"window"`
}

type wireWindow struct {
	snapshot.Window
	PerModel map[string]json.RawMessage `json:"perModel"`
}

// decodeFrame decodes a stream frame's snapshot, and its per-model windows
// as Windows to decode one by one.
func decodeFrame(data []byte) (*snapshot.Snapshot, *Windows, error) {
	var w wireSnapshot
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, nil, err
	}
	s := w.Snapshot
	s.Requests = w.Requests.Requests
	s.Requests.Window = w.Requests.Window.Window
	return &s, &Windows{raw: w.Requests.Window.PerModel}, nil
}

// Windows are a frame's per-model windows, each decoded when first asked
// for (and kept for the frame's life). The zero Windows, and nil, hold
// none.
type Windows struct {
	raw     map[string]json.RawMessage
	decoded map[string]*snapshot.Window
}

// window is model's window, nil when the frame has none for it (or it does
// not decode: the figures it holds show as unknown).
func (ws *Windows) window(model string) *snapshot.Window {
	if ws == nil {
		return nil
	}
	if w, ok := ws.decoded[model]; ok {
		return w
	}
	raw, ok := ws.raw[model]
	if !ok {
		return nil
	}
	var w *snapshot.Window
	if err := json.Unmarshal(raw, &w); err != nil {
		w = nil
	}
	if ws.decoded == nil {
		ws.decoded = map[string]*snapshot.Window{}
	}
	ws.decoded[model] = w
	return w
}

// modelWindow is model's window in s: the one s holds (a snapshot decoded
// whole, as the tests build them), else the one ws holds.
func modelWindow(s *snapshot.Snapshot, ws *Windows, model string) *snapshot.Window {
	if pm := s.Requests.Window.PerModel; pm != nil {
		return pm[model]
	}
	return ws.window(model)
}

// modelNames are the models s's window is split by (as modelWindow finds
// them), sorted.
func modelNames(s *snapshot.Snapshot, ws *Windows) []string {
	var names []string
	if pm := s.Requests.Window.PerModel; pm != nil {
		names = make([]string, 0, len(pm))
		for m := range pm {
			names = append(names, m)
		}
	} else if ws != nil {
		names = make([]string, 0, len(ws.raw))
		for m := range ws.raw {
			names = append(names, m)
		}
	}
	sort.Strings(names)
	return names
}
