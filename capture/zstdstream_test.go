package capture

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/gopacket/gopacket/layers"
	"github.com/klauspost/compress/zstd"
)

// zstdFrame compresses b into one frame: with its size in the header
// (EncodeAll) or without (a stream), with a checksum or not.
func zstdFrame(tb testing.TB, b []byte, size, crc bool) []byte {
	tb.Helper()
	if size {
		w, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(crc))
		if err != nil {
			tb.Fatal(err)
		}
		defer w.Close()
		return w.EncodeAll(b, nil)
	}
	var out bytes.Buffer
	w, err := zstd.NewWriter(&out, zstd.WithEncoderCRC(crc), zstd.WithEncoderConcurrency(1))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := w.Write(b); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return out.Bytes()
}

// skippableFrame is a zstd skippable frame holding b.
func skippableFrame(b []byte) []byte {
	out, _ := (&zstd.Header{Skippable: true, SkippableID: 3, SkippableSize: uint32(len(b))}).AppendTo(nil)
	return append(out, b...)
}

// zstdContents is data of each kind of zstd block: compressed, raw (bytes
// that do not compress), RLE (one byte repeated), several blocks long.
func zstdContents() map[string][]byte {
	rnd := rand.New(rand.NewPCG(1, 2))
	noise := make([]byte, 300<<10)
	for i := range noise {
		noise[i] = byte(rnd.Uint32())
	}
	text := bytes.Repeat([]byte("produce v9 topic-a partition 3 baseOffset "), 8000)
	return map[string][]byte{
		"empty": nil,
		"text":  text,
		"noise": noise,
		"zeros": make([]byte, 400<<10),
		"mixed": append(append(append([]byte{}, text[:70000]...), noise[:200000]...), make([]byte, 150000)...),
	}
}

// zstdStreams are streams of one frame and of several, of every kind the
// walk follows, each with the bytes it decompresses to.
func zstdStreams(tb testing.TB) map[string][2][]byte {
	c := zstdContents()
	out := map[string][2][]byte{}
	for name, b := range c {
		for _, v := range []struct {
			suffix    string
			size, crc bool
		}{{"/size+crc", true, true}, {"/stream+crc", false, true}, {"/size", true, false}, {"/stream", false, false}} {
			out[name+v.suffix] = [2][]byte{zstdFrame(tb, b, v.size, v.crc), b}
		}
	}
	var multi, want []byte
	for i, name := range []string{"text", "noise", "empty", "zeros", "mixed"} {
		multi = append(multi, zstdFrame(tb, c[name], i%2 == 0, i != 2)...)
		if i == 1 {
			multi = append(multi, skippableFrame([]byte("kdupcap"))...)
		}
		want = append(want, c[name]...)
	}
	out["frames"] = [2][]byte{multi, want}
	out["skippable first"] = [2][]byte{append(skippableFrame(nil), zstdFrame(tb, c["text"], true, true)...), c["text"]}
	out["nothing"] = [2][]byte{nil, nil}
	return out
}

// refZstd decodes b with the decoder alone, checksums checked by it.
func refZstd(b []byte) ([]byte, error) {
	d, err := zstd.NewReader(bytes.NewReader(b), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdMaxWindow))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return io.ReadAll(d)
}

// readZstdStream decodes b with a zstdStream, in reads of step bytes; with
// deferred checks made as a read-ahead's reader makes them, in chunks of
// step bytes (readChunk, frameCheck). It reports whether the walk followed
// every frame.
func readZstdStream(tb testing.TB, b []byte, step int, deferred bool) ([]byte, error, bool) {
	tb.Helper()
	z, err := newZstdStream(bufio.NewReaderSize(bytes.NewReader(b), readerSize), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdMaxWindow))
	if err != nil {
		tb.Fatal(err)
	}
	defer z.Close()
	var out []byte
	buf := make([]byte, step)
	var fc *frameCheck
	if deferred {
		fc = z.deferChecks()
	}
	for {
		var n int
		var err error
		if deferred {
			n, err = readChunk(z, buf, true)
			if k, cerr := fc.check(buf[:n], fc.marks()); cerr != nil {
				n, err = k, cerr
			}
		} else {
			n, err = z.Read(buf)
		}
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out, nil, !z.frames.whole
		}
		if err != nil {
			return out, err, !z.frames.whole
		}
	}
}

