package profile

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestSketchQuantiles compares the sketch's quantiles with the exact ones of
// the same values: within the bucket's relative error (4.4%), max exact.
func TestSketchQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		gen  func(i int) time.Duration
		n    int
	}{
		{"constant 4ms", func(int) time.Duration { return 4 * time.Millisecond }, 100},
		{"uniform 1-1000ms", func(int) time.Duration { return time.Millisecond + time.Duration(rng.Int64N(int64(time.Second))) }, 10000},
		{"log-uniform 10us-100s", func(int) time.Duration {
			return time.Duration(math.Pow(10, 4+rng.Float64()*7))
		}, 20000},
		{"bimodal 1ms and 300ms", func(i int) time.Duration {
			if i%10 == 0 {
				return 300*time.Millisecond + time.Duration(rng.Int64N(int64(time.Millisecond)))
			}
			return time.Millisecond + time.Duration(rng.Int64N(int64(100*time.Microsecond)))
		}, 1000},
		{"one value", func(int) time.Duration { return 1500 * time.Microsecond }, 1},
		{"below 1us", func(i int) time.Duration { return time.Duration(i % 900) }, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Sketch
			vals := make([]time.Duration, tt.n)
			for i := range vals {
				vals[i] = tt.gen(i)
				s.Add(vals[i])
			}
			slices.Sort(vals)
			if s.Count() != uint64(tt.n) || s.Max() != vals[len(vals)-1] {
				t.Fatalf("count %d max %v, want %d %v", s.Count(), s.Max(), tt.n, vals[len(vals)-1])
			}
			for _, q := range []float64{0, 0.01, 0.5, 0.9, 0.99, 1} {
				rank := max(int(math.Ceil(q*float64(tt.n))), 1)
				exact := vals[rank-1]
				got := s.Quantile(q)
				tol := 0.045 * float64(exact)
				if exact < time.Microsecond {
					tol = float64(time.Microsecond) // bucket 0 holds everything under 1µs
				}
				if math.Abs(float64(got-exact)) > tol {
					t.Errorf("q%.2f = %v, exact %v", q, got, exact)
				}
			}
		})
	}
}

// TestSketchEdges: empty, negative and beyond the last bucket.
func TestSketchEdges(t *testing.T) {
	var s Sketch
	if s.Quantile(0.5) != 0 || s.Max() != 0 || s.Count() != 0 {
		t.Fatal("empty sketch not zero")
	}
	s.Add(-time.Second)
	if s.Quantile(0.5) != 0 {
		t.Errorf("negative counted as %v, want 0", s.Quantile(0.5))
	}
	s.Add(100 * time.Hour)
	if got := s.Quantile(1); got != 100*time.Hour {
		t.Errorf("q1 = %v, want the exact max 100h", got)
	}
	if got := s.Quantile(2); got != 100*time.Hour {
		t.Errorf("q>1 = %v, want the max", got)
	}
}

// TestSketchFixedSize: adding does not allocate, whatever the values: the
// memory of a profile does not grow with the capture.
func TestSketchFixedSize(t *testing.T) {
	var s Sketch
	i := 0
	allocs := testing.AllocsPerRun(10000, func() {
		i++
		s.Add(time.Duration(i) * time.Millisecond)
	})
	if allocs != 0 {
		t.Errorf("Add allocates %v times", allocs)
	}
}

// TestSketchMerge: sketches merged hold what one sketch of every duration
// holds, empty ones included.
func TestSketchMerge(t *testing.T) {
	tests := []struct {
		name string
		a, b []time.Duration
	}{
		{"both", []time.Duration{time.Millisecond, 3 * time.Second}, []time.Duration{0, 40 * time.Microsecond, time.Hour}},
		{"empty into some", nil, []time.Duration{time.Millisecond}},
		{"some into empty", []time.Duration{time.Millisecond}, nil},
		{"both empty", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a, b, want Sketch
			for _, d := range tt.a {
				a.Add(d)
				want.Add(d)
			}
			for _, d := range tt.b {
				b.Add(d)
				want.Add(d)
			}
			a.merge(&b)
			if a != want {
				t.Errorf("merged %+v\nwant %+v", a, want)
			}
		})
	}
}

func TestSketchHistogram(t *testing.T) {
	us := time.Microsecond
	tests := []struct {
		name string
		adds []time.Duration
		want []HistogramBin
	}{
		{"empty", nil, nil},
		{"under 1 µs", []time.Duration{0, 500 * time.Nanosecond}, []HistogramBin{{0, 0.001, 2}}},
		{"one octave", []time.Duration{1 * time.Millisecond, 1500 * us}, []HistogramBin{{0.512, 1.024, 1}, {1.024, 2.048, 1}}},
		{"gap kept", []time.Duration{3 * us, 40 * us}, []HistogramBin{{0.002, 0.004, 1}, {0.004, 0.008, 0}, {0.008, 0.016, 0}, {0.016, 0.032, 0}, {0.032, 0.064, 1}}},
		{"longest in last bar", []time.Duration{10 * time.Hour, 20 * time.Hour}, []HistogramBin{{2147483.648, 4294967.296, 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Sketch
			for _, d := range tt.adds {
				s.Add(d)
			}
			got := s.Histogram()
			if len(got) != len(tt.want) {
				t.Fatalf("histogram %v, want %v", got, tt.want)
			}
			var n uint64
			for i := range got {
				if math.Abs(got[i].LowMillis-tt.want[i].LowMillis) > 1e-9 || math.Abs(got[i].HighMillis-tt.want[i].HighMillis) > 1e-9 || got[i].Count != tt.want[i].Count {
					t.Fatalf("histogram %v, want %v", got, tt.want)
				}
				n += got[i].Count
			}
			if n != s.Count() {
				t.Errorf("bars hold %d, the sketch %d", n, s.Count())
			}
		})
	}
}
