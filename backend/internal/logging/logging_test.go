package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/logkey"
)

func TestNew(t *testing.T) {
	var text, js bytes.Buffer
	l, err := New(&text, "", "")
	if err != nil {
		t.Fatal(err)
	}
	l.Debug("hidden")
	l.Info("serving on http://127.0.0.1:1 (home /h)", logkey.Addr, "127.0.0.1:1")
	if got := text.String(); strings.Contains(got, "hidden") ||
		!strings.Contains(got, `level=INFO msg="serving on http://127.0.0.1:1 (home /h)" addr=127.0.0.1:1`) {
		t.Errorf("text: %q", got)
	}
	l, err = New(&js, "JSON", "warn")
	if err != nil {
		t.Fatal(err)
	}
	l.Info("hidden")
	l.Warn("degraded", Err(errors.New("disk full")))
	var m map[string]any
	if err := json.Unmarshal(js.Bytes(), &m); err != nil {
		t.Fatalf("%q: %v", js.String(), err)
	}
	if m["level"] != "WARN" || m["msg"] != "degraded" || m[logkey.Err] != "disk full" {
		t.Errorf("json: %v", m)
	}
	if _, err := New(&js, "xml", ""); err == nil {
		t.Error("format xml accepted")
	}
	if _, err := New(&js, "", "loud"); err == nil {
		t.Error("level loud accepted")
	}
	if Or(nil) != slog.Default() || Or(Discard()) == slog.Default() {
		t.Error("Or")
	}
}
