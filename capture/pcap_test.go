package capture

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// pcapgoRead reads a pcap (not compressed) the way Source did before it read
// records itself (pcap.go): pcapgo's ZeroCopyReadPacketData through a
// buffered reader, the offset after the last whole packet kept for errors.
// It gives the packets (their data copied) and the error that ended them,
// formatted as Source formats it, "" at a clean end.
func pcapgoRead(file []byte) ([]Packet, string) {
	cnt := &countingReader{r: bytes.NewReader(file)}
	br := bufio.NewReaderSize(cnt, 1<<16)
	consumed := func() int64 { return cnt.n.Load() - int64(br.Buffered()) }
	r, err := pcapgo.NewReader(br)
	if err != nil {
		return nil, (&InputError{File: "f", Err: err}).Error()
	}
	var out []Packet
	good := consumed()
	for {
		data, ci, err := r.ZeroCopyReadPacketData()
		if err == io.EOF {
			return out, ""
		}
		if err != nil {
			return out, (&InputError{File: "f", Offset: good, Err: err}).Error()
		}
		good = consumed()
		out = append(out, Packet{Data: bytes.Clone(data), CI: ci, LinkType: r.LinkType()})
	}
}

// sourceRead reads file with a Source, as pcapgoRead does.
func sourceRead(file []byte) ([]Packet, string) { return sourceReadAhead(file, nil) }

// sourceReadAhead is sourceRead with the Source read ahead into chunks of
// pool (pcapahead.go), when pool is not nil.
func sourceReadAhead(file []byte, pool *bufPool) ([]Packet, string) {
	s, err := NewSource("f", bytes.NewReader(file))
	if err != nil {
		return nil, err.Error()
	}
	defer s.Close()
	if pool != nil {
		s.readAhead(pool, true)
	}
	var out []Packet
	for {
		p, err := s.Next()
		if err == io.EOF {
			return out, ""
		}
		if err != nil {
			return out, err.Error()
		}
		p.Data = bytes.Clone(p.Data)
		out = append(out, p)
	}
}

// diffPcap reports how Source and pcapgo read file differently; input
// too short to be told a pcap is not compared.
func diffPcap(file []byte) string { return diffPcapAhead(file, nil) }

// diffPcapAhead is diffPcap with the Source read ahead into chunks of pool
// when it is not nil.
func diffPcapAhead(file []byte, pool *bufPool) string {
	if len(file) < 4 {
		return ""
	}
	want, wantErr := pcapgoRead(file)
	got, gotErr := sourceReadAhead(file, pool)
	if gotErr != wantErr {
		return fmt.Sprintf("error %q, want %q", gotErr, wantErr)
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d packets, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if !bytes.Equal(g.Data, w.Data) || !g.CI.Timestamp.Equal(w.CI.Timestamp) || g.CI.Timestamp.Location() != w.CI.Timestamp.Location() ||
			g.CI.CaptureLength != w.CI.CaptureLength || g.CI.Length != w.CI.Length || g.CI.InterfaceIndex != w.CI.InterfaceIndex || g.LinkType != w.LinkType {
			return fmt.Sprintf("packet %d: got %v %v (%d bytes), want %v %v (%d bytes)", i, g.CI, g.LinkType, len(g.Data), w.CI, w.LinkType, len(w.Data))
		}
	}
	return ""
}

