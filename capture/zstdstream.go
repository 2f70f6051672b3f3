package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/zstd"
)

// A zstd capture is decoded a frame at a time (zstdStream), each frame's
// compressed bytes delimited by a walk over its block headers
// (zstdFrames), so that its content checksum, the low 32 bits of the
// XXH64 of its decompressed bytes, can be checked by the reader of those
// bytes rather than by the decoder: on the parser's goroutine when the
// capture is read ahead (pcapahead.go), which has time to
// spare while the other one decompresses, the run's slowest part on two
// cores. The decoder itself runs with its check off (zstd.IgnoreChecksum);
// a capture whose frames the walk cannot follow is decoded, and checked,
// by the decoder alone (zstdFrames.whole).
//
// Measured on a real 1 GiB capture's .pcap.zst (one frame) on two cores,
// as the time of `zstd -dc`, medians of the paired ratios of 15 to 25
// interleaved rounds, five times over: the decoder checking 1.189, 1.198,
// 1.217, 1.223, 1.263; checked here 1.155, 1.179, 1.194, 1.194, 1.201,
// faster each time; no check at all (not an option) 1.099-1.176. The hash
// took 0.07 s of the decompressing goroutine's 1.11 s; on the parser's
// goroutine it costs the run less but not nothing, as it is the first to
// read the bytes the other core wrote. Hashing a chunk after it is parsed
// rather than before gained nothing (1.201 both), nor did reading the
// compressed file in 1 MiB reads instead of 64 KiB (1.199 against 1.179).

// zstdMaxHeader is the largest zstd frame header: magic, descriptor,
// window, dictionary ID and content size.
const zstdMaxHeader = 4 + 1 + 1 + 4 + 8

// zstdFrames passes the compressed bytes of one zstd frame at a time, and
// io.EOF at its end: the frame header, its blocks, and its checksum, whose
// value it keeps. Skippable frames are skipped. A stream it cannot follow
// (a header or a block it does not read as a valid one, or cut short) is
// passed on whole from there, for the decoder to say what is wrong with it.
type zstdFrames struct {
	src *bufio.Reader
	// left is how many bytes of the current part (header, block, checksum)
	// are still to pass; part says which it is.
	left int
	part framePart
	last bool // the current block is the frame's last
	// hasSum: the frame ends in a checksum; sum is its value once passed.
	hasSum bool
	sum    [4]byte
	nsum   int
	// whole: the rest of the stream passes as it is (see above).
	whole bool
}

type framePart uint8

const (
	partEnd    framePart = iota // no frame started, or it has passed: io.EOF
	partHeader                  // the frame header
	partBlock                   // a block, its header included
	partSum                     // the checksum
)

// next starts the next frame; false at the clean end of the stream.
func (f *zstdFrames) next() (bool, error) {
	for {
		head, err := f.src.Peek(zstdMaxHeader)
		if len(head) == 0 {
			if err == io.EOF {
				return false, nil
			}
			return false, err
		}
		var h zstd.Header
		if h.Decode(head) != nil {
			f.whole = true
			return true, nil
		}
		if h.Skippable {
			if _, err := io.CopyN(io.Discard, f.src, int64(h.HeaderSize)+int64(h.SkippableSize)); err != nil {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return false, fmt.Errorf("skippable frame: %w", err)
			}
			continue
		}
		f.part, f.left, f.last = partHeader, h.HeaderSize, false
		f.hasSum, f.nsum, f.sum = h.HasCheckSum, 0, [4]byte{}
		return true, nil
	}
}

// start marks where the frame just started begins, off bytes into the
// decompressed stream, and whether it has a checksum.
func (f *zstdFrames) start(off int64) frameMark {
	return frameMark{off: off, start: true, check: f.hasSum}
}

// end marks where the frame that has passed ends, and the checksum its
// bytes must have, if any.
func (f *zstdFrames) end(off int64) frameMark {
	return frameMark{off: off, sum: binary.LittleEndian.Uint32(f.sum[:]), check: f.hasSum}
}

// advance moves to the part after the one passed.
func (f *zstdFrames) advance() {
	switch {
	case f.part == partHeader || (f.part == partBlock && !f.last):
		h, _ := f.src.Peek(3)
		if len(h) < 3 { // cut short: the decoder says so
			f.whole = true
			return
		}
		bh := uint32(h[0]) | uint32(h[1])<<8 | uint32(h[2])<<16
		size := int(bh >> 3)
		switch bh >> 1 & 3 {
		case 1: // RLE: one byte, repeated
			size = 1
		case 3: // reserved: the decoder says so
			f.whole = true
			return
		}
		f.part, f.left, f.last = partBlock, 3+size, bh&1 == 1
	case f.part == partBlock && f.hasSum:
		f.part, f.left = partSum, len(f.sum)
	default:
		f.part = partEnd
	}
}

func (f *zstdFrames) Read(p []byte) (int, error) {
	if f.whole {
		return f.src.Read(p)
	}
	for f.left == 0 {
		if f.part == partEnd {
			return 0, io.EOF
		}
		f.advance()
		if f.whole {
			return f.src.Read(p)
		}
	}
	if len(p) > f.left {
		p = p[:f.left]
	}
	n, err := f.src.Read(p)
	f.left -= n
	if f.part == partSum {
		f.nsum += copy(f.sum[f.nsum:], p[:n])
	}
	return n, err // a bufio.Reader gives bytes or an error, not both
}

// frameMark is where a frame started or ended in the decompressed
// stream, and whether it has a checksum (check); an end's is sum. The
// bytes of a frame with none are not hashed.
type frameMark struct {
	off   int64
	sum   uint32
	check bool
	start bool
}

