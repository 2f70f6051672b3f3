package capture

import (
	"bytes"
	"encoding/binary"
	"io"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// nopStream takes every byte and does nothing with it.
type nopStream struct{ keep bool }

func (s *nopStream) Data(bool, []byte, time.Time) bool { return s.keep }
func (s *nopStream) Gap(bool, int, time.Time)          {}
func (s *nopStream) Close(time.Time)                   {}

// BenchmarkAssemblerInOrder feeds in-order 1400 byte segments of a few
// connections, client to server, rewriting the sequence number of a
// template packet in place for every op. One op is one packet.
func BenchmarkAssemblerInOrder(b *testing.B) {
	for _, mode := range []string{"delivered", "ignored", "refused"} {
		b.Run(mode, func(b *testing.B) {
			benchInOrder(b, func(a, _ netip.AddrPort, _ time.Time) Stream {
				switch mode {
				case "ignored":
					return nil
				case "refused":
					return &nopStream{keep: false}
				}
				return &nopStream{keep: true}
			}, AssemblerOptions{}, mode == "delivered")
		})
	}
}

// BenchmarkAssemblerEvidence is BenchmarkAssemblerInOrder's delivered case
// with an Evidence recording every packet: "conn-bound" drops the oldest
// packets of each connection past PerConnBytes (the default 8 MiB; 4
// connections stay below the default total), "total-bound" those of all
// connections past a TotalBytes of 4 MiB.
func BenchmarkAssemblerEvidence(b *testing.B) {
	for _, tt := range []struct {
		name string
		opts EvidenceOptions
	}{
		{"conn-bound", EvidenceOptions{}},
		{"total-bound", EvidenceOptions{TotalBytes: 4 << 20}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			ev := NewEvidence(tt.opts)
			benchInOrder(b, func(netip.AddrPort, netip.AddrPort, time.Time) Stream {
				return &nopStream{keep: true}
			}, AssemblerOptions{Evidence: ev}, true)
			if st := ev.Stats(); st.Packets != int64(b.N) && b.N > 1 {
				b.Fatalf("recorded %d of %d packets", st.Packets, b.N)
			}
		})
	}
}

// benchInOrder feeds b.N in-order 1400 byte segments, round robin over 4
// connections, to an Assembler made with newStream and opts.
func benchInOrder(b *testing.B, newStream NewStreamFunc, opts AssemblerOptions, delivered bool) {
	const conns, size = 4, 1400
	payload := strings.Repeat("k", size)
	var tmpl [conns][]byte
	for c := range tmpl {
		client := netip.AddrPortFrom(client4.Addr(), uint16(40000+c))
		tmpl[c] = ipTCP(b, false, client, server4, seg{fromA: true, seq: 1, flags: "PA", data: payload})
	}
	a := NewAssembler(newStream, opts)
	var seq [conns]uint32
	ts := t0
	p := Packet{LinkType: layers.LinkTypeRaw}
	b.SetBytes(int64(len(tmpl[0])))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := i % conns
		binary.BigEndian.PutUint32(tmpl[c][24:], seq[c])
		seq[c] += size
		ts = ts.Add(10 * time.Microsecond)
		p.Data = tmpl[c]
		p.CI = ci(ts, len(p.Data))
		a.Add(p)
	}
	b.StopTimer()
	a.Close()
	if st := a.Stats(); delivered && st.DeliveredBytes != int64(b.N)*size {
		b.Fatalf("delivered %d of %d bytes", st.DeliveredBytes, b.N*size)
	}
}

// BenchmarkSourcePcap reads a 10000 packet pcap from memory. One op is one
// whole file.
func BenchmarkSourcePcap(b *testing.B) {
	const n = 10000
	one := ipTCP(b, false, client4, server4, seg{fromA: true, seq: 1, flags: "PA", data: strings.Repeat("k", 1400)})
	pkts := make([]Packet, n)
	for i := range pkts {
		pkts[i] = Packet{Data: one, CI: ci(t0.Add(time.Duration(i)*time.Microsecond), len(one))}
	}
	for _, tt := range []struct {
		name string
		file []byte
	}{
		{"plain", pcapFile(binary.LittleEndian, true, layers.LinkTypeRaw, pkts)},
		{"gzip", gz(pcapFile(binary.LittleEndian, true, layers.LinkTypeRaw, pkts))},
		{"zstd", zst(b, pcapFile(binary.LittleEndian, true, layers.LinkTypeRaw, pkts))},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.SetBytes(int64(len(pcapFile(binary.LittleEndian, true, layers.LinkTypeRaw, pkts))))
			b.ReportAllocs()
			r := bytes.NewReader(tt.file)
			for i := 0; i < b.N; i++ {
				r.Reset(tt.file)
				s, err := NewSource("bench", r)
				if err != nil {
					b.Fatal(err)
				}
				got := 0
				for {
					_, err := s.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					got++
				}
				s.Close()
				if got != n {
					b.Fatalf("read %d packets", got)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/packet")
		})
	}
}

// TestAddAllocations pins the zero allocation contract of Add in the steady
// state: in-order segments of delivered, ignored and refused connections.
func TestAddAllocations(t *testing.T) {
	for _, mode := range []string{"delivered", "ignored", "refused"} {
		tmpl := ipTCP(t, false, client4, server4, seg{fromA: true, seq: 1, flags: "PA", data: "payload"})
		a := NewAssembler(func(netip.AddrPort, netip.AddrPort, time.Time) Stream {
			switch mode {
			case "ignored":
				return nil
			case "refused":
				return &nopStream{}
			}
			return &nopStream{keep: true}
		}, AssemblerOptions{})
		seq, ts := uint32(1), t0
		add := func() {
			binary.BigEndian.PutUint32(tmpl[24:], seq)
			seq += 7
			ts = ts.Add(time.Microsecond)
			a.Add(Packet{Data: tmpl, CI: ci(ts, len(tmpl)), LinkType: layers.LinkTypeRaw})
		}
		add()
		if n := testing.AllocsPerRun(1000, add); n != 0 {
			t.Errorf("%s: %v allocations per Add", mode, n)
		}
	}
}

// BenchmarkAssemblerOutOfOrder feeds one connection's 1400 byte segments in
// swapped pairs: every other segment waits in a page for the one before it.
func BenchmarkAssemblerOutOfOrder(b *testing.B) {
	const size = 1400
	tmpl := ipTCP(b, false, client4, server4, seg{fromA: true, seq: 1, flags: "PA", data: strings.Repeat("k", size)})
	a := NewAssembler(func(netip.AddrPort, netip.AddrPort, time.Time) Stream { return &nopStream{keep: true} }, AssemblerOptions{})
	ts := t0
	b.SetBytes(int64(len(tmpl)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// 1, 0, 3, 2, 5, 4, ...
		k := uint32(i ^ 1)
		binary.BigEndian.PutUint32(tmpl[24:], 1+k*size)
		ts = ts.Add(10 * time.Microsecond)
		a.Add(Packet{Data: tmpl, CI: ci(ts, len(tmpl)), LinkType: layers.LinkTypeRaw})
	}
	b.StopTimer()
	a.Close()
}
