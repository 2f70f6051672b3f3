package profile

import (
	"math"
	"slices"
	"testing"

	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
)

// profile runs xs through a Detector and a Profiler, as the pipeline does,
// and returns the profiles.
func profile(opts Options, xs ...*decode.Exchange) ([]Producer, *Profiler) {
	det := detect.New(detect.Options{})
	prof := New(opts)
	for _, x := range xs {
		prof.Produce(x)
		det.Produce(x)
	}
	fs := det.Flush()
	for i := range fs {
		prof.Finding(&fs[i])
	}
	return prof.Producers(), prof
}

func near(got, want float64) bool { return math.Abs(got-want) <= 0.045*want }

func TestProfiler(t *testing.T) {
	gzip := plain(0xb)
	gzip.Attributes = 1
	inFlight := func(n int, x *decode.Exchange) *decode.Exchange { x.InFlight = n; return x }
	nonIdem := []*decode.Exchange{
		inFlight(1, ex(conn1, 1, 0, 1, 7, 5, plain(0xa))),   // REQUEST_TIMED_OUT after the append
		inFlight(1, ex(conn1, 2, 10, 14, 0, 6, plain(0xa))), // the re-send, appended again
		inFlight(2, ex(conn1, 3, 20, 22, 0, 7, gzip)),
		inFlight(1, ex(conn1, 4, 30, 33, 7, 8, plain(0xc))), // timed out, never re-sent
	}
	later := inFlight(1, ex(conn1, 5, 40, 41, 0, 9, plain(0xd)))
	idempotent := inFlight(1, ex(conn2, 1, 50, 52, 0, 0, idem(0, 0x10)))

	t.Run("settings, counts, latency, causes", func(t *testing.T) {
		ps, _ := profile(Options{}, append(slices.Clone(nonIdem), later, idempotent)...)
		if len(ps) != 2 {
			t.Fatalf("%d producers, want 2: %+v", len(ps), ps)
		}
		p := ps[0]
		if p.ProducerID != -1 || p.Idempotent || p.ClientIP != conn1.Client.Addr() || p.ClientID == nil || *p.ClientID != "rdkafka" {
			t.Errorf("key %v %v %d", p.ClientIP, p.ClientID, p.ProducerID)
		}
		if !slices.Equal(p.Acks, []int16{-1}) || !slices.Equal(p.TimeoutsMillis, []int32{5000}) || p.MaxInFlight != 2 ||
			!slices.Equal(p.Codecs, []string{"none", "gzip"}) || p.RecordsMean != 10 || p.RecordsMax != 10 {
			t.Errorf("settings: acks %v timeouts %v in flight %d codecs %v records %v/%d",
				p.Acks, p.TimeoutsMillis, p.MaxInFlight, p.Codecs, p.RecordsMean, p.RecordsMax)
		}
		if p.Requests != 5 || p.Sends != 5 || p.Batches != 4 || p.Resent != 1 || p.Resends != 1 || p.ByVerdict[detect.Duplicated] != 1 {
			t.Errorf("counts: requests %d sends %d batches %d resent %d resends %d verdicts %v",
				p.Requests, p.Sends, p.Batches, p.Resent, p.Resends, p.ByVerdict)
		}
		if len(p.Causes) != 1 || p.Causes[0] != (CauseCount{Cause: detect.CauseBrokerError, Error: "REQUEST_TIMED_OUT", Count: 1, MinGapMillis: 10, MaxGapMillis: 10}) {
			t.Errorf("causes %+v", p.Causes)
		}
		if len(p.Unretried) != 1 || p.Unretried[0] != (ErrorCount{Error: "REQUEST_TIMED_OUT", Count: 1}) {
			t.Errorf("unretried %+v, want REQUEST_TIMED_OUT once (correlation 4)", p.Unretried)
		}
		// Latencies 1, 4, 2, 3, 1 ms; without error 4, 2, 1 ms.
		if len(p.Latency) != 1 {
			t.Fatalf("latency %+v", p.Latency)
		}
		l := p.Latency[0]
		if l.Broker != conn1.Broker || l.Answered != 5 || !near(l.P50Millis, 2) || l.MaxMillis != 4 || !near(l.P99Millis, 4) ||
			l.Succeeded != 3 || !near(l.SucceededP50Millis, 2) || !near(l.SucceededP99Millis, 4) {
			t.Errorf("latency %+v", l)
		}
		if p.Overall.Answered != 5 || p.Overall.Broker.IsValid() {
			t.Errorf("overall %+v", p.Overall)
		}
		if p.Diagnosis == "" {
			t.Error("no diagnosis for a producer that re-sent")
		}
		q := ps[1]
		if q.ProducerID != 0 || !q.Idempotent || q.Requests != 1 || q.Resends != 0 || q.Diagnosis != "" {
			t.Errorf("idempotent producer %+v", q)
		}
	})

	t.Run("capture ends after an error: not called unretried", func(t *testing.T) {
		ps, _ := profile(Options{}, nonIdem...)
		if len(ps) != 1 || len(ps[0].Unretried) != 0 {
			t.Errorf("unretried %+v, want none: the capture ended before any retry could show", ps[0].Unretried)
		}
	})

	t.Run("bounded producers", func(t *testing.T) {
		ps, prof := profile(Options{MaxProducers: 1}, append(slices.Clone(nonIdem), idempotent)...)
		if len(ps) != 1 || prof.Omitted() != 1 {
			t.Errorf("%d producers, %d omitted; want 1, 1", len(ps), prof.Omitted())
		}
	})

	t.Run("twice gives the same", func(t *testing.T) {
		det := detect.New(detect.Options{})
		prof := New(Options{})
		for _, x := range nonIdem {
			prof.Produce(x)
			det.Produce(x)
		}
		fs := det.Flush()
		for i := range fs {
			prof.Finding(&fs[i])
		}
		a, b := prof.Producers(), prof.Producers()
		if a[0].Resends != b[0].Resends || a[0].Diagnosis != b[0].Diagnosis || len(a[0].Causes) != len(b[0].Causes) {
			t.Errorf("a second call differs: %+v\n%+v", a[0], b[0])
		}
	})

	t.Run("software from ApiVersions, acks=0 and a nil connection", func(t *testing.T) {
		c := *conn1
		c.ClientSoftwareName, c.ClientSoftwareVersion = "librdkafka", "2.0.2"
		x := acks0(ex(&c, 1, 0, noAnswer, 0, 0, plain(0x1)))
		y := ex(nil, 2, 1, 2, 0, 0)
		txn := "txn-1"
		y.TransactionalID = &txn
		ps, _ := profile(Options{}, x, y)
		if len(ps) != 2 || !slices.Equal(ps[1].TransactionalIDs, []string{"txn-1"}) || ps[0].SoftwareName != "librdkafka" || ps[0].SoftwareVersion != "2.0.2" || ps[0].MaxInFlight != 0 ||
			len(ps[0].Latency) != 0 || ps[0].Diagnosis == "" {
			t.Errorf("profiles %+v", ps)
		}
	})
}