// TestZstdStreamAsDecoder: frame by frame, checked by the reader, every
// stream decodes to what the decoder alone makes of it, and the walk
// follows every frame (none is left to the decoder's own check).
func TestZstdStreamAsDecoder(t *testing.T) {
	for name, s := range zstdStreams(t) {
		ref, err := refZstd(s[0])
		if err != nil || !bytes.Equal(ref, s[1]) {
			t.Fatalf("%s: the decoder alone: %d bytes, %v", name, len(ref), err)
		}
		for _, step := range []int{1 << 19, 4096, 7} {
			for _, deferred := range []bool{false, true} {
				if step == 7 && len(s[1]) > 100000 {
					continue
				}
				got, err, followed := readZstdStream(t, s[0], step, deferred)
				if err != nil || !bytes.Equal(got, s[1]) {
					t.Errorf("%s, reads of %d, deferred %v: %d bytes, %v; want %d bytes", name, step, deferred, len(got), err, len(s[1]))
				}
				if !followed {
					t.Errorf("%s: the walk did not follow the frames", name)
				}
			}
		}
	}
}

// badSum is frames with the checksum of the second of three wrong: the
// stream, and the bytes of the frames before the bad one's end.
func badSum(tb testing.TB, parts [3][]byte) ([]byte, []byte) {
	var s []byte
	for i, p := range parts {
		f := zstdFrame(tb, p, i == 0, true)
		if i == 1 {
			f[len(f)-1] ^= 0x5a
		}
		s = append(s, f...)
	}
	return s, append(append([]byte{}, parts[0]...), parts[1]...)
}

// TestZstdStreamChecksum: a frame whose checksum is wrong is found where
// it is checked, in Read or by the reader it was deferred to, and its
// bytes come first: all but what follows the bad frame.
func TestZstdStreamChecksum(t *testing.T) {
	c := zstdContents()
	s, want := badSum(t, [3][]byte{c["text"], c["mixed"], c["noise"]})
	if _, err := refZstd(s); !errors.Is(err, zstd.ErrCRCMismatch) {
		t.Fatalf("the decoder alone: %v, want %v", err, zstd.ErrCRCMismatch)
	}
	for _, step := range []int{1 << 19, 4096, 100000} {
		for _, deferred := range []bool{false, true} {
			got, err, _ := readZstdStream(t, s, step, deferred)
			if !errors.Is(err, zstd.ErrCRCMismatch) || !bytes.Equal(got, want) {
				t.Errorf("reads of %d, deferred %v: %d bytes, %v; want %d bytes, %v", step, deferred, len(got), err, len(want), zstd.ErrCRCMismatch)
			}
		}
	}
}

// TestSourceZstdChecksum reads a zstd capture, pcap and pcapng, whose
// second frame's checksum is wrong each way a Source reads it: inline and
// read ahead into chunks. The packets wholly in the frames before the bad
// one's end are returned, then an error that names the codec and the
// fault; a capture cut at that end gives the same packets.
func TestSourceZstdChecksum(t *testing.T) {
	var pkts []Packet
	for len(pkts) < 3000 {
		pkts = append(pkts, testPackets(t)...)
	}
	ng, _ := pcapngFile(t, pkts)
	for _, f := range []struct {
		name string
		file []byte
	}{{"pcap", pcapFile(binary.LittleEndian, false, layers.LinkTypeRaw, pkts)}, {"pcapng", ng}} {
		third := len(f.file) / 3
		s, cut := badSum(t, [3][]byte{f.file[:third], f.file[third : 2*third+1], f.file[2*third+1:]})
		want, err := readAllFrom(t, cut, false)
		if err == nil || len(want) == 0 {
			t.Fatalf("%s cut at the bad frame's end: %d packets, %v", f.name, len(want), err)
		}
		for _, ahead := range []bool{false, true} {
			got, err := readAllFrom(t, s, ahead)
			if err == nil || !strings.Contains(err.Error(), "zstd: "+zstd.ErrCRCMismatch.Error()) {
				t.Errorf("%s, read ahead %v: error %v, want the checksum's", f.name, ahead, err)
			}
			if len(got) != len(want) {
				t.Errorf("%s, read ahead %v: %d packets, want %d", f.name, ahead, len(got), len(want))
			}
		}
	}
}

