package decode

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

// Codecs as attributes bits 0-2 number them:
//
//	1 gzip    a gzip stream (klauspost/compress/gzip)
//	2 snappy  a raw snappy block (franz-go, librdkafka, sarama), or xerial
//	          framing (the Java client): "\x82SNAPPY\x00", version and
//	          compat int32s, then int32-length-prefixed raw blocks
//	3 lz4     an LZ4 frame, read block by block (lz4.go) with pierrec/lz4
//	4 zstd    a zstd frame (klauspost/compress/zstd), single-threaded
//
// Every codec stops at Options.MaxDecompressedBytes: what lies beyond is
// never allocated, and the batch is marked truncated (counted). The
// streaming codecs (gzip, lz4, zstd) stop at the cap's byte; snappy, whose
// raw blocks decode whole, reads a block's decoded length first
// (snappy.DecodedLen) and refuses a block that would cross the cap, so a
// raw snappy section beyond the cap yields nothing and a xerial section
// stops at the last whole block within it. The output grows geometrically,
// never beyond the cap. Beside the cap per batch, a Printer has a budget
// for the whole run (Options.MaxDecompressedTotal): each batch is capped at
// what is left of it, and once it is spent nothing is decompressed
// (errBudget, counted in Stats.DecompressSkipped).

// maxZstdWindow bounds the window a zstd frame may ask for (the Java
// client and librdkafka use at most 8 MiB at their default levels), so
// that a frame cannot make the decoder hold more than that plus the cap.
const maxZstdWindow = 8 << 20

// maxSnappyRatio bounds what a raw snappy block may decode to per byte: a
// copy of 64 bytes takes a 2-byte tag and offset at least (snappy's
// format), so no block expands more than 32 times.
const maxSnappyRatio = 32

// xerialMagic starts a snappy section framed by the Java client.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// errCodec is an unknown compression codec.
var errCodec = errors.New("decode: unknown compression codec")

// errBudget: Options.MaxDecompressedTotal is spent; nothing was
// decompressed. Not an error in the batch: never counted as one.
var errBudget = errors.New("decode: decompression budget spent")

// codecs holds the decompressors a Printer reuses, made on first use.
type codecs struct {
	src  bytes.Reader
	gz   *gzip.Reader
	zstd *zstd.Decoder
	buf  []byte // the last decompressed section
	// zstdFrames counts the zstd sections read: the library allocates
	// some kilobytes of scratch for each frame whose compressed literals
	// do not decode, a fixed cost per batch (the allocation fuzz targets
	// allow for it).
	zstdFrames int
}

// decompress returns src decompressed with codec, at most
// maxDecompressed bytes of it; truncated says there was more. The result is
// valid until the next call.
func (p *Printer) decompress(codec int16, src []byte) (out []byte, truncated bool, err error) {
	if p.budget <= 0 {
		p.stats.DecompressSkipped++
		return nil, false, errBudget
	}
	out, truncated, err = p.decompressCapped(codec, src, int(min(int64(p.limit), p.budget)))
	// A section that fails (a wrong gzip checksum at its end) is charged
	// what it decompressed before failing, so that failures too spend
	// the budget.
	used := max(len(out), len(p.codecs.buf))
	p.budget -= int64(used)
	p.stats.DecompressedBytes += int64(used)
	return out, truncated, err
}

// gzipHeaderFits refuses a gzip stream whose header's extra field claims
// more bytes than the stream holds: the gzip reader would allocate the
// claim (up to 64 KiB) before finding the bytes missing.
func gzipHeaderFits(src []byte) error {
	const fextra = 1 << 2
	if len(src) >= 12 && src[3]&fextra != 0 {
		if n := int(src[10]) | int(src[11])<<8; n > len(src)-12 {
			return fmt.Errorf("decode: gzip: extra field of %d bytes in a stream of %d", n, len(src))
		}
	}
	return nil
}

