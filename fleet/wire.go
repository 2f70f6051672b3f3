package fleet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// The primitives of the schema (schema.go): unsigned varints (uvarint),
// zig-zag signed varints (varint), fixed big-endian words, strings and
// byte strings prefixed by their length.

// writer appends the schema's primitives to buf.
type writer struct{ buf []byte }

func (w *writer) byte(b byte)      { w.buf = append(w.buf, b) }
func (w *writer) uvarint(v uint64) { w.buf = binary.AppendUvarint(w.buf, v) }
func (w *writer) varint(v int64)   { w.buf = binary.AppendVarint(w.buf, v) }
func (w *writer) u32(v uint32)     { w.buf = binary.BigEndian.AppendUint32(w.buf, v) }
func (w *writer) u64(v uint64)     { w.buf = binary.BigEndian.AppendUint64(w.buf, v) }
func (w *writer) raw(b []byte)     { w.buf = append(w.buf, b...) }
func (w *writer) str(s string)     { w.uvarint(uint64(len(s))); w.buf = append(w.buf, s...) }
func (w *writer) bytesOf(b []byte) { w.uvarint(uint64(len(b))); w.buf = append(w.buf, b...) }
func (w *writer) boolean(b bool)   { w.byte(boolByte(b)) }
func (w *writer) i32(v int32)      { w.varint(int64(v)) }
func (w *writer) i16(v int16)      { w.varint(int64(v)) }
func (w *writer) count(n int)      { w.uvarint(uint64(n)) }
func (w *writer) addr(a netip.AddrPort) {
	ip := a.Addr().Unmap()
	switch {
	case !a.IsValid():
		w.byte(0)
		return
	case ip.Is4():
		w.byte(4)
		b := ip.As4()
		w.raw(b[:])
	default:
		w.byte(6)
		b := ip.As16()
		w.raw(b[:])
	}
	w.buf = binary.BigEndian.AppendUint16(w.buf, a.Port())
}

// nullable writes b with its null-ness and its full length: -1 for nil,
// else the full length n, then the bytes kept.
func (w *writer) nullable(b []byte, n int) {
	if b == nil {
		w.varint(-1)
		return
	}
	w.varint(int64(n))
	w.bytesOf(b)
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// errShort is the error of a read past the end of a record.
var errShort = errors.New("record ends early")

// reader reads the schema's primitives with a sticky error: once a read
// fails, every later one returns zero values and err keeps the first
// failure. No count is trusted beyond the bytes left.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = fmt.Errorf("%w at byte %d", err, r.off)
	}
	r.b = nil
}

func (r *reader) left() int { return len(r.b) - r.off }

func (r *reader) byte() byte {
	if r.left() < 1 {
		r.fail(errShort)
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.fail(errors.New("bad uvarint"))
		return 0
	}
	r.off += n
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		r.fail(errors.New("bad varint"))
		return 0
	}
	r.off += n
	return v
}

func (r *reader) take(n int) []byte {
	if n < 0 || r.left() < n {
		r.fail(errShort)
		return nil
	}
	v := r.b[r.off : r.off+n]
	r.off += n
	return v
}

func (r *reader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

// length reads a count of items of at least least bytes each, refusing one
// the bytes left cannot hold.
func (r *reader) length(least int) int {
	n := r.uvarint()
	if r.err == nil && n > uint64(r.left()/max(least, 1)) {
		r.fail(fmt.Errorf("count %d exceeds the bytes left", n))
		return 0
	}
	return int(n)
}

func (r *reader) str() string { return string(r.take(r.length(1))) }

func (r *reader) bytesOf() []byte {
	b := r.take(r.length(1))
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

func (r *reader) boolean() bool {
	switch r.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	r.fail(errors.New("bad boolean"))
	return false
}

func (r *reader) i32() int32 {
	v := r.varint()
	if v < -1<<31 || v > 1<<31-1 {
		r.fail(fmt.Errorf("int32 %d out of range", v))
		return 0
	}
	return int32(v)
}

func (r *reader) i16() int16 {
	v := r.varint()
	if v < -1<<15 || v > 1<<15-1 {
		r.fail(fmt.Errorf("int16 %d out of range", v))
		return 0
	}
	return int16(v)
}

func (r *reader) addr() netip.AddrPort {
	var ip netip.Addr
	switch r.byte() {
	case 0:
		return netip.AddrPort{}
	case 4:
		if b := r.take(4); b != nil {
			ip = netip.AddrFrom4([4]byte(b))
		}
	case 6:
		if b := r.take(16); b != nil {
			ip = netip.AddrFrom16([16]byte(b))
		}
	default:
		r.fail(errors.New("bad address family"))
		return netip.AddrPort{}
	}
	p := r.take(2)
	if p == nil {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(ip, binary.BigEndian.Uint16(p))
}

// nullable reads what writer.nullable wrote: the bytes kept (nil for
// null) and the full length.
func (r *reader) nullable() ([]byte, int) {
	n := r.varint()
	if n == -1 {
		return nil, -1
	}
	if n < 0 || n > 1<<31-1 {
		r.fail(fmt.Errorf("length %d out of range", n))
		return nil, 0
	}
	b := r.bytesOf()
	if b == nil && r.err == nil {
		b = []byte{}
	}
	return b, int(n)
}
