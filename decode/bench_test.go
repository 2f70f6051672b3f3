package decode

import (
	"testing"
	"time"
)

// BenchmarkConnProduce decodes a connection of produce v9 requests, each
// with one 1 KiB record batch, and their responses, one frame per Data
// call.
func BenchmarkConnProduce(b *testing.B) {
	const n = 256
	var script []msg
	payload := string(make([]byte, 1024))
	for i := range int32(n) {
		req := produceRequest(9, -1, part{"bench", i % 8, recordBatch(1, 0, i, 10, payload)})
		script = append(script,
			msg{fromClient: true, frame: requestFrame(req, i, "bench")},
			msg{fromClient: false, frame: responseFrame(produceResponse(9, answer{"bench", i % 8, 0, int64(i)}), i)})
	}
	bytes := 0
	for _, m := range script {
		bytes += len(m.frame)
	}
	d := New(nil, Options{})
	c := d.NewStream(client, broker, t0)
	b.SetBytes(int64(bytes))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		for _, m := range script {
			c.Data(m.fromClient, m.frame, t0)
		}
	}
	b.ReportMetric(float64(len(script))*float64(b.N)/time.Since(start).Seconds(), "frames/s")
	if st := d.Stats(); st.ProduceResponses != int64(n*b.N) || st.Malformed != 0 {
		b.Fatalf("stats %+v", st)
	}
}
