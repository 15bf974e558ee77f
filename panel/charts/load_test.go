package charts

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// loadPoint is a measured point: rate offered, repeat, what it carried
// (requests/s, output tokens/s) and its TTFT and TPOT (p50, p99 in ms).
func loadPoint(rate float64, repeat int, reqs, toks, ttft50, ttft99, tpot50, tpot99 float64) bench.LoadPoint {
	return bench.LoadPoint{
		OfferedRate: rate, Repeat: repeat, Completed: 10, RequestThroughput: reqs, OutputThroughput: toks,
		TTFT: bench.Dist{Count: 10, Median: ttft50, P99: ttft99},
		TPOT: bench.Dist{Count: 10, Median: tpot50, P99: tpot99},
	}
}

// sweep is a cell swept over three rates, found to carry 2 req/s: the
// rate 1 measured twice, the rate 4 saturated, the rate 8 with no request
// completed (not drawn), measured out of order as a search does.
func sweep() bench.CompactCell {
	saturated := loadPoint(4, 1, 3.1, 310, 900, 2400, 60, 95)
	saturated.Saturated = true
	return bench.CompactCell{
		Key: "m/tree/default",
		LoadPoints: []bench.LoadPoint{
			loadPoint(2, 1, 1.9, 190, 150, 300, 22, 30),
			loadPoint(1, 1, 1.0, 100, 100, 200, 20, 26),
			loadPoint(1, 2, 0.98, 96, 110, 220, 21, 28),
			saturated,
			{OfferedRate: 8, Repeat: 1, Errors: 40},
		},
		MaxRate: &bench.MaxRate{Rate: 2, FailedAt: 4, MinShare: 0.95, Points: 4},
		SLO:     &bench.SLO{TTFTMs: 500},
	}
}

// line is what a series draws: its name, its points' [x, y], and the
// symbols set on single points ("" for the series' own).
type line struct {
	name    string
	points  [][]any
	symbols []string
}

func lines(m map[string]any) []line {
	var out []line
	for _, s := range series(m) {
		l := line{name: s["name"].(string)}
		for _, d := range s["data"].([]any) {
			d := d.(map[string]any)
			l.points = append(l.points, d["value"].([]any))
			sym, _ := d["symbol"].(string)
			l.symbols = append(l.symbols, sym)
		}
		out = append(out, l)
	}
	return out
}

// markLines is each series' markLine data as "name@axis=value".
func markLines(m map[string]any) map[string][]string {
	out := map[string][]string{}
	for _, s := range series(m) {
		ml, ok := s["markLine"].(map[string]any)
		if !ok {
			continue
		}
		for _, d := range ml["data"].([]any) {
			d := d.(map[string]any)
			for _, axis := range []string{"xAxis", "yAxis"} {
				if v, ok := d[axis]; ok {
					out[s["name"].(string)] = append(out[s["name"].(string)], d["name"].(string)+"@"+axis+"="+fmt.Sprint(v))
				}
			}
		}
	}
	return out
}

