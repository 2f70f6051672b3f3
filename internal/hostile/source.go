package hostile

import (
	"hash/crc32"
)

// source is bytes made on demand, read once, in order: a Kafka frame of
// 100 MB or a snappy stream expanding to 1 GiB is never held whole. left
// says how many bytes remain, so that lengths can be written before the
// bytes; fill writes the next len(p) of them (len(p) <= left()).
type source interface {
	left() int64
	fill(p []byte)
}

// bytesSrc is a source of bytes held in memory (small frames, headers).
type bytesSrc struct{ b []byte }

func (s *bytesSrc) left() int64 { return int64(len(s.b)) }
func (s *bytesSrc) fill(p []byte) {
	n := copy(p, s.b)
	s.b = s.b[n:]
}

// zeroSrc is n zero bytes.
type zeroSrc struct{ n int64 }

func (s *zeroSrc) left() int64 { return s.n }
func (s *zeroSrc) fill(p []byte) {
	clear(p)
	s.n -= int64(len(p))
}

// repeatSrc is unit repeated until n bytes (the last repetition cut).
type repeatSrc struct {
	unit []byte
	off  int
	n    int64
}

func (s *repeatSrc) left() int64 { return s.n }
func (s *repeatSrc) fill(p []byte) {
	s.n -= int64(len(p))
	for len(p) > 0 {
		k := copy(p, s.unit[s.off:])
		p = p[k:]
		s.off += k
		if s.off == len(s.unit) {
			s.off = 0
		}
	}
}

// genSrc is bytes made a piece at a time by next, which appends the next
// piece to dst (never an empty one while bytes are left); n is the total,
// known in advance.
type genSrc struct {
	next func(dst []byte) []byte
	buf  []byte
	off  int
	n    int64
}

func (s *genSrc) left() int64 { return s.n }
func (s *genSrc) fill(p []byte) {
	s.n -= int64(len(p))
	for len(p) > 0 {
		if s.off == len(s.buf) {
			s.buf = s.next(s.buf[:0])
			s.off = 0
		}
		k := copy(p, s.buf[s.off:])
		p = p[k:]
		s.off += k
	}
}

// limitSrc is the first n bytes of src (a frame begun and never finished).
type limitSrc struct {
	src source
	n   int64
}

func (s *limitSrc) left() int64 { return min(s.n, s.src.left()) }
func (s *limitSrc) fill(p []byte) {
	s.src.fill(p)
	s.n -= int64(len(p))
}

// chainSrc is its parts one after the other.
type chainSrc struct{ parts []source }

func chain(parts ...source) *chainSrc { return &chainSrc{parts: parts} }

func (s *chainSrc) left() int64 {
	var n int64
	for _, p := range s.parts {
		n += p.left()
	}
	return n
}

func (s *chainSrc) fill(p []byte) {
	for len(p) > 0 {
		head := s.parts[0]
		k := min(int64(len(p)), head.left())
		head.fill(p[:k])
		p = p[k:]
		if head.left() == 0 {
			s.parts = s.parts[1:]
		}
	}
}

// castagnoli is the CRC-32C table of RecordBatch v2.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// scanChunk is the buffer size of a pass that only reads a source.
const scanChunk = 256 << 10

// crcOf reads src to its end and returns its CRC-32C continued from crc
// and its length; buf is scratch (at least 1 byte).
func crcOf(crc uint32, src source, buf []byte) (uint32, int64) {
	var n int64
	for src.left() > 0 {
		k := min(int64(len(buf)), src.left())
		src.fill(buf[:k])
		crc = crc32.Update(crc, castagnoli, buf[:k])
		n += k
	}
	return crc, n
}

// readAll reads a small source into a new slice (tests and small frames).
func readAll(src source) []byte {
	out := make([]byte, src.left())
	src.fill(out)
	return out
}
