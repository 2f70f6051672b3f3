package hostile

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/klauspost/compress/gzip"
)

// gzipper compresses with gzip at its fastest level, reusing its writer and
// output buffer (so a batch's compressed bytes are valid until the next
// call).
type gzipper struct {
	zw  *gzip.Writer
	out bytes.Buffer
	buf []byte
}

func newGzipper(level int) (*gzipper, error) {
	g := &gzipper{buf: make([]byte, scanChunk)}
	zw, err := gzip.NewWriterLevel(&g.out, level)
	if err != nil {
		return nil, fmt.Errorf("gzip writer: %w", err)
	}
	g.zw = zw
	return g, nil
}

// compress returns src's bytes gzipped; src is read in chunks, so only the
// compressed bytes are held.
func (g *gzipper) compress(src source) ([]byte, error) {
	g.out.Reset()
	g.zw.Reset(&g.out)
	for src.left() > 0 {
		k := min(int64(len(g.buf)), src.left())
		src.fill(g.buf[:k])
		if _, err := g.zw.Write(g.buf[:k]); err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
	}
	if err := g.zw.Close(); err != nil {
		return nil, fmt.Errorf("gzip close: %w", err)
	}
	return g.out.Bytes(), nil
}

// snappyCopy64 is a snappy copy element of 64 bytes at offset 1 (tag
// copy-2): repeated, it expands one zero byte to any length.
var snappyCopy64 = []byte{63<<2 | 2, 1, 0}

// snappyZeros is a raw snappy block expanding to n zero bytes (n >= 1):
// the decoded length, a one-byte literal, then copies of 64 bytes at
// offset 1, three bytes each (1 GiB is about 50 MB).
func snappyZeros(n int64) source {
	head := binary.AppendUvarint(nil, uint64(n))
	head = append(head, 0, 0) // literal of length 1: a zero
	rest := n - 1
	var tail []byte
	if r := rest % 64; r > 0 {
		tail = []byte{byte(r-1)<<2 | 2, 1, 0}
	}
	return chain(&bytesSrc{b: head}, &repeatSrc{unit: snappyCopy64, n: 3 * (rest / 64)}, &bytesSrc{b: tail})
}

// xerialChunk is the uncompressed size of each chunk of the Java client's
// snappy framing.
const xerialChunk = 32 << 10

// xerialZeros is a snappy section in xerial framing (magic, version 1,
// compatible version 1, then length-prefixed raw blocks of 32 KiB each)
// expanding to n zero bytes.
func xerialZeros(n int64) source {
	head := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	chunk := func(k int64) []byte {
		raw := readAll(snappyZeros(k))
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(raw))), raw...)
	}
	full := chunk(xerialChunk)
	parts := []source{&bytesSrc{b: head}, &repeatSrc{unit: full, n: int64(len(full)) * (n / xerialChunk)}}
	if r := n % xerialChunk; r > 0 {
		parts = append(parts, &bytesSrc{b: chunk(r)})
	}
	return chain(parts...)
}

// zstdBlockMax is the largest zstd block.
const zstdBlockMax = 128 << 10

// zstdZeros appends a zstd frame holding raw (a raw block, if any) then n
// zero bytes as RLE blocks of 128 KiB, four bytes each (16 MiB is 522
// bytes). The frame asks a 1 MiB window and says its content size (four
// bytes: raw plus n below 4 GiB).
func zstdZeros(dst, raw []byte, n int64) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, 0xFD2FB528)
	dst = append(dst, 0x80, 10<<3) // FCS 4 bytes; window 2^(10+10)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(int64(len(raw))+n))
	block := func(last bool, typ, size int) {
		h := uint32(size)<<3 | uint32(typ)<<1
		if last {
			h |= 1
		}
		dst = append(dst, byte(h), byte(h>>8), byte(h>>16))
	}
	if len(raw) > 0 {
		block(n == 0, 0, len(raw))
		dst = append(dst, raw...)
	}
	for n > 0 {
		k := min(n, zstdBlockMax)
		n -= k
		block(n == 0, 1, int(k))
		dst = append(dst, 0)
	}
	return dst
}
