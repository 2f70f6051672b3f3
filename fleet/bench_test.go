package fleet

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/kdupcap/kdupcap/decode"
)

// benchExchanges are n typical attempts: one batch of 10 records, answered,
// from 50 producers (client.id "app-N") to 3 brokers.
func benchExchanges(n int) []*decode.Exchange {
	t0 := time.Unix(1700000000, 0)
	conns := make([]*decode.ConnInfo, 150)
	for i := range conns {
		conns[i] = &decode.ConnInfo{ID: uint64(i + 1), Client: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, 0, byte(i / 3)}), uint16(40000+i)),
			Broker: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(1 + i%3)}), 9092), DetectedBy: "port", FirstSeen: t0}
	}
	xs := make([]*decode.Exchange, n)
	for i := range xs {
		c := conns[i%len(conns)]
		id := fmt.Sprintf("app-%d", i%50)
		req := t0.Add(time.Duration(i) * 100 * time.Microsecond)
		xs[i] = &decode.Exchange{Conn: c, ClientID: &id, CorrelationID: int32(i / len(conns)), Version: 9, Acks: -1, TimeoutMillis: 30000,
			RequestTime: req, Responded: true, ResponseTime: req.Add(2 * time.Millisecond), InFlight: 1,
			Batches: []decode.Batch{{Topic: "orders", Partition: int32(i % 12), Magic: 2, CRC: uint32(i) * 2654435761, LastOffsetDelta: 9,
				FirstTimestamp: req.UnixMilli(), MaxTimestamp: req.UnixMilli() + 3, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
				NumRecords: 10, Length: 1200, Hash: uint64(i) * 0x9e3779b97f4a7c15,
				Response: &decode.PartitionResponse{BaseOffset: int64(i) * 10, LogAppendTime: -1, LogStartOffset: 0}}}}
	}
	return xs
}

// BenchmarkEncodeAttempt: the publisher's cost per attempt on the
// capture's goroutine, and the schema's size: bytes per attempt as
// encoded, and as produced (zstd over a batch of records, as the
// publisher's client compresses them).
func BenchmarkEncodeAttempt(b *testing.B) {
	xs := benchExchanges(4096)
	enc := NewEncoder(EncoderOptions{Host: "broker-1.example.com", Run: 1 << 40, Prints: PrintsNear})
	var n, size int
	var batch []byte
	emit := func(_, v []byte) {
		n++
		size += len(v)
		if len(batch) < 1<<20 {
			batch = append(batch, v...)
		}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		enc.Exchange(xs[i%len(xs)], emit)
	}
	zw, _ := zstd.NewWriter(nil)
	z := zw.EncodeAll(batch, nil)
	perRecord := float64(size) / float64(n)
	b.ReportMetric(perRecord, "bytes/attempt")
	b.ReportMetric(perRecord*float64(len(z))/float64(len(batch)), "zstd-bytes/attempt")
}

// BenchmarkDecodeAttempt: the correlation's cost of reading one record.
func BenchmarkDecodeAttempt(b *testing.B) {
	xs := benchExchanges(4096)
	enc := NewEncoder(EncoderOptions{Host: "broker-1.example.com", Run: 1 << 40})
	var vals [][]byte
	for _, x := range xs {
		enc.Exchange(x, func(_, v []byte) { vals = append(vals, append([]byte(nil), v...)) })
	}
	dec := NewDecoder(0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := dec.Decode(vals[i%len(vals)]); err != nil {
			b.Fatal(err)
		}
	}
}