// pcapCorpus is pcaps of both byte orders and timestamp resolutions, with
// packets of every size class: empty, small, straddling the read buffer's
// end, longer than the read buffer, and up to pcapgo's eager bound.
func pcapCorpus(tb testing.TB) [][]byte {
	var out [][]byte
	paths, _ := filepath.Glob("../testdata/*.pcap")
	more, _ := filepath.Glob("testdata/*.pcap")
	for _, p := range append(paths, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	pkts := testPackets(tb)
	for _, order := range []binary.AppendByteOrder{binary.LittleEndian, binary.BigEndian} {
		for _, nano := range []bool{false, true} {
			out = append(out, pcapFile(order, nano, layers.LinkTypeRaw, pkts))
		}
	}
	// Sizes around the read buffer, and a frac field past a second (pcapgo
	// scales microseconds in 32 bits).
	var b []byte
	b = append(b, pcapHeader(0xffff)...)
	for i, n := range []int{0, 1, 1500, pcapBufSize - 2*pcapRecordHeader, pcapBufSize - pcapRecordHeader, pcapBufSize - pcapRecordHeader + 1, pcapBufSize + 7, 65549, pcapEagerMax, 3, pcapBufSize * 3} {
		b = recordHeader(b, uint32(1700000000+i), uint32(n), uint32(n+i))
		binary.LittleEndian.PutUint32(b[len(b)-12:], uint32(i*999999))
		if i == 9 {
			binary.LittleEndian.PutUint32(b[len(b)-12:], 0xfffffff0)
		}
		for j := range n {
			b = append(b, byte(j*31+i))
		}
	}
	out = append(out, b)
	return out
}

// TestPcapRecordsAsPcapgo: Source reads a pcap's records as pcapgo does:
// the same packets, timestamps and lengths, and at every cut and every bad
// record length the same error at the same offset (or the same clean end).
func TestPcapRecordsAsPcapgo(t *testing.T) {
	pool := &bufPool{}
	for ci, file := range pcapCorpus(t) {
		if d := diffPcap(file); d != "" {
			t.Fatalf("file %d whole: %s", ci, d)
		}
		if d := diffPcapAhead(file, pool); d != "" {
			t.Fatalf("file %d whole, read ahead: %s", ci, d)
		}
		// Cuts at every byte around each record boundary and a few within.
		cuts := map[int]bool{}
		off := pcapFileHeader
		for off+pcapRecordHeader <= len(file) && len(cuts) < 4000 {
			n := int(binary.LittleEndian.Uint32(file[off+8:]))
			if binary.LittleEndian.Uint32(file) == magicPcapMicroBE || binary.LittleEndian.Uint32(file) == magicPcapNanoBE {
				n = int(binary.BigEndian.Uint32(file[off+8:]))
			}
			for d := -1; d <= pcapRecordHeader+1; d++ {
				cuts[off+d] = true
			}
			cuts[off+pcapRecordHeader+n/2] = true
			off += pcapRecordHeader + n
		}
		for c := range 30 {
			cuts[c] = true
		}
		for c := range cuts {
			if c < 0 || c > len(file) {
				continue
			}
			if d := diffPcap(file[:c]); d != "" {
				t.Errorf("file %d cut at %d: %s", ci, c, d)
			}
			if c%7 == 0 {
				if d := diffPcapAhead(file[:c], pool); d != "" {
					t.Errorf("file %d cut at %d, read ahead: %s", ci, c, d)
				}
			}
		}
		// Bad lengths in the second record: over the snap length, over the
		// original length, the original length short.
		if len(file) > pcapFileHeader+pcapRecordHeader {
			order := binary.ByteOrder(binary.LittleEndian)
			if m := binary.LittleEndian.Uint32(file); m == magicPcapMicroBE || m == magicPcapNanoBE {
				order = binary.BigEndian
			}
			second := pcapFileHeader + pcapRecordHeader + int(order.Uint32(file[pcapFileHeader+8:]))
			if second+pcapRecordHeader > len(file) {
				continue
			}
			for _, v := range []struct{ at, val uint32 }{{8, 1 << 30}, {8, pcapEagerMax + 1}, {12, 0}, {8, 0}, {12, 1 << 31}} {
				bad := bytes.Clone(file)
				order.PutUint32(bad[second+int(v.at):], v.val)
				if d := diffPcap(bad); d != "" {
					t.Errorf("file %d, second record's field %d = %d: %s", ci, v.at, v.val, d)
				}
			}
		}
	}
}

// FuzzPcapRecords: on any input, Source reads what pcapgo reads (see
// TestPcapRecordsAsPcapgo), but for records over MaxPacketBytes, which
// Source skips (oversized.go): inputs that hold one are left out.
func FuzzPcapRecords(f *testing.F) {
	for _, b := range pcapCorpus(f) {
		if len(b) < 1<<16 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		if len(file) < 4 || !isPcapMagic(binary.LittleEndian.Uint32(file)) {
			return
		}
		order := binary.ByteOrder(binary.LittleEndian)
		if m := binary.LittleEndian.Uint32(file); m == magicPcapMicroBE || m == magicPcapNanoBE {
			order = binary.BigEndian
		}
		for off := pcapFileHeader; off+pcapRecordHeader <= len(file); {
			n := int64(order.Uint32(file[off+8:]))
			if n > MaxPacketBytes {
				return
			}
			off += pcapRecordHeader + int(n)
		}
		if d := diffPcap(file); d != "" {
			t.Fatal(d)
		}
	})
}

