package decode

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/pierrec/lz4/v4"
)

// LZ4 frames are read block by block here, each block decompressed with
// pierrec/lz4's UncompressBlock straight into the capped output. The
// library's frame Reader takes two buffers of the frame's block size (4
// MiB for franz-go's frames, 8 MiB for a legacy frame) from pools a GC
// empties, whatever the cap: a 7-byte frame header could cost 8 MiB per
// batch. Here nothing is allocated but the output, grown geometrically to
// the cap. The frame format (lz4_Frame_format.md): magic, FLG, BD,
// optional content size and dictionary ID, a header checksum; blocks each
// a 4-byte little-endian size (high bit: stored uncompressed), the data,
// an optional block checksum; a zero end mark, an optional content
// checksum. Checksums are not verified (the batch's CRC-32C covers the
// bytes), nor the header's, which the Kafka of message format v0 and v1
// computed wrongly. Blocks that depend on the ones before (linked mode)
// are decompressed with the last 64 KiB of output as their dictionary.

const lz4Magic = 0x184D2204

var errLZ4Frame = errors.New("decode: lz4: not an LZ4 frame")

// lz4BlockMax is the block maximum size a frame's BD byte names.
func lz4BlockMax(bd byte) int {
	switch (bd >> 4) & 7 {
	case 4:
		return 64 << 10
	case 5:
		return 256 << 10
	case 6:
		return 1 << 20
	case 7:
		return 4 << 20
	}
	return 0
}

// lz4Frame decompresses the LZ4 frame src into c.buf, at most limit bytes;
// truncated says the cap cut it.
func (c *codecs) lz4Frame(src []byte, limit int) ([]byte, bool, error) {
	if len(src) < 7 || binary.LittleEndian.Uint32(src) != lz4Magic {
		return nil, false, errLZ4Frame
	}
	flg, bd := src[4], src[5]
	blockMax := lz4BlockMax(bd)
	if flg>>6 != 1 || blockMax == 0 {
		return nil, false, fmt.Errorf("decode: lz4: frame descriptor %#x %#x", flg, bd)
	}
	independent, blockSum, contentSize, dictID := flg&0x20 != 0, flg&0x10 != 0, flg&0x08 != 0, flg&0x01 != 0
	pos := 6
	if contentSize {
		pos += 8
	}
	if dictID {
		pos += 4
	}
	pos++ // header checksum
	out := c.buf[:0]
	for {
		if len(src)-pos < 4 {
			c.buf = out
			return nil, false, fmt.Errorf("decode: lz4: block size at byte %d of %d", pos, len(src))
		}
		size := binary.LittleEndian.Uint32(src[pos:])
		pos += 4
		if size == 0 {
			c.buf = out
			return out, false, nil // end mark
		}
		stored := size&(1<<31) != 0
		n := int(size &^ (1 << 31))
		if n > blockMax || n > len(src)-pos {
			c.buf = out
			return nil, false, fmt.Errorf("decode: lz4: block of %d bytes at byte %d", n, pos-4)
		}
		block := src[pos : pos+n]
		pos += n
		if blockSum {
			pos += 4
		}
		room := limit - len(out)
		if room <= 0 {
			c.buf = out
			return out, true, nil
		}
		// A block of n bytes holds at most 255 times as many (a match
		// token's length bytes), and never more than blockMax.
		most := blockMax
		if !stored {
			most = min(blockMax, 255*n+64)
		} else {
			most = min(blockMax, n)
		}
		if want := min(len(out)+most, limit); cap(out) < want {
			grown := make([]byte, len(out), min(max(2*cap(out), want, 4096), limit))
			copy(grown, out)
			out = grown
		}
		dst := out[len(out):min(cap(out), limit)]
		var (
			m   int
			err error
		)
		switch {
		case stored:
			if n > len(dst) {
				m = copy(dst, block)
				c.buf = out[:len(out)+m]
				return c.buf, true, nil
			}
			m = copy(dst, block)
		case independent:
			m, err = lz4.UncompressBlock(block, dst)
		default:
			m, err = lz4.UncompressBlockWithDict(block, dst, out[max(0, len(out)-64<<10):])
		}
		if err != nil {
			c.buf = out
			if len(dst) < most {
				// The block may hold more than the room left under the
				// cap: the batch is cut there.
				return out, true, nil
			}
			return nil, false, fmt.Errorf("decode: lz4: %w", err)
		}
		out = out[:len(out)+m]
	}
}
