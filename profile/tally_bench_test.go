package profile

import (
	"runtime"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/detect"
)

// BenchmarkProfilerFinding hands a Profiler of a live run (Revisable 10m30s,
// the live defaults) one two-attempt finding report per call, 1 ms of
// packet time apart, none past revision: the pending findings grow to
// MaxPending (the default, DefaultMaxPending) and are then tallied oldest
// first. It reports the heap per pending finding once they reach the cap.
func BenchmarkProfilerFinding(b *testing.B) {
	prof := New(Options{Revisable: 10*time.Minute + 30*time.Second})
	prof.Produce(ex(conn1, 1, 0, 1, 0, 0, plain(1)))
	f := detect.Finding{Client: conn1.Client, ClientID: &rdkafka, ProducerID: -1, Topic: "test", Verdict: detect.Duplicated,
		AppendedOffsets: []int64{1, 2},
		Attempts:        []detect.Attempt{{ConnID: 1}, {ConnID: 1, Cause: detect.CauseBrokerError, CauseError: "REQUEST_TIMED_OUT", GapMillis: 10}}}
	f.Attempts[0].Response = &detect.Response{ErrorCode: 7, Error: "REQUEST_TIMED_OUT"}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		at := t0.Add(time.Duration(i) * time.Millisecond)
		f.Attempts[0].CorrelationID, f.Attempts[0].Time = int32(2*i), at
		f.Attempts[1].CorrelationID, f.Attempts[1].Time = int32(2*i+1), at.Add(10*time.Millisecond)
		f.ID = uint64(i + 1) // a live Detector's name for each finding: without one, none is kept revisable
		prof.Finding(&f)
	}
	b.StopTimer()
	if n := prof.Pending(); n == DefaultMaxPending {
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "heap-bytes/pending")
	}
	if p := prof.Producers()[0]; p.Resent != int64(b.N) {
		b.Fatalf("resent %d, want %d", p.Resent, b.N)
	}
}
