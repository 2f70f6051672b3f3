package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/klauspost/compress/gzip"
)

// allocBound is what reading a capture with a packet far over
// MaxPacketBytes may allocate in all.
const allocBound = 64 << 20

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// pcapHeader is a little-endian microsecond pcap file header.
func pcapHeader(snap uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, magicPcapMicroLE)
	b = binary.LittleEndian.AppendUint16(b, 2)
	b = binary.LittleEndian.AppendUint16(b, 4)
	b = binary.LittleEndian.AppendUint64(b, 0)
	b = binary.LittleEndian.AppendUint32(b, snap)
	return binary.LittleEndian.AppendUint32(b, uint32(layers.LinkTypeRaw))
}

func recordHeader(b []byte, sec uint32, capLen, origLen uint32) []byte {
	b = binary.LittleEndian.AppendUint32(b, sec)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint32(b, capLen)
	return binary.LittleEndian.AppendUint32(b, origLen)
}

// A pcap whose snap length is 2^32-1 and whose one record claims 2 GiB,
// followed by little data: an InputError naming the position, with little
// allocated.
func TestOversizedClaimed(t *testing.T) {
	b := pcapHeader(0xffffffff)
	b = recordHeader(b, 1, 2<<30, 2<<30)
	b = append(b, make([]byte, 1000)...)
	var err error
	n := allocated(func() {
		var s *Source
		s, err = NewSource("big.pcap", bytes.NewReader(b))
		if err != nil {
			return
		}
		_, err = s.Next()
	})
	var ie *InputError
	if !errors.As(err, &ie) || !errors.Is(err, io.ErrUnexpectedEOF) || ie.Offset != pcapFileHeader {
		t.Fatalf("err %v, want an InputError, truncated at byte %d", err, pcapFileHeader)
	}
	t.Logf("%v; %d bytes allocated", err, n)
	if n > allocBound {
		t.Errorf("allocated %d bytes", n)
	}
}

// A gzip-compressed pcap with one real 256 MiB packet between two small
// ones, written through a pipe in chunks (never held whole): the big one is
// skipped unread and returned with no Data, the others as they are, with
// little allocated.
func TestOversizedSkipped(t *testing.T) {
	small := testPackets(t)
	const big = 256 << 20
	pr, pw := io.Pipe()
	go func() {
		zw := gzip.NewWriter(pw)
		b := pcapHeader(0xffffffff)
		b = recordHeader(b, uint32(small[0].CI.Timestamp.Unix()), uint32(len(small[0].Data)), uint32(len(small[0].Data)))
		b = append(b, small[0].Data...)
		b = recordHeader(b, 7, big, big)
		zw.Write(b)
		chunk := make([]byte, 1<<20)
		for i := range chunk {
			chunk[i] = byte(i)
		}
		for range big / len(chunk) {
			zw.Write(chunk)
		}
		b = recordHeader(nil, uint32(small[1].CI.Timestamp.Unix()), uint32(len(small[1].Data)), uint32(len(small[1].Data)))
		zw.Write(append(b, small[1].Data...))
		pw.CloseWithError(zw.Close())
	}()
	var got []Packet
	var err error
	n := allocated(func() {
		var s *Source
		s, err = NewSource("big.pcap.gz", pr)
		if err != nil {
			return
		}
		defer s.Close()
		got, err = readAll(s)
		skipped := 0
		for _, p := range got {
			if len(p.Data) == 0 && p.CI.Length > MaxPacketBytes {
				skipped++
			}
		}
		if skipped != 1 {
			t.Errorf("%d packets handed out as skipped (no data, their length kept), want 1", skipped)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes allocated", n)
	if n > allocBound {
		t.Errorf("allocated %d bytes", n)
	}
	if len(got) != 3 {
		t.Fatalf("%d packets, want 3", len(got))
	}
	if !bytes.Equal(got[0].Data, small[0].Data) || !bytes.Equal(got[2].Data, small[1].Data) {
		t.Error("the small packets differ")
	}
	if o := got[1]; len(o.Data) != 0 || o.CI.Length != big || o.CI.Timestamp.Unix() != 7 {
		t.Errorf("the big packet: %d bytes, CI %+v", len(o.Data), o.CI)
	}
	// An Assembler counts it and goes on.
	r := &recorder{}
	a := NewAssembler(r.newStream, AssemblerOptions{})
	feed(t, a, got)
	a.Close()
	if st := a.Stats(); st.Oversized != 1 || st.OversizedBytes != big || st.Undecodable != 0 || st.TCPPackets != 2 || st.SnapCut != 0 {
		t.Errorf("stats %+v", st)
	}
}

// The same in a pcapng: an Enhanced Packet Block over the bound (its packet
// and ngBlockSlack) is skipped by its block length; a packet of 262144
// bytes, a Linux loopback's, is read whole.
func TestOversizedPcapng(t *testing.T) {
	small := testPackets(t)
	var buf bytes.Buffer
	w, err := pcapgo.NewNgWriterInterface(&buf, pcapgo.NgInterface{LinkType: layers.LinkTypeRaw, TimestampResolution: 9}, pcapgo.DefaultNgWriterOptions)
	if err != nil {
		t.Fatal(err)
	}
	loop := make([]byte, 262144)
	for i, p := range [][]byte{small[0].Data, make([]byte, MaxPacketBytes+ngBlockSlack), loop, small[1].Data} {
		ci := small[0].CI
		ci.Timestamp = ci.Timestamp.Add(time.Duration(i) * time.Millisecond)
		ci.CaptureLength, ci.Length = len(p), len(p)
		if err := w.WritePacket(ci, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	s, err := NewSource("big.pcapng", &buf)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readAll(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || len(got[1].Data) != 0 || got[1].CI.Length <= MaxPacketBytes || len(got[2].Data) != len(loop) || !bytes.Equal(got[3].Data, small[1].Data) {
		for _, p := range got {
			t.Logf("%d bytes, CI %+v", len(p.Data), p.CI)
		}
		t.Fatalf("got %d packets", len(got))
	}
	if !got[1].CI.Timestamp.Equal(got[0].CI.Timestamp) {
		t.Errorf("skipped packet at %v, want the previous one's time %v", got[1].CI.Timestamp, got[0].CI.Timestamp)
	}
}
