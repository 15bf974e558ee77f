package ui

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/panel/charts"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// frames are stream frames to decode: the store's recorded snapshot (two
// models' windows), and one of 64 resident models, each with a window.
func frames(t *testing.T) map[string][]byte {
	t.Helper()
	rec, err := os.ReadFile(filepath.Join("..", "..", "backend", "internal", "store", "testdata", "recorded.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	many := manyModels(64)
	base := recorded(t, "recorded").Requests.Window
	many.Requests.Window = base
	many.Requests.Window.PerModel = map[string]*snapshot.Window{}
	for i, m := range many.Models {
		w := base
		w.PerModel, w.Count = nil, i+1
		if i%7 == 3 {
			many.Requests.Window.PerModel[m.Model] = nil // a window the backend wrote as null
			continue
		}
		many.Requests.Window.PerModel[m.Model] = &w
	}
	data, _ := snapshot.Encode(many)
	return map[string][]byte{"recorded": rec, "64 models": data}
}

// TestDecodeFrame: a frame decoded less its per-model windows is the
// snapshot decoded whole, less them; each window decoded when asked for is
// the one decoded whole, and the names are the windows' models, sorted.
func TestDecodeFrame(t *testing.T) {
	for name, data := range frames(t) {
		t.Run(name, func(t *testing.T) {
			var whole snapshot.Snapshot
			if err := json.Unmarshal(data, &whole); err != nil {
				t.Fatal(err)
			}
			if len(whole.Requests.Window.PerModel) < 2 {
				t.Fatalf("%d per-model windows, want 2 or more", len(whole.Requests.Window.PerModel))
			}
			s, ws, err := decodeFrame(data)
			if err != nil {
				t.Fatal(err)
			}
			want := whole
			want.Requests.Window.PerModel = nil
			if !reflect.DeepEqual(*s, want) {
				t.Errorf("decoded less its windows:\n%+v\nwant\n%+v", *s, want)
			}
			var names []string
			for m, w := range whole.Requests.Window.PerModel {
				names = append(names, m)
				for range 2 { // decoded, then kept
					if got := modelWindow(s, ws, m); !reflect.DeepEqual(got, w) {
						t.Errorf("%s's window %+v, want %+v", m, got, w)
					}
				}
				if got := modelWindow(&whole, nil, m); got != w {
					t.Errorf("%s's window from the whole snapshot %p, want %p", m, got, w)
				}
			}
			slices.Sort(names)
			if got := modelNames(s, ws); !slices.Equal(got, names) {
				t.Errorf("names %q, want %q", got, names)
			}
			if got := modelNames(&whole, nil); !slices.Equal(got, names) {
				t.Errorf("names from the whole snapshot %q, want %q", got, names)
			}
			if w := modelWindow(s, ws, "no/such-model"); w != nil {
				t.Errorf("a model without a window has %+v", w)
			}
		})
	}
	if _, _, err := decodeFrame([]byte(`{"at":1,"requests":{"window":{"perModel":{"a":{"count":"x"}}}}`)); err == nil {
		t.Error("a frame with a bad window decoded")
	}
	var ws *Windows
	if w := ws.window("a"); w != nil || len(modelNames(&snapshot.Snapshot{}, nil)) != 0 {
		t.Error("no windows hold one")
	}
}

var tags = regexp.MustCompile(`<[^>]*>|\s+`)

// text is what html reads as (its attributes, in no set order, left out).
func text(html string) string {
	return strings.Join(strings.Fields(tags.ReplaceAllString(html, " ")), " ")
}

// TestViewsOfADecodedFrame: the Serving and Requests views read the same
// from a frame decoded less its windows as from the snapshot decoded whole.
func TestViewsOfADecodedFrame(t *testing.T) {
	for name, data := range frames(t) {
		t.Run(name, func(t *testing.T) {
			var whole snapshot.Snapshot
			if err := json.Unmarshal(data, &whole); err != nil {
				t.Fatal(err)
			}
			s, ws, err := decodeFrame(data)
			if err != nil {
				t.Fatal(err)
			}
			got := text(render(t, &ServingView{Snap: s, Windows: ws, Palette: charts.Light}))
			if want := text(render(t, &ServingView{Snap: &whole, Palette: charts.Light})); got != want {
				t.Errorf("Serving view:\n%s\nwant\n%s", got, want)
			}
			if name != "recorded" && !strings.Contains(got, "By model") { // the recording has one model resident
				t.Errorf("no per-model table in %s", got)
			}
			for _, m := range append([]string{""}, modelNames(&whole, nil)...) {
				got := text(render(t, &RequestsView{Snap: s, Windows: ws, model: m}))
				if want := text(render(t, &RequestsView{Snap: &whole, model: m})); got != want {
					t.Errorf("Requests view of %q:\n%s\nwant\n%s", m, got, want)
				}
			}
		})
	}
}
