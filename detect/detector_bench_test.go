package detect

import (
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/decode"
)

// BenchmarkDetect feeds exchanges of one batch each, one in a hundred a
// resend, 100 µs of packet time apart, through the default window and cap.
// Bytes are the batches' wire sizes, for a produce-payload rate.
func BenchmarkDetect(b *testing.B) { benchmarkDetect(b, Options{}) }

// BenchmarkDetectLive is BenchmarkDetect with Options.Streaming: the resends are
// answered NONE, so each is reported at once.
func BenchmarkDetectLive(b *testing.B) { benchmarkDetect(b, Options{Streaming: true}) }

func benchmarkDetect(b *testing.B, opts Options) {
	d := New(opts)
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

// BenchmarkAdvanceIdle: Advance with nothing due, 1 µs of packet time apart,
// on a streaming Detector remembering 100,000 batches (a window of 10 minutes
// at 170 batches per second; more than DefaultMaxBatches, so the cap is
// raised to hold them) and some findings waiting for Settle.
func BenchmarkAdvanceIdle(b *testing.B) {
	d := New(Options{Streaming: true, Window: time.Hour, Settle: time.Hour, MaxBatches: 1 << 17})
	for i := range 100_000 {
		b := plain(uint32(i))
		d.Produce(ex(conn1, int32(i), float64(i), float64(i)+1, 7, int64(i), b))
		if i%100 == 0 {
			d.Produce(ex(conn1, int32(i)+1e6, float64(i)+0.5, float64(i)+1, 7, int64(i)+1, b))
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		d.Advance(ms(100_000 + float64(i)/1000))
	}
	b.StopTimer()
	if s := d.Stats(); s.Remembered != 100_000 || s.Resends != 1000 || s.Findings != 0 {
		b.Fatalf("batches were forgotten: %+v", d.Stats())
	}
}
