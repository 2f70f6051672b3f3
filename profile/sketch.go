package profile

import (
	"math"
	"time"
)

// Sketch geometry: bucket 0 holds durations under 1µs; bucket i > 0 holds
// [2^((i-1)/8), 2^(i/8)) µs, so a quantile read from a bucket's geometric
// middle is within 2^(1/16)-1 (4.4%) of a value in it; the last bucket also
// holds everything longer (2^(254/8) µs is about 50 minutes).
const (
	sketchBucketsPerOctave = 8
	sketchBuckets          = 256
)

// Sketch is a streaming latency histogram of fixed size (about 2 KiB):
// logarithmic buckets, so quantiles have a bounded relative error and the
// memory does not grow with the number of values. The minimum and maximum
// are exact. The zero value is empty and ready.
type Sketch struct {
	counts   [sketchBuckets]uint64
	n        uint64
	min, max time.Duration
}

// Add counts one duration; a negative one counts as 0.
func (s *Sketch) Add(d time.Duration) {
	d = max(d, 0)
	if s.n == 0 || d < s.min {
		s.min = d
	}
	if s.n == 0 || d > s.max {
		s.max = d
	}
	s.n++
	s.counts[sketchBucket(d)]++
}

// merge adds the durations of o to s.
func (s *Sketch) merge(o *Sketch) {
	if o.n == 0 {
		return
	}
	if s.n == 0 || o.min < s.min {
		s.min = o.min
	}
	if s.n == 0 || o.max > s.max {
		s.max = o.max
	}
	s.n += o.n
	for i, c := range o.counts {
		s.counts[i] += c
	}
}

// sketchBucket is the bucket of d.
func sketchBucket(d time.Duration) int {
	us := float64(d) / float64(time.Microsecond)
	if us < 1 {
		return 0
	}
	i := int(math.Floor(math.Log2(us)*sketchBucketsPerOctave)) + 1
	return min(i, sketchBuckets-1)
}

// Count is the number of durations added.
func (s *Sketch) Count() uint64 { return s.n }

// Max is the longest duration added, 0 when empty.
func (s *Sketch) Max() time.Duration { return s.max }

// Quantile returns the q-quantile (0 <= q <= 1) of the durations added: the
// geometric middle of the bucket holding the value of rank ceil(q*n), kept
// within the exact minimum and maximum; the maximum itself for the last
// rank. It is 0 when empty.
func (s *Sketch) Quantile(q float64) time.Duration {
	if s.n == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := uint64(math.Ceil(q * float64(s.n)))
	rank = max(rank, 1)
	if rank >= s.n {
		return s.max
	}
	var seen uint64
	for i, c := range s.counts {
		seen += c
		if seen < rank {
			continue
		}
		var v time.Duration
		if i == sketchBuckets-1 {
			return s.max // the last bucket is open-ended
		}
		if i > 0 {
			mid := math.Exp2((float64(i) - 0.5) / sketchBucketsPerOctave)
			v = time.Duration(mid * float64(time.Microsecond))
		}
		return min(max(v, s.min), s.max)
	}
	return s.max
}

// HistogramBin is one bar of a latency histogram: the durations in
// [Low, High) ms, and how many; the last bar of all, from 2^31 µs (about
// 36 minutes), also holds every longer one.
type HistogramBin struct {
	LowMillis, HighMillis float64
	Count                 uint64
}

// Histogram returns the durations added as bars of one octave each (a
// factor of two: 1-2 µs, 2-4 µs, ...; durations under 1 µs in a first bar
// from 0), from the shortest bar holding a duration to the longest, the
// empty ones between included; nil when empty. It reads the sketch's own
// buckets, so it costs no memory beyond the bars returned (at most 33).
func (s *Sketch) Histogram() []HistogramBin {
	if s.n == 0 {
		return nil
	}
	const octaves = (sketchBuckets-2)/sketchBucketsPerOctave + 1
	var bins [octaves + 1]uint64
	for i, c := range s.counts {
		if c == 0 {
			continue
		}
		o := 0 // under 1 µs
		if i > 0 {
			o = 1 + (i-1)/sketchBucketsPerOctave
		}
		bins[min(o, octaves)] += c
	}
	lo, hi := -1, -1
	for i, c := range bins {
		if c > 0 {
			if lo < 0 {
				lo = i
			}
			hi = i
		}
	}
	out := make([]HistogramBin, 0, hi-lo+1)
	for i := lo; i <= hi; i++ {
		b := HistogramBin{Count: bins[i]}
		if i > 0 {
			b.LowMillis = math.Exp2(float64(i-1)) / 1000
		}
		b.HighMillis = math.Exp2(float64(i)) / 1000
		out = append(out, b)
	}
	return out
}