// TestPcapAheadChunks: a pcap of many chunks' worth, its records of every
// size cut at chunk ends anywhere, reads the same ahead as not, whole and
// cut short at random places.
func TestPcapAheadChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	b := pcapHeader(0x40000)
	for i := 0; len(b) < 6*aheadChunkData; i++ {
		n := rng.IntN(70000)
		if i%50 == 0 {
			n = pcapBufSize + rng.IntN(pcapBufSize) // read through the buffer (readLarge)
		}
		b = recordHeader(b, uint32(1700000000+i), uint32(n), uint32(n))
		for j := range n {
			b = append(b, byte(i+j))
		}
	}
	pool := &bufPool{}
	// Short reads (a pipe) hand chunks on as they come.
	want, _ := sourceRead(b)
	s, err := NewSource("f", iotest.HalfReader(bytes.NewReader(b)))
	if err != nil {
		t.Fatal(err)
	}
	s.readAhead(pool, true)
	for i := 0; ; i++ {
		p, err := s.Next()
		if err == io.EOF && i == len(want) {
			break
		}
		if err != nil || i >= len(want) || !bytes.Equal(p.Data, want[i].Data) {
			t.Fatalf("short reads: packet %d: %v", i, err)
		}
	}
	s.Close()
	for _, cut := range []int{len(b), len(b) - 1, len(b) / 2, aheadChunkData + 3, 3*aheadChunkData - pcapRecordHeader} {
		want, wantErr := sourceRead(b[:cut])
		got, gotErr := sourceReadAhead(b[:cut], pool)
		if gotErr != wantErr || len(got) != len(want) {
			t.Fatalf("cut at %d: %d packets, error %q; not read ahead: %d, %q", cut, len(got), gotErr, len(want), wantErr)
		}
		for i := range got {
			if !bytes.Equal(got[i].Data, want[i].Data) || !got[i].CI.Timestamp.Equal(want[i].CI.Timestamp) || got[i].CI.Length != want[i].CI.Length {
				t.Fatalf("cut at %d: packet %d differs", cut, i)
			}
		}
	}
}

