package profile

import (
	"net/netip"
	"slices"
	"time"
)

// Timeline bounds: the buckets of capture time, and the brokers drawn
// apart (the others share the zero broker's series).
const (
	DefaultTimelineBuckets = 64
	MaxTimelineBrokers     = 16
)

// minBucketWidth is the first width of a Timeline's buckets; it doubles as
// the capture grows longer than the buckets cover.
const minBucketWidth = time.Millisecond

// Timeline is produce latency per broker over capture time, in a fixed
// number of buckets of equal width: when a time past the last bucket
// comes, the width doubles and each pair of neighbours merges into one,
// so its memory stays fixed (at most MaxTimelineBrokers series of N
// buckets, a Sketch each, allocated as brokers are seen) however long the
// capture. A time before the first bucket shifts the buckets when there is
// room, else it counts in the first bucket. The zero value is not usable:
// use NewTimeline.
type Timeline struct {
	n      int
	start  time.Time // of bucket 0; zero until the first Add
	width  time.Duration
	used   int // buckets up to the last one with a value
	series []timelineSeries
	last   time.Time
}

type timelineSeries struct {
	broker  netip.AddrPort
	buckets []Sketch
}

// NewTimeline returns an empty Timeline of n buckets (DefaultTimelineBuckets
// when n < 2).
func NewTimeline(n int) *Timeline {
	if n < 2 {
		n = DefaultTimelineBuckets
	}
	return &Timeline{n: n, width: minBucketWidth}
}

// Clone returns a deep copy of tl, which later Adds to tl do not change.
func (tl *Timeline) Clone() *Timeline {
	c := *tl
	c.series = make([]timelineSeries, len(tl.series))
	for i, s := range tl.series {
		c.series[i] = timelineSeries{broker: s.broker, buckets: slices.Clone(s.buckets)}
	}
	return &c
}

// Add counts one answered request to broker, sent at t, of latency d.
func (tl *Timeline) Add(broker netip.AddrPort, t time.Time, d time.Duration) {
	i := tl.bucket(t)
	s := tl.seriesOf(broker)
	s.buckets[i].Add(d)
	tl.used = max(tl.used, i+1)
	if t.After(tl.last) {
		tl.last = t
	}
}

// bucket is the index of t, after doubling or shifting the buckets to
// hold it.
func (tl *Timeline) bucket(t time.Time) int {
	if tl.start.IsZero() {
		tl.start = t
		tl.last = t
	}
	if t.Before(tl.start) {
		k := int((tl.start.Sub(t) + tl.width - 1) / tl.width)
		if tl.used+k > tl.n {
			return 0
		}
		tl.shift(k)
	}
	for t.Sub(tl.start) >= time.Duration(tl.n)*tl.width {
		tl.double()
	}
	return int(t.Sub(tl.start) / tl.width)
}

// shift moves every bucket k later, the start k widths earlier.
func (tl *Timeline) shift(k int) {
	for si := range tl.series {
		b := tl.series[si].buckets
		copy(b[k:], b[:tl.n-k])
		clear(b[:k])
	}
	tl.start = tl.start.Add(-time.Duration(k) * tl.width)
	tl.used += k
}

// double merges each pair of neighbouring buckets into one of twice the
// width.
func (tl *Timeline) double() {
	for si := range tl.series {
		b := tl.series[si].buckets
		for i := 0; i < tl.n; i++ {
			var m Sketch
			if 2*i < tl.n {
				m = b[2*i]
			}
			if 2*i+1 < tl.n {
				m.merge(&b[2*i+1])
			}
			b[i] = m
		}
	}
	tl.width *= 2
	tl.used = (tl.used + 1) / 2
}

func (tl *Timeline) seriesOf(broker netip.AddrPort) *timelineSeries {
	for i := range tl.series {
		if tl.series[i].broker == broker {
			return &tl.series[i]
		}
	}
	if len(tl.series) >= MaxTimelineBrokers-1 && broker != (netip.AddrPort{}) {
		return tl.seriesOf(netip.AddrPort{})
	}
	tl.series = append(tl.series, timelineSeries{broker: broker, buckets: make([]Sketch, tl.n)})
	return &tl.series[len(tl.series)-1]
}

// TimelineBucket is one bucket of one broker: its start, the requests
// answered in it and their latency quantiles, in ms.
type TimelineBucket struct {
	Start                time.Time
	Count                int64
	P50Millis, P99Millis float64
	MaxMillis            float64
}

// TimelineSeries is one broker's buckets (the zero broker: the brokers
// past MaxTimelineBrokers), empty buckets left out.
type TimelineSeries struct {
	Broker  netip.AddrPort
	Buckets []TimelineBucket
}

// Width is the buckets' width; Start the first one's (zero when empty);
// End the latest time added.
func (tl *Timeline) Width() time.Duration { return tl.width }

// Start is the time of the first bucket; zero before any Add.
func (tl *Timeline) Start() time.Time { return tl.start }

// End is the latest time added.
func (tl *Timeline) End() time.Time { return tl.last }

// Series returns each broker's buckets, ordered by broker; the slices are
// the caller's.
func (tl *Timeline) Series() []TimelineSeries {
	out := make([]TimelineSeries, 0, len(tl.series))
	for _, s := range tl.series {
		ts := TimelineSeries{Broker: s.broker}
		for i := range s.buckets[:tl.used] {
			b := &s.buckets[i]
			if b.Count() == 0 {
				continue
			}
			ts.Buckets = append(ts.Buckets, TimelineBucket{
				Start:     tl.start.Add(time.Duration(i) * tl.width),
				Count:     int64(b.Count()),
				P50Millis: millis(int64(b.Quantile(0.5))),
				P99Millis: millis(int64(b.Quantile(0.99))),
				MaxMillis: millis(int64(b.Max())),
			})
		}
		out = append(out, ts)
	}
	slices.SortFunc(out, func(a, b TimelineSeries) int { return a.Broker.Compare(b.Broker) })
	return out
}