// readAllFrom reads a capture in memory, read ahead or not.
func readAllFrom(t *testing.T, b []byte, ahead bool) ([]Packet, error) {
	t.Helper()
	src, err := NewSource("f", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if ahead && !src.readAhead(nil, false) {
		t.Fatal("not read ahead")
	}
	return readAll(src)
}

// TestFrameCheck: frames ending at a chunk's start, within it, at its end,
// and marks out of order, which is a fault of the caller; only the bytes
// of frames with a checksum are hashed.
func TestFrameCheck(t *testing.T) {
	a, b := []byte("first frame"), []byte("second")
	sum := func(p []byte) uint32 { return uint32(xxhash.Sum64(p)) }
	st := func(off int64, check bool) frameMark { return frameMark{off: off, start: true, check: check} }
	en := func(off int64, sum uint32, check bool) frameMark { return frameMark{off: off, sum: sum, check: check} }
	ab := append(append([]byte{}, a...), b...)
	for _, tc := range []struct {
		name   string
		chunks [][]byte
		marks  [][]frameMark
		wantN  []int
		err    error
		hashed []byte // of the frame not ended, with no error
	}{
		{"in one chunk", [][]byte{ab}, [][]frameMark{{st(0, true), en(11, sum(a), true), st(11, true), en(17, sum(b), true)}}, []int{17}, nil, nil},
		{"at a chunk's end and start", [][]byte{a, b}, [][]frameMark{{st(0, true), en(11, sum(a), true)}, {st(11, true), en(17, sum(b), true)}}, []int{11, 6}, nil, nil},
		{"ended at the next chunk's start", [][]byte{a, b}, [][]frameMark{{st(0, true)}, {en(11, sum(a), true), st(11, true), en(17, sum(b), true)}}, []int{11, 6}, nil, nil},
		{"no checksum", [][]byte{ab}, [][]frameMark{{st(0, false), en(11, 1, false), st(11, true), en(17, sum(b), true)}}, []int{17}, nil, nil},
		{"second wrong", [][]byte{a, b}, [][]frameMark{{st(0, true), en(11, sum(a), true)}, {st(11, true), en(17, sum(a), true)}}, []int{11, 6}, zstd.ErrCRCMismatch, nil},
		{"first wrong", [][]byte{ab}, [][]frameMark{{st(0, true), en(11, sum(b), true), st(11, true), en(17, sum(b), true)}}, []int{11}, zstd.ErrCRCMismatch, nil},
		{"out of order", [][]byte{ab}, [][]frameMark{{en(17, 0, false), en(11, 0, false)}}, []int{17}, errFrameCheck, nil},
		{"beyond the chunk", [][]byte{a}, [][]frameMark{{en(12, 0, false)}}, []int{0}, errFrameCheck, nil},
		{"a checksum to come: hashed", [][]byte{a, b}, [][]frameMark{{st(0, true)}, nil}, []int{11, 6}, nil, ab},
		{"no checksum to come: not hashed", [][]byte{a, b}, [][]frameMark{{st(0, false)}, nil}, []int{11, 6}, nil, nil},
		{"after the last frame marked: not hashed", [][]byte{a, b}, [][]frameMark{{st(0, true), en(11, sum(a), true)}, nil}, []int{11, 6}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := &frameCheck{sum: xxhash.New()}
			var err error
			for i, c := range tc.chunks {
				var n int
				n, err = fc.check(c, tc.marks[i])
				if err != nil {
					if n != tc.wantN[i] {
						t.Errorf("chunk %d: %d bytes before the error, want %d", i, n, tc.wantN[i])
					}
					break
				}
				if n != tc.wantN[i] {
					t.Errorf("chunk %d: %d bytes, want %d", i, n, tc.wantN[i])
				}
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("error %v, want %v", err, tc.err)
			}
			if err == nil && fc.sum.Sum64() != xxhash.Sum64(tc.hashed) {
				t.Errorf("hashed: not the %d bytes %q", len(tc.hashed), tc.hashed)
			}
		})
	}
}