// TestHold: a packet read ahead keeps its bytes while held, however far
// the Source reads on (its chunk is filled again only once released); a
// packet not read ahead cannot be held.
func TestHold(t *testing.T) {
	b := pcapHeader(0xffff)
	for i := 0; len(b) < 2*(aheadChunks+2)*aheadChunkData; i++ {
		n := 20000 + i%9000
		b = recordHeader(b, uint32(1700000000+i), uint32(n), uint32(n))
		for j := range n {
			b = append(b, byte(i*7+j))
		}
	}
	sync, err := NewSource("f", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := sync.Next(); err != nil {
		t.Fatal(err)
	} else if _, ok := p.Hold(); ok {
		t.Error("a packet not read ahead was held")
	}
	sync.Close()

	s, err := NewSource("f", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.readAhead(nil, true)
	type kept struct {
		h    Hold
		data []byte
		copy []byte
	}
	// A packet about every two chunks is held (the packets are of 20000
	// bytes or more), up to AheadHolds chunks held at once: the Source must
	// read to the end all the same, not wait for a chunk to be released.
	every := 2 * aheadChunkData / 20000
	var holds []kept
	read := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			p, err := s.Next()
			if err != nil {
				read <- err
				return
			}
			if i%every == every/2 && len(holds) < AheadHolds {
				if n := len(holds); n > 0 && holds[n-1].h.Holds(p) {
					read <- fmt.Errorf("packet %d is in the chunk held last", i)
					return
				}
				h, ok := p.Hold()
				if !ok || !h.Holds(p) {
					read <- fmt.Errorf("packet %d read ahead: no hold", i)
					return
				}
				holds = append(holds, kept{h, p.Data, bytes.Clone(p.Data)})
			}
		}
	}()
	select {
	case err := <-read:
		if err != io.EOF {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the Source waits for a chunk with %d held", AheadHolds)
	}
	if len(holds) < AheadHolds {
		t.Fatalf("%d packets held", len(holds))
	}
	for i, k := range holds {
		if !bytes.Equal(k.data, k.copy) {
			t.Errorf("held packet %d overwritten", i)
		}
		k.h.Release()
	}
}

// countedReader counts the bytes read from r, from any goroutine.
type countedReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countedReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestPcapAheadLead: a pcap not compressed is read aheadLead chunks ahead
// of the chunk parsed, not as far as the chunks go, wherever the parser
// is; every packet is read all the same.
func TestPcapAheadLead(t *testing.T) {
	b := pcapHeader(0xffff)
	for i := 0; len(b) < (aheadChunks+4)*aheadChunkData; i++ {
		n := 1000 + i%60000
		b = recordHeader(b, uint32(1700000000+i), uint32(n), uint32(n))
		for j := range n {
			b = append(b, byte(i*3+j))
		}
	}
	want, _ := sourceRead(b)
	cr := &countedReader{r: bytes.NewReader(b)}
	s, err := NewSource("f", cr)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.readAhead(nil, true)
	lead := int64(aheadLead * aheadChunkData)
	checks := 0
	for i := 0; ; i++ {
		p, err := s.Next()
		if err == io.EOF && i == len(want) {
			break
		}
		if err != nil || i >= len(want) || !bytes.Equal(p.Data, want[i].Data) {
			t.Fatalf("packet %d: %v", i, err)
		}
		if i%40 != 0 {
			continue
		}
		// The goroutine reads up to lead bytes past the chunks taken
		// (the file's end sooner), and stops there.
		taken := s.CaptureBytes()
		to := min(taken+lead, int64(len(b)))
		for deadline := time.Now().Add(10 * time.Second); cr.n.Load() < to; {
			if time.Now().After(deadline) {
				t.Fatalf("packet %d: %d bytes read with %d taken: not read ahead to %d", i, cr.n.Load(), taken, to)
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond)
		if got := cr.n.Load(); got > to {
			t.Fatalf("packet %d: %d bytes read with %d taken: %d chunks ahead, want %d", i, got, taken, (got-taken+aheadChunkData-1)/aheadChunkData, aheadLead)
		}
		checks++
	}
	if checks < 10 {
		t.Fatalf("%d checks", checks)
	}
}

// TestPcapAheadWhole: a compressed pcap opened as a regular file is read
// ahead a whole chunk at a time, however little each of the
// decompressor's reads returns (zstd a block, gzip its window): one
// hand-off between the goroutines per chunk, not per block. The same
// bytes from a reader that is not a file (a pipe) are handed on as they
// come. Either way every packet reads as not read ahead.
func TestPcapAheadWhole(t *testing.T) {
	b := pcapHeader(0xffff)
	for i := 0; len(b) < 5*aheadChunkData; i++ {
		n := 100 + i%9000
		b = recordHeader(b, uint32(1700000000+i), uint32(n), uint32(n))
		for j := range n {
			b = append(b, byte(i*7+j*j))
		}
	}
	want, _ := sourceRead(b)
	dir := t.TempDir()
	for _, tc := range []struct {
		codec string
		data  []byte
	}{{"zstd", zst(t, b)}, {"gzip", gz(b)}} {
		path := filepath.Join(dir, "c."+tc.codec)
		if err := os.WriteFile(path, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, file := range []bool{true, false} {
			var s *Source
			var err error
			if file {
				s, err = Open(path)
			} else {
				s, err = NewSource(path, bytes.NewReader(tc.data))
			}
			if err != nil {
				t.Fatal(err)
			}
			if !s.readAhead(nil, false) {
				t.Fatalf("%s: not read ahead", tc.codec)
			}
			// CaptureBytes moves on a chunk at a time: the bytes of the
			// chunks handed to the parser.
			var steps []int64
			last := s.CaptureBytes()
			for i := 0; ; i++ {
				p, err := s.Next()
				if err == io.EOF && i == len(want) {
					break
				}
				if err != nil || i >= len(want) || !bytes.Equal(p.Data, want[i].Data) {
					t.Fatalf("%s, file %v: packet %d: %v", tc.codec, file, i, err)
				}
				if n := s.CaptureBytes(); n != last {
					steps = append(steps, n-last)
					last = n
				}
			}
			s.Close()
			short := 0
			for _, n := range steps[:len(steps)-1] {
				if n < aheadChunkData {
					short++
				}
			}
			switch {
			case file && short > 0:
				t.Errorf("%s from a file: %d of %d chunks handed on short: %v", tc.codec, short, len(steps), steps)
			case !file && short == 0:
				t.Errorf("%s from a reader: every chunk handed on whole (%d), want them as the decompressor returns them", tc.codec, len(steps))
			}
		}
	}
}
