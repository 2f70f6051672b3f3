package detect

import (
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/decode"
)

// BenchmarkDetect feeds exchanges of one batch each, one in a hundred a
// resend, 100 µs of packet time apart, through the default window and cap.
// Bytes are the batches' wire sizes, for a produce-payload rate.
func BenchmarkDetect(b *testing.B) {
	d := New(Options{})
	resp := decode.PartitionResponse{LogAppendTime: -1}
	x := &decode.Exchange{Conn: conn1, ClientID: &rdkafka, Version: 9, Acks: -1, TimeoutMillis: 30000,
		Responded: true, Batches: []decode.Batch{plain(0)}}
	x.Batches[0].Length = 1000
	b.SetBytes(1000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		n := i
		if i%100 == 99 {
			n = i - 1 // re-send the previous batch
		}
		bt := &x.Batches[0]
		bt.Hash, bt.CRC = uint64(n)*0x9e3779b97f4a7c15, uint32(n)
		bt.Partition = int32(n % 16)
		x.CorrelationID = int32(i)
		x.RequestTime = t0.Add(time.Duration(i) * 100 * time.Microsecond)
		x.ResponseTime = x.RequestTime.Add(2 * time.Millisecond)
		resp.BaseOffset = int64(i)
		bt.Response = &resp
		d.Produce(x)
	}
	d.Flush()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "exchanges/s")
}
