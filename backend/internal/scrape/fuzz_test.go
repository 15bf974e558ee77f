package scrape

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
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

// FuzzIncreases: whatever two successive polls serve, reading their
// counters' and histograms' increases (in every dialect) never panics, and
// every requests.sample is whole: a count a bucket and one over them,
// bounds ascending, nothing negative, no more reasons than requests and no
// more cached than prompt tokens. (Check may still refuse one whose counts
// pass the events' bounds: that is a rejection, counted.)
func FuzzIncreases(f *testing.F) {
	// The seeds (testdata/fuzz/FuzzIncreases) are small: the fuzzing
	// engine mutates a pair of whole fixtures at a few inputs a second.
	f.Add("vllm:num_requests_running{model_name=\"m\"} 1\nvllm:request_success_total{model_name=\"m\",finished_reason=\"stop\"} 1\n",
		"vllm:num_requests_running{model_name=\"m\"} 1\nvllm:request_success_total{model_name=\"m\",finished_reason=\"stop\"} 4\n")
	t0 := time.UnixMilli(1764690000000)
	f.Fuzz(func(t *testing.T, first, second string) {
		var polls []map[string]*dto.MetricFamily
		for _, text := range []string{first, second} {
			parser := expfmt.NewTextParser(model.UTF8Validation)
			fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
			if err != nil {
				return
			}
			polls = append(polls, fams)
		}
		for _, kind := range []Kind{KindAuto, KindVLLM, KindSGLang, KindLlamaCpp, KindMLX} {
			mp := newMapper(kind, "default")
			for i, fams := range polls {
				for _, ev := range mp.Map(fams, t0.Add(time.Duration(i)*2*time.Second)) {
					p, ok := ev.Payload.(*events.RequestsSample)
					if !ok {
						continue
					}
					if i == 0 {
						t.Fatal("a requests sample from the first poll")
					}
					_ = events.Check(ev)
					if p.Finished < 0 || p.ByFinish.Sum() > p.Finished || p.PromptTokens < 0 || p.GenerationTokens < 0 ||
						p.CachedPromptTokens != nil && (*p.CachedPromptTokens < 0 || *p.CachedPromptTokens > p.PromptTokens) {
						t.Fatalf("sample %+v", p)
					}
					for _, h := range []*events.Histogram{p.QueueMs, p.TTFTMs, p.TotalMs, p.TPOTMs, p.PrefillMs, p.DecodeMs,
						p.PromptLengths, p.GenerationLengths} {
						if h == nil {
							continue
						}
						if len(h.Counts) != len(h.Bounds)+1 || !sort.Float64sAreSorted(h.Bounds) || !(h.Sum >= 0) {
							t.Fatalf("histogram %+v", h)
						}
						for _, c := range h.Counts {
							if c < 0 {
								t.Fatalf("histogram %+v", h)
							}
						}
					}
				}
			}
		}
	})
}
