package bench

import (
	"math"
	"testing"
)

func TestPercentile(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		p    float64
		want float64
	}{
		{nil, 50, 0},
		{[]float64{7}, 99, 7},
		{[]float64{1, 2, 3, 4}, 50, 2.5},          // numpy.percentile([1,2,3,4], 50)
		{[]float64{1, 2, 3, 4}, 90, 3.7},          // (n-1)*0.9 = 2.7
		{[]float64{1, 2, 3, 4, 5}, 0, 1},          //
		{[]float64{1, 2, 3, 4, 5}, 100, 5},        //
		{[]float64{10, 20, 30, 40, 50}, 99, 49.6}, // rank 3.96
	} {
		if got := Percentile(tc.xs, tc.p); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Percentile(%v, %v) = %v, want %v", tc.xs, tc.p, got, tc.want)
		}
	}
}

func TestCollector(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int
		n     int
	}{
		{"all kept", 0, 1000},
		{"sampled past the limit", 100, 10000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCollector(tc.limit, 1)
			c.Add(math.NaN())
			c.Add(math.Inf(1))
			for i := 1; i <= tc.n; i++ {
				c.Add(float64(i))
			}
			d := c.Dist()
			n := float64(tc.n)
			if d.Count != tc.n || math.Abs(d.Mean-(n+1)/2) > 1e-6 {
				t.Fatalf("count %d mean %v, want %d and %v", d.Count, d.Mean, tc.n, (n+1)/2)
			}
			if std := math.Sqrt((n*n - 1) / 12); math.Abs(d.Std-std) > 1e-6*std {
				t.Errorf("std %v, want %v", d.Std, std)
			}
			if d.Sampled != (tc.limit > 0 && tc.n > tc.limit) {
				t.Errorf("sampled %v", d.Sampled)
			}
			// A uniform sample of 1..n has its median near n/2.
			if math.Abs(d.Median-(n+1)/2) > n*0.15 {
				t.Errorf("median %v, want near %v", d.Median, (n+1)/2)
			}
		})
	}
}

func TestSpread(t *testing.T) {
	tests := []struct {
		vs   []float64
		want float64
	}{
		{nil, 0}, {[]float64{0, -1}, 0}, {[]float64{100}, 1}, {[]float64{3.1, 3.9, 3.1}, 3.9 / 3.1}, {[]float64{0, 50, 100}, 2},
	}
	for _, tt := range tests {
		if got := Spread(tt.vs); got != tt.want {
			t.Errorf("Spread(%v) = %v, want %v", tt.vs, got, tt.want)
		}
	}
}