// zstdStream decodes a zstd stream frame by frame, the decoder's own
// checksum check off, and checks each frame's checksum with a frameCheck:
// its own, in Read, until deferChecks hands that to the reader of its
// bytes.
type zstdStream struct {
	frames  zstdFrames
	dec     *zstd.Decoder
	inFrame bool
	out     int64       // decompressed bytes returned
	marks   []frameMark // the frames started and ended since frameCheck.marks
	own     *frameCheck
	err     error
}

// zstdReader is a zstd decoder of a capture: a zstdStream, or the
// decoder alone.
type zstdReader interface {
	io.Reader
	Close()
}

// newZstd decodes src, blocks at once (zstdBlocks). With one block, the
// decompressing goroutine's, a zstdStream leaves the checksums to the
// reader of the bytes. With more the decoder alone decodes and checks,
// its pipeline's goroutines on cores of their own: a zstdStream would gain
// nothing there, and each frame's Reset starts that pipeline anew (4 KiB
// frames took three times as long).
func newZstd(src *bufio.Reader, blocks int) (zstdReader, error) {
	if blocks > 1 {
		return zstd.NewReader(src, zstd.WithDecoderConcurrency(blocks), zstd.WithDecoderMaxWindow(zstdMaxWindow))
	}
	return newZstdStream(src, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdMaxWindow))
}

// newZstdStream decodes src with the decoder options given (besides the
// checksum's).
func newZstdStream(src *bufio.Reader, opts ...zstd.DOption) (*zstdStream, error) {
	dec, err := zstd.NewReader(nil, append(opts, zstd.IgnoreChecksum(true))...)
	if err != nil {
		return nil, err
	}
	z := &zstdStream{frames: zstdFrames{src: src}, dec: dec}
	z.own = &frameCheck{z: z, sum: xxhash.New()}
	return z, nil
}

func (z *zstdStream) Read(p []byte) (int, error) {
	if z.err != nil {
		return 0, z.err
	}
	for {
		if !z.inFrame {
			more, err := z.frames.next()
			if err == nil && !more {
				err = io.EOF
			}
			if err == nil && z.frames.whole {
				// Not followed: the decoder checks what it can.
				err = z.dec.ResetWithOptions(&z.frames, zstd.IgnoreChecksum(false))
			} else if err == nil {
				err = z.dec.Reset(&z.frames)
			}
			if err != nil {
				z.err = err
				return 0, err
			}
			z.inFrame = true
			if !z.frames.whole {
				z.marks = append(z.marks, z.frames.start(z.out))
			}
		}
		n, err := z.dec.Read(p)
		z.out += int64(n)
		if err == io.EOF && !z.frames.whole {
			z.inFrame, err = false, nil
			z.marks = append(z.marks, z.frames.end(z.out))
		}
		if z.own != nil {
			if k, cerr := z.own.check(p[:n], z.own.marks()); cerr != nil {
				z.err = cerr
				return k, cerr
			}
		}
		if err != nil {
			z.err = err
			return n, err
		}
		if n > 0 || z.inFrame {
			return n, nil
		}
	}
}

// deferChecks hands the checks over to the reader of the stream's bytes
// from now on: the frameCheck, with the hash of the current frame so far,
// whose marks (frameCheck.marks) are taken where Read is called.
func (z *zstdStream) deferChecks() *frameCheck {
	fc := z.own
	z.own = nil
	return fc
}

// Close releases the decoder.
func (z *zstdStream) Close() { z.dec.Close() }

// frameCheck checks the frames of a zstdStream, in order, on the goroutine
// that reads its bytes: the stream's own in Read, or the parser of the
// chunks read ahead (pcapahead.go), the marks of the frames in each chunk
// taken where the stream is read (marks).
type frameCheck struct {
	z       *zstdStream
	sum     *xxhash.Digest // the current frame's bytes so far
	off     int64          // the stream offset checked up to
	hashing bool           // the current frame has a checksum
}

// marks returns the frames' marks since the last call, the slice the
// caller's; nil for a nil frameCheck (a stream that is not zstdStream's).
// It is called where the stream is read.
func (c *frameCheck) marks() []frameMark {
	if c == nil {
		return nil
	}
	m := c.z.marks
	c.z.marks = nil
	return m
}

// errFrameCheck is an internal fault: bytes checked out of order.
var errFrameCheck = errors.New("zstd: frame check out of order")

// check hashes b, the stream's next bytes, those of frames with a
// checksum, and checks each frame that ends in b, by marks (those within
// b, in order). It returns how many of b's bytes come before the end of
// the first frame whose checksum is wrong, and zstd.ErrCRCMismatch; else
// len(b) and nil. Bytes outside a frame marked started (a stream the walk
// no longer follows) are not hashed: the decoder checks those.
func (c *frameCheck) check(b []byte, marks []frameMark) (int, error) {
	start := c.off
	done := 0
	for _, m := range marks {
		k := int(m.off - start)
		if k < done || k > len(b) {
			return done, errFrameCheck
		}
		if c.hashing {
			c.sum.Write(b[done:k])
		}
		done = k
		if m.start {
			c.hashing = m.check
			continue
		}
		got := uint32(c.sum.Sum64())
		c.hashing = false
		c.sum.Reset()
		if m.check && got != m.sum {
			c.off = start + int64(k)
			return k, zstd.ErrCRCMismatch
		}
	}
	if c.hashing {
		c.sum.Write(b[done:])
	}
	c.off = start + int64(len(b))
	return len(b), nil
}
