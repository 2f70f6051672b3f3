package decode

import (
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// segment is the TCP payload of one packet of a seed capture.
type segment struct {
	src, dst netip.AddrPort
	payload  []byte
	ts       time.Time
}

// readSeed returns the TCP payloads of a capture in file order. The seed
// captures hold no retransmissions or reordering, so no reassembly is
// needed here.
func readSeed(tb testing.TB, name string) []segment {
	tb.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	var segs []segment
	for {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		p := gopacket.NewPacket(data, r.LinkType(), gopacket.Default)
		ip, _ := p.NetworkLayer().(*layers.IPv4)
		tcp, _ := p.TransportLayer().(*layers.TCP)
		if ip == nil || tcp == nil || len(tcp.Payload) == 0 {
			continue
		}
		src, _ := netip.AddrFromSlice(ip.SrcIP)
		dst, _ := netip.AddrFromSlice(ip.DstIP)
		segs = append(segs, segment{
			src:     netip.AddrPortFrom(src, uint16(tcp.SrcPort)),
			dst:     netip.AddrPortFrom(dst, uint16(tcp.DstPort)),
			payload: tcp.Payload,
			ts:      ci.Timestamp,
		})
	}
	if len(segs) == 0 {
		tb.Fatalf("%s: no TCP payload", name)
	}
	return segs
}

// decodeSeed runs the segments of one seed through a Decoder.
func decodeSeed(segs []segment, opts Options) ([]*Exchange, *Decoder) {
	var s sink
	d := New(&s, opts)
	c := d.NewStream(segs[0].src, segs[0].dst, segs[0].ts)
	if c == nil {
		return nil, d
	}
	for _, sg := range segs {
		c.Data(sg.src == segs[0].src, sg.payload, sg.ts)
	}
	c.Close(segs[len(segs)-1].ts)
	return s.xs, d
}

func TestSeeds(t *testing.T) {
	type attempt struct {
		corr      int32
		responded bool
		errorCode int16
		offset    int64
	}
	tests := []struct {
		file       string
		producerID int64
		epoch      int16
		seq        int32
		attempts   []attempt
	}{
		{"seed-nonidempotent-retry.pcap", -1, -1, -1, []attempt{{27, true, 7, 112}, {28, false, 0, 0}}},
		{"seed-idempotent-retry.pcap", 0, 0, 1, []attempt{{6, true, 7, 204}, {7, true, 0, 204}}},
	}
	for _, tt := range tests {
		for _, opts := range []Options{{Sniff: true}, {Ports: []uint16{19092, 29092}}} {
			name := tt.file + "/port"
			if opts.Sniff {
				name = tt.file + "/sniff"
			}
			t.Run(name, func(t *testing.T) {
				xs, d := decodeSeed(readSeed(t, tt.file), opts)
				if len(xs) != len(tt.attempts) {
					t.Fatalf("got %d exchanges, want %d; errors %q", len(xs), len(tt.attempts), d.Errors())
				}
				for i, x := range xs {
					w := tt.attempts[i]
					if x.CorrelationID != w.corr || x.Responded != w.responded || x.Version != 9 || x.Acks != -1 {
						t.Errorf("attempt %d: corr %d responded %v v%d acks %d", i, x.CorrelationID, x.Responded, x.Version, x.Acks)
					}
					if !w.responded && x.NoResponse != NoResponseClosed {
						t.Errorf("attempt %d: no response %q", i, x.NoResponse)
					}
					if x.ClientID == nil || *x.ClientID != "rdkafka" {
						t.Errorf("attempt %d: client.id %v", i, x.ClientID)
					}
					if len(x.Batches) != 1 {
						t.Fatalf("attempt %d: %d batches", i, len(x.Batches))
					}
					b := x.Batches[0]
					if b.Topic != "test" || b.Partition != 0 || b.Magic != 2 || b.ProducerID != tt.producerID || b.ProducerEpoch != tt.epoch || b.FirstSequence != tt.seq {
						t.Errorf("attempt %d: batch %+v", i, b)
					}
					if b.Hash != xs[0].Batches[0].Hash || b.CRC != xs[0].Batches[0].CRC {
						t.Errorf("attempt %d: hash %x crc %x differ from the first attempt's", i, b.Hash, b.CRC)
					}
					if w.responded && (b.Response == nil || b.Response.ErrorCode != w.errorCode || b.Response.BaseOffset != w.offset) {
						t.Errorf("attempt %d: response %+v", i, b.Response)
					}
					if !w.responded && b.Response != nil {
						t.Errorf("attempt %d: unexpected response", i)
					}
				}
				if xs[0].Conn.Client.Port() == 19092 || xs[0].Conn.Broker.Port() != 19092 {
					t.Errorf("conn %+v", xs[0].Conn)
				}
				if st := d.Stats(); st.Malformed != 0 || st.Resyncs != 0 || st.Unmatched != 0 {
					t.Errorf("stats %+v", st)
				}
			})
		}
	}
}

// TestSeedSplits cuts each seed's streams at every byte: the exchanges stay
// the same and no byte is dropped.
func TestSeedSplits(t *testing.T) {
	for _, name := range []string{"seed-nonidempotent-retry.pcap", "seed-idempotent-retry.pcap"} {
		c, b := seedStreams(t, name)
		opts := Options{} // decodeStreams puts the broker on 9092
		want, wantStats := decodeStreams(opts, c, b, whole)
		if len(want) != 2 || wantStats.DroppedBytes != 0 {
			t.Fatalf("%s: %d exchanges, stats %+v", name, len(want), wantStats)
		}
		for k := range max(len(c), len(b)) + 1 {
			got, st := decodeStreams(opts, c, b, cutAt(k))
			if !reflect.DeepEqual(got, want) || st != wantStats {
				t.Fatalf("%s cut at %d: exchanges or stats differ: %+v", name, k, st)
			}
		}
	}
}