func TestLoadCurve(t *testing.T) {
	other := sweep()
	other.LoadPoints = []bench.LoadPoint{loadPoint(1, 1, 1, 100, 80, 160, 18, 24), loadPoint(2, 1, 2, 200, 90, 170, 19, 25)}
	other.MaxRate = &bench.MaxRate{Rate: 2}
	closed := bench.CompactCell{LoadPoints: []bench.LoadPoint{
		{Concurrency: 8, Repeat: 1, RequestThroughput: 5, OutputThroughput: 500, TTFT: bench.Dist{Count: 3, Median: 40, P99: 90}},
	}}
	tests := []struct {
		name   string
		runs   []CurveRun
		figure LoadFigure
		axis   LoadAxis
		want   []line
		marks  map[string][]string
		// the axes' maxima, set only to stretch past the data to a mark
		xMax, yMax any
	}{
		{
			name: "one run by request rate: repeats averaged, in the order offered, saturation marked",
			runs: []CurveRun{{Cell: sweep()}}, figure: LoadTTFT, axis: ByRequestRate,
			want: []line{
				{"p50", [][]any{{0.99, 105.0}, {1.9, 150.0}, {3.1, 900.0}}, []string{"", "", "triangle"}},
				{"p99", [][]any{{0.99, 210.0}, {1.9, 300.0}, {3.1, 2400.0}}, []string{"", "", "triangle"}},
			},
			marks: map[string][]string{"p50": {"SLO 500 ms@yAxis=500", "max 2.00 req/s@xAxis=2"}},
		},
		{
			name: "by output tokens: the max rate at the tokens/s measured at that rate; no TPOT bound, no SLO line",
			runs: []CurveRun{{Cell: sweep()}}, figure: LoadTPOT, axis: ByOutputTokens,
			want: []line{
				{"p50", [][]any{{98.0, 20.5}, {190.0, 22.0}, {310.0, 60.0}}, []string{"", "", "triangle"}},
				{"p99", [][]any{{98.0, 27.0}, {190.0, 30.0}, {310.0, 95.0}}, []string{"", "", "triangle"}},
			},
			marks: map[string][]string{"p50": {"max 2.00 req/s@xAxis=190"}},
		},
		{
			name: "two runs compared: names per run, a shared SLO drawn once for both, each run's max rate",
			runs: []CurveRun{{Label: "A", Cell: sweep()}, {Label: "B", Cell: other}}, figure: LoadTTFT, axis: ByRequestRate,
			want: []line{
				{"A p50", [][]any{{0.99, 105.0}, {1.9, 150.0}, {3.1, 900.0}}, []string{"", "", "triangle"}},
				{"A p99", [][]any{{0.99, 210.0}, {1.9, 300.0}, {3.1, 2400.0}}, []string{"", "", "triangle"}},
				{"B p50", [][]any{{1.0, 80.0}, {2.0, 90.0}}, []string{"", ""}},
				{"B p99", [][]any{{1.0, 160.0}, {2.0, 170.0}}, []string{"", ""}},
			},
			marks: map[string][]string{
				"A p50": {"SLO 500 ms@yAxis=500", "A max 2.00 req/s@xAxis=2"},
				"B p50": {"B max 2.00 req/s@xAxis=2"},
			},
		},
		{
			name: "marks beyond the data stretch the axes to a round number past them",
			runs: []CurveRun{{Cell: bench.CompactCell{
				LoadPoints: []bench.LoadPoint{loadPoint(1, 1, 1, 100, 100, 200, 20, 26)},
				MaxRate:    &bench.MaxRate{Rate: 1.5}, SLO: &bench.SLO{TTFTMs: 5000},
			}}},
			figure: LoadTTFT, axis: ByRequestRate,
			want: []line{
				{"p50", [][]any{{1.0, 100.0}}, []string{""}},
				{"p99", [][]any{{1.0, 200.0}}, []string{""}},
			},
			marks: map[string][]string{"p50": {"SLO 5.00 s@yAxis=5000", "max 1.50 req/s@xAxis=1.5"}},
			xMax:  2.0, yMax: 6000.0,
		},
		{
			name: "a closed loop: by concurrency, no marks",
			runs: []CurveRun{{Cell: closed}}, figure: LoadTTFT, axis: ByRequestRate,
			want: []line{
				{"p50", [][]any{{5.0, 40.0}}, []string{""}},
				{"p99", [][]any{{5.0, 90.0}}, []string{""}},
			},
			marks: map[string][]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := decode(t, LoadCurve(tt.runs, tt.figure, tt.axis, Light))
			if got := lines(m); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("series\n got %v\nwant %v", got, tt.want)
			}
			if got := markLines(m); !reflect.DeepEqual(got, tt.marks) {
				t.Errorf("markLines\n got %v\nwant %v", got, tt.marks)
			}
			x := m["xAxis"].([]any)[0].(map[string]any)
			y := m["yAxis"].([]any)[0].(map[string]any)
			if x["type"] != "value" || x["min"] != 0.0 || x["max"] != tt.xMax || x["name"] != tt.axis.Name() {
				t.Errorf("x axis %v, want values from 0 to %v named %q", x, tt.xMax, tt.axis.Name())
			}
			if y["min"] != 0.0 || y["max"] != tt.yMax || y["name"] != tt.figure.Name+" (ms)" {
				t.Errorf("y axis %v, want 0 to %v", y, tt.yMax)
			}
		})
	}
}

func TestLoadCurvePointNames(t *testing.T) {
	for _, tc := range []struct {
		p    curvePoint
		want string
	}{
		{curvePoint{offered: 2, repeats: 1}, "2 req/s offered"},
		{curvePoint{offered: 0.5, repeats: 3}, "0.5 req/s offered (mean of 3 repeats)"},
		{curvePoint{concurrency: 8, repeats: 1}, "8 concurrent"},
	} {
		if got := tc.p.name(); got != tc.want {
			t.Errorf("name = %q, want %q", got, tc.want)
		}
	}
}

func TestNiceCeil(t *testing.T) {
	for in, want := range map[float64]float64{0: 0, 0.9: 1, 3.3: 4, 5500: 6000, 21: 25, 100: 100, 101: 120, 810: 1000} {
		if got := niceCeil(in); got != want {
			t.Errorf("niceCeil(%v) = %v, want %v", in, got, want)
		}
	}
}
