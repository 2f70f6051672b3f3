//go:build linux

package pipeline

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kdupcap/kdupcap/capture/live"
	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/internal/kwire"
	"github.com/kdupcap/kdupcap/internal/testenv"
)

// BenchmarkLivePipeline is the live path end to end: packets read from the
// AF_PACKET ring on the loopback and carried through reassembly, Kafka
// decoding and detection, while a load generator on the loopback sends
// ProduceRequests (v9, one 10-record batch of 100-byte values each) as fast
// as it can to a local server that answers each with a ProduceResponse
// (bounded to a minute whatever b.N). A kfake broker is far slower than the
// pipeline, so the generator speaks the wire itself. It reports the packets/s
// and produce requests/s the pipeline sustained, and the kernel's drops at
// that rate (default 64 MiB ring).
func BenchmarkLivePipeline(b *testing.B) {
	testenv.Root(b)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	src, err := live.Open(live.Options{Interface: "lo", Ports: []uint16{port}})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	p := newSingle(stages{
		dec: decode.Options{Ports: []uint16{port}, MaxConnections: maxLiveConnections},
		det: detect.Options{Streaming: true, OnFinding: func(detect.Finding) {}},
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go answerProduce(ln)
	genDone := make(chan struct{})
	go func() {
		defer close(genDone)
		var wg sync.WaitGroup
		for range benchConns {
			wg.Go(func() { sendProduce(ctx, ln.Addr().String()) })
		}
		wg.Wait()
	}()

	start := src.Stats()
	b.ResetTimer()
	began := time.Now()
	for i := 0; i < b.N; {
		pkt, err := src.Next()
		if errors.Is(err, live.ErrTimeout) {
			select {
			case <-genDone:
				b.Fatalf("the load generator stopped after %d packets: ask for fewer (-benchtime Nx)", i)
			default:
			}
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		p.asm.Add(pkt)
		i++
	}
	elapsed := time.Since(began)
	b.StopTimer()
	cancel()
	<-genDone
	end := src.Stats()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "packets/s")
	b.ReportMetric(float64(p.dec.Stats().ProduceRequests)/elapsed.Seconds(), "produce-requests/s")
	b.ReportMetric(float64(end.Drops-start.Drops), "drops")
	if st := p.dec.Stats(); b.N >= 1000 && (st.ProduceRequests == 0 || st.Malformed != 0) {
		b.Fatalf("the pipeline did not decode the load: %+v", st)
	}
}

// The load: benchConns producer connections with at most benchInFlight
// requests awaiting an answer on each, as a client's
// max.in.flight.requests.per.connection allows.
const (
	benchConns    = 8
	benchInFlight = 5
)

// sendProduce writes framed ProduceRequests with increasing correlation IDs,
// at most benchInFlight unanswered, until ctx is done.
func sendProduce(ctx context.Context, addr string) {
	c, err := net.Dial("tcp4", addr)
	if err != nil {
		return
	}
	defer c.Close()
	slots := make(chan struct{}, benchInFlight)
	go func() {
		r := bufio.NewReader(c)
		var head [4]byte
		for {
			if _, err := io.ReadFull(r, head[:]); err != nil {
				return
			}
			if _, err := r.Discard(int(binary.BigEndian.Uint32(head[:]))); err != nil {
				return
			}
			<-slots
		}
	}()
	batch := kmsg.RecordBatch{Magic: 2, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 10, LastOffsetDelta: 9}
	var recs []byte
	for i := range 10 {
		r := kmsg.Record{OffsetDelta: int32(i), Value: make([]byte, 100)}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	batch.Records = recs
	batch.Length = int32(len(batch.AppendTo(nil)) - 12)
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 30000
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic = "bench"
	topic.Partitions = append(topic.Partitions, kmsg.NewProduceRequestTopicPartition())
	req.Topics = append(req.Topics, topic)
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench"))
	var frame []byte
	var enc []byte
	for corr := int32(0); ctx.Err() == nil; corr++ {
		// Every batch differs (its timestamp), as a producer's do: the
		// same bytes again would be a re-send.
		batch.FirstTimestamp, batch.MaxTimestamp = int64(corr), int64(corr)
		batch.CRC = 0
		enc = batch.AppendTo(enc[:0])
		batch.CRC = int32(crc32.Checksum(enc[21:], castagnoli))
		enc = batch.AppendTo(enc[:0])
		req.Topics[0].Partitions[0].Records = enc
		frame = formatter.AppendRequest(frame[:0], req, corr)
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		if _, err := c.Write(frame); err != nil {
			return
		}
	}
}

// answerProduce answers every ProduceRequest v9 frame on each accepted
// connection with a ProduceResponse of the same correlation ID.
func answerProduce(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			resp := kmsg.NewPtrProduceResponse()
			resp.Version = 9
			t := kmsg.NewProduceResponseTopic()
			t.Topic = "bench"
			pr := kmsg.NewProduceResponseTopicPartition()
			t.Partitions = append(t.Partitions, pr)
			resp.Topics = append(resp.Topics, t)
			r := bufio.NewReaderSize(c, 64<<10)
			w := bufio.NewWriterSize(c, 64<<10)
			var head [8]byte
			var off int64
			var out []byte
			for {
				if _, err := io.ReadFull(r, head[:]); err != nil {
					return
				}
				n := int(binary.BigEndian.Uint32(head[:4]))
				if _, err := r.Discard(n - 4); err != nil {
					return
				}
				resp.Topics[0].Partitions[0].BaseOffset = off
				off += 10
				out = kwire.AppendResponse(out[:0], int32(binary.BigEndian.Uint32(head[4:8])), resp)
				if _, err := w.Write(out); err != nil {
					return
				}
				if r.Buffered() == 0 && w.Flush() != nil {
					return
				}
			}
		}()
	}
}
