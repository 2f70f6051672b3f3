package pipeline

import (
	"context"
	"fmt"
	"net/netip"
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

// BenchmarkCorrelate: attempts per second (on one goroutine: per core)
// through record decoding, the merge of three hosts, detection and the
// producer profiles; every 100th batch is sent again to another host.
func BenchmarkCorrelate(b *testing.B) {
	const n = 200000
	t0 := time.Unix(1700000000, 0)
	encs := []*fleet.Encoder{}
	for h := range 3 {
		encs = append(encs, fleet.NewEncoder(fleet.EncoderOptions{Host: fmt.Sprintf("broker-%d", h), Run: uint64(h + 1)}))
	}
	conns := make([]*decode.ConnInfo, 150)
	for i := range conns {
		conns[i] = &decode.ConnInfo{ID: uint64(i/3 + 1), Client: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, 0, byte(i / 3)}), uint16(40000+i)),
			Broker: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(1 + i%3)}), 9092), DetectedBy: "port", FirstSeen: t0}
	}
	var vals [][]byte
	add := func(h int, x *decode.Exchange) {
		encs[h].Exchange(x, func(_, v []byte) { vals = append(vals, append([]byte(nil), v...)) })
	}
	for i := range n {
		ci := i % len(conns)
		id := fmt.Sprintf("app-%d", ci/3)
		req := t0.Add(time.Duration(i) * 50 * time.Microsecond)
		bt := decode.Batch{Topic: "orders", Partition: int32(i % 12), Magic: 2, CRC: uint32(i) * 2654435761, NumRecords: 10, Length: 1200,
			ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, Hash: uint64(i) * 0x9e3779b97f4a7c15}
		x := &decode.Exchange{Conn: conns[ci], ClientID: &id, CorrelationID: int32(i), Version: 9, Acks: -1, RequestTime: req,
			Responded: true, ResponseTime: req.Add(time.Millisecond), Batches: []decode.Batch{bt}}
		x.Batches[0].Response = &decode.PartitionResponse{BaseOffset: int64(i)}
		add(ci%3, x)
		if i%100 == 0 {
			retry := *x
			retry.Conn = conns[(ci+1)%len(conns)]
			retry.RequestTime, retry.ResponseTime = req.Add(10*time.Millisecond), req.Add(11*time.Millisecond)
			retry.Batches = []decode.Batch{bt}
			retry.Batches[0].Response = &decode.PartitionResponse{BaseOffset: int64(i) + 1}
			add((ci+1)%3, &retry)
		}
	}
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