// zstdFaults are streams the decoder rejects, each with the content of
// the frames it was made of: cut in a header, a block or a checksum, bytes
// that are no frame after a whole one, a block of the reserved type, a
// skippable frame cut short.
func zstdFaults(tb testing.TB) map[string][2][]byte {
	text := zstdContents()["text"]
	frame := zstdFrame(tb, text, true, true)
	var h zstd.Header
	if err := h.Decode(frame); err != nil {
		tb.Fatal(err)
	}
	reserved := bytes.Clone(frame)
	reserved[h.HeaderSize] |= 3 << 1 // the first block's type
	out := map[string][2][]byte{
		"reserved block":  {reserved, text},
		"garbage after":   {append(bytes.Clone(frame), "garbage!"...), text},
		"3 bytes after":   {append(bytes.Clone(frame), 1, 2, 3), text},
		"cut skippable":   {append(bytes.Clone(frame), skippableFrame([]byte("kdupcap"))[:6]...), text},
		"cut in a header": {frame[:5], text},
	}
	for _, cut := range []int{1, 2, 3, 5, 9, len(frame) / 2} {
		out[fmt.Sprintf("cut %d bytes short", cut)] = [2][]byte{frame[:len(frame)-cut], text}
	}
	return out
}

// TestZstdStreamFaults: a stream the decoder rejects is rejected frame by
// frame too, read and checked either way, and the bytes given before the
// error are the start of what was compressed.
func TestZstdStreamFaults(t *testing.T) {
	for name, s := range zstdFaults(t) {
		if _, err := refZstd(s[0]); err == nil {
			t.Fatalf("%s: the decoder alone accepts it", name)
		}
		for _, step := range []int{1 << 19, 4096, 7} {
			for _, deferred := range []bool{false, true} {
				got, err, _ := readZstdStream(t, s[0], step, deferred)
				if err == nil || !bytes.HasPrefix(s[1], got) {
					t.Errorf("%s, reads of %d, deferred %v: %d bytes (the start of the content: %v), %v",
						name, step, deferred, len(got), bytes.HasPrefix(s[1], got), err)
				}
			}
		}
	}
}

// FuzzZstdStream: whatever the bytes, the stream read frame by frame, in
// Read or checked by its reader, accepts nothing the decoder alone
// rejects, and what both accept decodes to the same bytes.
func FuzzZstdStream(f *testing.F) {
	for _, s := range zstdStreams(f) {
		if len(s[0]) < 4096 {
			f.Add(s[0])
		}
	}
	c := []byte("produce v9 topic-a partition 3")
	f.Add(zstdFrame(f, bytes.Repeat(c, 50), true, true))
	f.Add(append(zstdFrame(f, c, false, true), skippableFrame(c)...))
	bad, _ := badSum(f, [3][]byte{c, c, c})
	f.Add(bad)
	for _, s := range zstdFaults(f) {
		f.Add(s[0])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ref, refErr := refZstd(b)
		if len(ref) > 1<<22 {
			return
		}
		for _, deferred := range []bool{false, true} {
			got, err, _ := readZstdStream(t, b, 1000, deferred)
			switch {
			case refErr != nil && err == nil:
				t.Fatalf("deferred %v: accepted %d bytes the decoder rejects: %v", deferred, len(got), refErr)
			case refErr == nil && err != nil:
				t.Fatalf("deferred %v: rejected what the decoder accepts: %v", deferred, err)
			case err == nil && !bytes.Equal(got, ref):
				t.Fatalf("deferred %v: %d bytes, the decoder %d", deferred, len(got), len(ref))
			case errors.Is(err, errFrameCheck):
				t.Fatalf("deferred %v: %v", deferred, err)
			}
		}
	})
}

// TestZstdReaderKinds: a zstdStream with one block at once, the decoder
// alone with more; a pcapng read ahead to its end lets go of its decoder,
// the stream and the checks included (a merge closes its files only at
// its end).
func TestZstdReaderKinds(t *testing.T) {
	for _, blocks := range []int{1, 4} {
		z, err := newZstd(bufio.NewReader(bytes.NewReader(nil)), blocks)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := z.(*zstdStream); ok != (blocks == 1) {
			t.Errorf("%d blocks: %T", blocks, z)
		}
		z.Close()
	}
	ng, want := pcapngFile(t, testPackets(t))
	src, err := NewSource("f", bytes.NewReader(zst(t, ng)))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if !src.readAhead(nil, false) {
		t.Fatal("not read ahead")
	}
	got, err := readAll(src)
	if err != nil || len(got) != len(want) {
		t.Fatalf("%d packets, %v; want %d", len(got), err, len(want))
	}
	if a := src.pb.ahead; a.rd != nil || a.check != nil || a.release != nil || src.cnt.r != nil {
		t.Errorf("read to its end, the source still holds its decoder: rd %T, check %v, release %v, counted %T",
			a.rd, a.check != nil, a.release != nil, src.cnt.r)
	}
}
