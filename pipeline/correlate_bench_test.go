package pipeline

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/fleet"
)

// benchSource hands out pre-encoded attempt records of three hosts,
// decoded and merged as a fleet.Consumer does, without Kafka.
type benchSource struct {
	vals   [][]byte
	next   int
	dec    *fleet.Decoder
	merger *fleet.Merger
}

func (s *benchSource) Poll(_ context.Context, _ time.Duration, out []fleet.Event) ([]fleet.Event, error) {
	for range 256 {
		if s.next == len(s.vals) {
			return s.merger.Release(out, true), nil
		}
		ev, err := s.dec.Decode(s.vals[s.next])
		if err != nil {
			return out, err
		}
		s.merger.Add(ev, int32(s.next%8))
		s.next++
	}
	return s.merger.Release(out, false), nil
}
func (s *benchSource) Flush(out []fleet.Event) []fleet.Event { return s.merger.Release(out, true) }
func (s *benchSource) Advance(time.Time)                     {}
func (s *benchSource) HostOf(id uint64) string               { return s.dec.HostOf(id) }
func (s *benchSource) Hosts() []fleet.HostStats              { return s.merger.Hosts() }

// benchAttempts makes the bench's n attempts, in capture order, handing
// each to emit with the host (0-2) that saw it: 50 producers on 150
// connections to 3 brokers, one batch of 10 records every 50 µs, every
// 100th batch sent again 10 ms later to another host.
func benchAttempts(n int, emit func(h int, x *decode.Exchange)) {
	t0 := time.Unix(1700000000, 0)
	conns := make([]*decode.ConnInfo, 150)
	for i := range conns {
		conns[i] = &decode.ConnInfo{ID: uint64(i/3 + 1), Client: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, 0, byte(i / 3)}), uint16(40000+i)),
			Broker: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(1 + i%3)}), 9092), DetectedBy: "port", FirstSeen: t0}
	}
	ids := make([]string, 50)
	for i := range ids {
		ids[i] = fmt.Sprintf("app-%d", i)
	}
	for i := range n {
		ci := i % len(conns)
		req := t0.Add(time.Duration(i) * 50 * time.Microsecond)
		bt := decode.Batch{Topic: "orders", Partition: int32(i % 12), Magic: 2, CRC: uint32(i) * 2654435761, NumRecords: 10, Length: 1200,
			ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, Hash: uint64(i) * 0x9e3779b97f4a7c15}
		x := &decode.Exchange{Conn: conns[ci], ClientID: &ids[ci/3], CorrelationID: int32(i), Version: 9, Acks: -1, RequestTime: req,
			Responded: true, ResponseTime: req.Add(time.Millisecond), Batches: []decode.Batch{bt}}
		x.Batches[0].Response = &decode.PartitionResponse{BaseOffset: int64(i)}
		emit(ci%3, x)
		if i%100 == 0 {
			retry := *x
			retry.Conn = conns[(ci+1)%len(conns)]
			retry.RequestTime, retry.ResponseTime = req.Add(10*time.Millisecond), req.Add(11*time.Millisecond)
			retry.Batches = []decode.Batch{bt}
			retry.Batches[0].Response = &decode.PartitionResponse{BaseOffset: int64(i) + 1}
			emit((ci+1)%3, &retry)
		}
	}
}

// benchEncoders are the three hosts' encoders.
func benchEncoders() []*fleet.Encoder {
	var encs []*fleet.Encoder
	for h := range 3 {
		encs = append(encs, fleet.NewEncoder(fleet.EncoderOptions{Host: fmt.Sprintf("broker-%d", h), Run: uint64(h + 1)}))
	}
	return encs
}

// BenchmarkCorrelate: attempts per second (on one goroutine: per core)
// through record decoding, the merge of three hosts, detection and the
// producer profiles; every 100th batch is sent again to another host.
func BenchmarkCorrelate(b *testing.B) {
	encs := benchEncoders()
	var vals [][]byte
	benchAttempts(200000, func(h int, x *decode.Exchange) {
		encs[h].Exchange(x, func(_, v []byte) { vals = append(vals, append([]byte(nil), v...)) })
	})
	b.ReportAllocs()
	var attempts int
	for b.Loop() {
		src := &benchSource{vals: vals, dec: fleet.NewDecoder(0), merger: fleet.NewMerger(fleet.MergeOptions{})}
		c := NewCorrelate(CorrelateOptions{Options: Options{Window: time.Minute}, Settle: time.Second}, src)
		ctx := context.Background()
		for src.next < len(src.vals) {
			evs, _ := src.Poll(ctx, 0, c.buf[:0])
			c.feed(evs, time.Now())
			c.buf = evs[:0]
		}
		c.Finish()
		attempts += len(vals)
	}
	b.ReportMetric(float64(attempts)/b.Elapsed().Seconds(), "attempts/s")
}

