package decode

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// tapListener hands kfake connections whose bytes decode also sees: what
// the client sends (Read by the broker) and what the broker answers.
type tapListener struct {
	net.Listener
	mu  *sync.Mutex
	dec *Decoder
}

func (l tapListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	client := netip.MustParseAddrPort(c.RemoteAddr().String())
	broker := netip.MustParseAddrPort(c.LocalAddr().String())
	l.mu.Lock()
	s := l.dec.NewStream(client, broker, time.Now())
	l.mu.Unlock()
	return &tapConn{Conn: c, mu: l.mu, s: s}, nil
}

type tapConn struct {
	net.Conn
	mu *sync.Mutex
	s  *Conn
}

func (c *tapConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && c.s != nil {
		c.mu.Lock()
		c.s.Data(true, b[:n], time.Now())
		c.mu.Unlock()
	}
	return n, err
}

func (c *tapConn) Write(b []byte) (int, error) {
	if c.s != nil {
		c.mu.Lock()
		c.s.Data(false, b, time.Now())
		c.mu.Unlock()
	}
	return c.Conn.Write(b)
}

// TestRealClientCodecs: kgo, a real client, produces through each codec to
// a kfake broker on 127.0.0.1, and decode, seeing the connection's bytes,
// reads back the records kgo sent.
func TestRealClientCodecs(t *testing.T) {
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
		attr  int16
	}{
		{"gzip", kgo.GzipCompression(), 1},
		{"snappy", kgo.SnappyCompression(), 2},
		{"lz4", kgo.Lz4Compression(), 3},
		{"zstd", kgo.ZstdCompression(), 4},
	}
	for _, cc := range codecs {
		t.Run(cc.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []*Exchange
			dec := New(sinkFn(func(x *Exchange) { got = append(got, x) }), Options{Records: 100, Sniff: true})
			cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "codecs"),
				kfake.ListenFn(func(network, address string) (net.Listener, error) {
					l, err := net.Listen(network, "127.0.0.1:0")
					if err != nil {
						return nil, err
					}
					return tapListener{Listener: l, mu: &mu, dec: dec}, nil
				}))
			if err != nil {
				t.Fatal(err)
			}
			defer cluster.Close()
			cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.DefaultProduceTopic("codecs"),
				kgo.ProducerBatchCompression(cc.codec), kgo.ProducerLinger(50*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			var recs []*kgo.Record
			for i := range 20 {
				recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "value %d of a compressible batch, value value value", i),
					Headers: []kgo.RecordHeader{{Key: "n", Value: fmt.Appendf(nil, "%d", i)}}})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			cl.Close()
			mu.Lock()
			defer mu.Unlock()
			n := 0
			for _, x := range got {
				for _, b := range x.Batches {
					if b.Attributes&7 != cc.attr {
						t.Errorf("batch attributes %#x, want codec %d", b.Attributes, cc.attr)
					}
					if len(b.Records) != int(b.NumRecords) {
						t.Errorf("batch of %d records, %d read (stats %+v)", b.NumRecords, len(b.Records), dec.Stats())
					}
					for _, r := range b.Records {
						want := fmt.Sprintf("k%d", n)
						if string(r.Key) != want || string(r.Value) != string(recs[n].Value) ||
							len(r.Headers) != 1 || string(r.Headers[0].Value) != fmt.Sprint(n) {
							t.Errorf("record %d: %+v", n, r)
						}
						n++
					}
				}
			}
			if n != len(recs) {
				t.Errorf("read %d records of %d", n, len(recs))
			}
			if s := dec.Stats(); s.RecordErrors != 0 || s.DecompressTruncated != 0 {
				t.Errorf("stats %+v", s)
			}
		})
	}
}

type sinkFn func(*Exchange)

func (f sinkFn) Produce(x *Exchange) { f(x) }