// decompressCapped is decompress with the cap limit.
func (p *Printer) decompressCapped(codec int16, src []byte, limit int) (out []byte, truncated bool, err error) {
	c := &p.codecs
	if cap(c.buf) > keepBufBytes {
		c.buf = nil // one large section must not hold memory for the run
	}
	c.buf = c.buf[:0] // what this call decompresses, for decompress to charge
	c.src.Reset(src)
	switch codec {
	case 1:
		if err := gzipHeaderFits(src); err != nil {
			return nil, false, err
		}
		if c.gz == nil {
			c.gz = new(gzip.Reader)
		}
		if err := c.gz.Reset(&c.src); err != nil {
			return nil, false, fmt.Errorf("decode: gzip: %w", err)
		}
		return c.readCapped(c.gz, limit, "gzip")
	case 2:
		if bytes.HasPrefix(src, xerialMagic) {
			return c.xerial(src, limit)
		}
		return c.snappyBlock(c.buf[:0], src, limit)
	case 3:
		return c.lz4Frame(src, limit)
	case 4:
		if c.zstd == nil {
			// One goroutine-free decoder per Decoder, its window bounded.
			c.zstd, err = zstd.NewReader(nil,
				zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxWindow(maxZstdWindow),
				zstd.WithDecoderMaxMemory(maxZstdWindow))
			if err != nil {
				return nil, false, fmt.Errorf("decode: zstd: %w", err)
			}
		}
		c.zstdFrames++
		if err := c.zstd.Reset(&c.src); err != nil {
			return nil, false, fmt.Errorf("decode: zstd: %w", err)
		}
		return c.readCapped(c.zstd, limit, "zstd")
	}
	return nil, false, fmt.Errorf("%w %d", errCodec, codec)
}

// readCapped reads r to its end or limit bytes, whichever comes first,
// into c.buf, growing it no further than limit.
func (c *codecs) readCapped(r io.Reader, limit int, name string) ([]byte, bool, error) {
	buf := c.buf[:0]
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= limit {
				var one [1]byte
				n, _ := io.ReadFull(r, one[:])
				c.buf = buf
				return buf, n > 0, nil
			}
			grown := make([]byte, len(buf), min(max(2*cap(buf), 4096), limit))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			c.buf = buf
			return buf, false, nil
		}
		if err != nil {
			c.buf = buf
			return nil, false, fmt.Errorf("decode: %s: %w", name, err)
		}
	}
}

// snappyBlock appends the raw snappy block src to dst, refusing to grow
// dst beyond limit: a block whose decoded length (read before anything is
// decoded) would cross it is not decoded, and dst is truncated there. dst
// grows geometrically, so that the many blocks of a xerial section cost
// linear work and allocation.
func (c *codecs) snappyBlock(dst, src []byte, limit int) ([]byte, bool, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return nil, false, fmt.Errorf("decode: snappy: %w", err)
	}
	if n > maxSnappyRatio*len(src)+64 {
		// More than a block of that size can hold: refused before the
		// room for it is made.
		return nil, false, fmt.Errorf("decode: snappy: block of %d bytes decodes to %d", len(src), n)
	}
	if n > limit-len(dst) {
		c.buf = dst
		return dst, true, nil
	}
	if cap(dst)-len(dst) < n {
		grown := make([]byte, len(dst), min(max(2*cap(dst), len(dst)+n, 4096), limit))
		copy(grown, dst)
		dst = grown
	}
	out, err := snappy.Decode(dst[len(dst):len(dst)+n], src)
	if err != nil {
		c.buf = dst[:len(dst)+n] // the room made is kept, and charged
		return nil, false, fmt.Errorf("decode: snappy: %w", err)
	}
	dst = dst[:len(dst)+len(out)]
	c.buf = dst
	return dst, false, nil
}

// xerial decodes the Java client's snappy framing: a 16-byte header, then
// blocks each prefixed by its int32 length.
func (c *codecs) xerial(src []byte, limit int) ([]byte, bool, error) {
	if len(src) < 16 {
		return nil, false, fmt.Errorf("decode: snappy xerial header of %d bytes", len(src))
	}
	out := c.buf[:0]
	for pos := 16; pos < len(src); {
		if len(src)-pos < 4 {
			return nil, false, fmt.Errorf("decode: snappy xerial block length at byte %d", pos)
		}
		n := int(int32(uint32(src[pos])<<24 | uint32(src[pos+1])<<16 | uint32(src[pos+2])<<8 | uint32(src[pos+3])))
		pos += 4
		if n < 0 || n > len(src)-pos {
			return nil, false, fmt.Errorf("decode: snappy xerial block of %d bytes at byte %d", n, pos-4)
		}
		var (
			truncated bool
			err       error
		)
		out, truncated, err = c.snappyBlock(out, src[pos:pos+n], limit)
		if err != nil || truncated {
			return out, truncated, err
		}
		pos += n
	}
	return out, false, nil
}
