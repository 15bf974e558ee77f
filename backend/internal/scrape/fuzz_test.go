package scrape

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// FuzzMap: whatever an engine serves, mapping it (in every dialect, two
// polls, so the rate is taken too) and validating the events never panics,
// and every event is stamped with its poll's time.
func FuzzMap(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("vllm:num_requests_running{model_name=\"m\"} NaN\nvllm:generation_tokens_total{model_name=\"m\"} -1e308\n")
	f.Add("mlx_num_requests_running{model_name=\"\\x00\"} 1e400\n")
	t0 := time.UnixMilli(1764690000000)
	f.Fuzz(func(t *testing.T, text string) {
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
		if err != nil {
			return
		}
		for _, kind := range []Kind{KindAuto, KindVLLM, KindSGLang, KindLlamaCpp, KindMLX} {
			mp := newMapper(kind, "default")
			for i := range 2 {
				for _, ev := range mp.Map(fams, t0.Add(time.Duration(i)*time.Second)) {
					_ = events.Check(ev)
					if ev.At != t0.Add(time.Duration(i)*time.Second).UnixMilli() {
						t.Fatalf("event stamped %d", ev.At)
					}
				}
			}
		}
	})
}
