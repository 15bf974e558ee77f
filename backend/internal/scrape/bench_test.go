package scrape

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// BenchmarkParseAndMapVLLM is one poll's CPU: parsing a vLLM /metrics page
// and mapping it to events.
func BenchmarkParseAndMapVLLM(b *testing.B) {
	text, err := os.ReadFile("testdata/vllm-1.txt")
	if err != nil {
		b.Fatal(err)
	}
	mp := newMapper(KindVLLM, "")
	now := time.Unix(0, 0)
	b.ReportAllocs()
	for b.Loop() {
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
		if err != nil {
			b.Fatal(err)
		}
		now = now.Add(time.Second)
		if len(mp.Map(fams, now)) == 0 {
			b.Fatal("no events")
		}
	}
}