// streamSource is benchSource over attempts made as they are read, so
// that the input holds no memory: a correlation's peak RSS is its own
// state (the merge, the connections, detection, the profiles) and what it
// reads at a time, as from Kafka's fetches.
type streamSource struct {
	benchSource
	ch   chan []byte
	done bool
}

func (s *streamSource) Poll(_ context.Context, _ time.Duration, out []fleet.Event) ([]fleet.Event, error) {
	for range 256 {
		v, ok := <-s.ch
		if !ok {
			s.done = true
			return s.merger.Release(out, true), nil
		}
		ev, err := s.dec.Decode(v)
		if err != nil {
			return out, err
		}
		s.merger.Add(ev, int32(s.next%8))
		s.next++
	}
	return s.merger.Release(out, false), nil
}

// rssChildEnv names the child run of TestCorrelateRSSChild: "N WINDOW".
const rssChildEnv = "KDUPCAP_CORRELATE_RSS"

// TestCorrelateRSSChild is the process BenchmarkCorrelatePeakRSS measures:
// it correlates the bench's attempts, made as they are read, and prints
// its peak RSS (getrusage). It runs only as that child.
func TestCorrelateRSSChild(t *testing.T) {
	spec := os.Getenv(rssChildEnv)
	if spec == "" {
		t.Skip("the child of BenchmarkCorrelatePeakRSS")
	}
	f := strings.Fields(spec)
	if len(f) != 2 {
		t.Fatalf("%s=%q: want N WINDOW", rssChildEnv, spec)
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		t.Fatal(err)
	}
	window, err := time.ParseDuration(f[1])
	if err != nil {
		t.Fatal(err)
	}
	src := &streamSource{benchSource: benchSource{dec: fleet.NewDecoder(0), merger: fleet.NewMerger(fleet.MergeOptions{})}, ch: make(chan []byte, 1024)}
	go func() {
		encs := benchEncoders()
		benchAttempts(n, func(h int, x *decode.Exchange) {
			encs[h].Exchange(x, func(_, v []byte) { src.ch <- append([]byte(nil), v...) })
		})
		close(src.ch)
	}()
	c := NewCorrelate(CorrelateOptions{Options: Options{Window: window}, Settle: time.Second}, src)
	start := time.Now()
	for !src.done {
		evs, _ := src.Poll(context.Background(), 0, c.buf[:0])
		c.feed(evs, time.Now())
		c.buf = evs[:0]
	}
	c.Finish()
	el := time.Since(start)
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("correlate-rss attempts %d window %s peak_rss_kib %d seconds %.3f findings %d\n", src.next, window, ru.Maxrss, el.Seconds(), c.findings)
}

// BenchmarkCorrelatePeakRSS: the peak RSS of a correlation, each run in a
// process of its own (this test binary, TestCorrelateRSSChild), on the
// bench's attempts (made as they are read, as from Kafka): with the
// bench's 1-minute window over its 200,000 attempts (10 s of capture
// time, all within the window), then with a 10 s window over 200,000 and
// over 1,000,000 attempts (50 s): past the window the peak stays, bounded
// as live's (Window, MaxBatches; the merge by MaxHeld).
func BenchmarkCorrelatePeakRSS(b *testing.B) {
	for _, tc := range []struct {
		name   string
		n      int
		window time.Duration
	}{
		{"200k-attempts-window-1m", 200000, time.Minute},
		{"200k-attempts-window-10s", 200000, 10 * time.Second},
		{"1M-attempts-window-10s", 1000000, 10 * time.Second},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var kib, attempts int64
			var secs float64
			for b.Loop() {
				cmd := exec.Command(os.Args[0], "-test.run=^TestCorrelateRSSChild$", "-test.count=1")
				cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %s", rssChildEnv, tc.n, tc.window))
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("child: %v: %s", err, out)
				}
				found := false
				sc := bufio.NewScanner(strings.NewReader(string(out)))
				for sc.Scan() {
					f := strings.Fields(sc.Text())
					if len(f) >= 9 && f[0] == "correlate-rss" {
						attempts, _ = strconv.ParseInt(f[2], 10, 64)
						kib, _ = strconv.ParseInt(f[6], 10, 64)
						secs, _ = strconv.ParseFloat(f[8], 64)
						found = true
					}
				}
				if !found {
					b.Fatalf("child printed no measure: %s", out)
				}
			}
			b.ReportMetric(float64(kib)/1024, "peak-RSS-MiB")
			b.ReportMetric(float64(attempts)/secs, "attempts/s")
		})
	}
}
