package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// A vector's series beyond MaxSeries are left out and counted; a series
// too large to be labels is refused; labels are made safe to show.
func TestDecodeVectorBounds(t *testing.T) {
	many := make([]string, MaxSeries+500)
	for i := range many {
		many[i] = sample(fmt.Sprintf("h%d", i), "m", "1")
	}
	long := strings.Repeat("é", 200) // 400 bytes
	tests := []struct {
		name     string
		result   string
		n, more  int
		errHas   string
		instance string // the first sample's, when checked
	}{
		{name: "many series", result: "[" + strings.Join(many, ",") + "]", n: MaxSeries, more: 500, instance: "h0"},
		{name: "a label past 256 bytes", result: "[" + sample(long, "m", "1") + "]", n: 1, instance: long[:256]},
		{name: "control characters", result: `[{"metric":{"instance":"a\nb\u001b[2J"},"value":[1,"1"]}]`, n: 1, instance: "a\uFFFDb\uFFFD[2J"},
		{name: "a series of 300,000 labels", result: `[{"metric":{` + strings.Repeat(`"l":"v",`, 300000) + `"x":"y"},"value":[1,"1"]}]`, errHas: "a series of"},
		{name: "empty", result: "[]", n: 0},
		{name: "not an array", result: `{"a":1}`, errHas: "not an array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, more, err := decodeVector("vector", json.RawMessage(tt.result))
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("err %v, want %q", err, tt.errHas)
				}
				return
			}
			if err != nil || len(got) != tt.n || more != tt.more {
				t.Fatalf("%d series, %d more, %v; want %d, %d", len(got), more, err, tt.n, tt.more)
			}
			if tt.instance != "" && got[0].Labels["instance"] != tt.instance {
				t.Errorf("instance %q, want %q", got[0].Labels["instance"], tt.instance)
			}
		})
	}
}

// FuzzDecodeVector: whatever a store answers, the decoder keeps at most
// MaxSeries series whose labels are valid UTF-8 of at most 256 bytes
// without control characters, and never panics.
func FuzzDecodeVector(f *testing.F) {
	for _, seed := range []string{
		"[" + sample("h", "m", "1") + "]", `[]`, `[{"metric":{},"value":[1,"NaN"]}]`, `[{"metric":{"a\u0000":"b\n"},"value":[1,"+Inf"]}]`,
		`[{"metric":null,"value":null}]`, `[1,2]`, `{"a":1}`, `[`, ``, `[{"metric":{"x":"` + strings.Repeat("y", 300) + `"},"value":[1,"2"]}]`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, result string) {
		got, _, err := decodeVector("vector", json.RawMessage(result))
		if err != nil {
			return
		}
		if len(got) > MaxSeries {
			t.Fatalf("%d series", len(got))
		}
		for _, s := range got {
			for k, v := range s.Labels {
				for _, l := range []string{k, v} {
					if len(l) > 256 || !utf8.ValidString(l) || strings.IndexFunc(l, unicode.IsControl) >= 0 {
						t.Fatalf("label %q", l)
					}
				}
			}
		}
	})
}

// A store answering more series than a view keeps is told in the query's
// warnings, which make the view partial.
func TestQueryWarnsOfSeriesLeftOut(t *testing.T) {
	many := make([]string, MaxSeries+1)
	for i := range many {
		many[i] = sample(fmt.Sprintf("h%d", i), "m", "1")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, vector(many...)) }))
	defer srv.Close()
	c, err := NewClient(srv.URL, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, warnings, err := c.Query(context.Background(), "up")
	if err != nil || len(got) != MaxSeries || len(warnings) != 1 || !strings.Contains(warnings[0], "1 series more than the 1000 kept") {
		t.Fatalf("%d series, warnings %q, %v", len(got), warnings, err)
	}
}
