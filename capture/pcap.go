package capture

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// A pcap's records are read by Source itself, not by pcapgo (which reads the
// file header only): each record is parsed where it lies in the Source's
// buffer (pcapBuf) and its packet handed out as a slice of it, with no copy,
// and a record over MaxPacketBytes is skipped there unread. What is read and
// every error are pcapgo's: the same checks in the same order, the same
// messages, and the same end of input (a record header with none of its
// packet bytes after it ends the file cleanly, as with pcapgo's
// ZeroCopyReadPacketData).
//
// Once a merge reads the Source ahead, the stream is read on a goroutine
// of its own into chunks that become the buffer in turn (pcapahead.go).

// pcapBufSize is a pcap's buffer: a record up to this long is parsed in
// place (a longer one is read into a buffer of its own); the part of a
// record left at its end is moved to the front before it is filled again.
// 128 KiB: room for a loopback capture's 64 KiB segments, and the memory of
// the two 64 KiB buffers a pcap was read through before (pcapgo's and the
// one under it); 256 KiB measured no faster on the bench captures.
const pcapBufSize = 1 << 17

// pcapRecordHeader is the size of a pcap record header; pcapFileHeader of
// the file header.
const (
	pcapRecordHeader = 16
	pcapFileHeader   = 24
)

// pcapEagerMax is pcapgo's eagerReadMax (libpcap's MAXIMUM_SNAPLEN): a
// record may hold up to this many bytes whatever the snap length says.
const pcapEagerMax = 262144

// pcapRecords is how the records of a pcap read.
type pcapRecords struct {
	be      bigEndian
	nano    bool   // nanosecond timestamps
	factor  uint32 // to nanoseconds: 1 or 1000
	snaplen uint32
	maxCap  int // the longest record taken: the snap length, at least pcapEagerMax
	// large holds a packet too long for the read buffer (at most
	// MaxPacketBytes), grown as its bytes are read.
	large []byte
}

// isPcapMagic reports whether the first four bytes of a stream, read
// little-endian, open a pcap.
func isPcapMagic(m uint32) bool {
	switch m {
	case magicPcapMicroLE, magicPcapMicroBE, magicPcapNanoLE, magicPcapNanoBE:
		return true
	}
	return false
}

func newPcapRecords(magic, snaplen uint32) pcapRecords {
	r := pcapRecords{be: bigEndian(magic == magicPcapMicroBE || magic == magicPcapNanoBE), factor: 1000, snaplen: snaplen, maxCap: pcapEagerMax}
	if magic == magicPcapNanoLE || magic == magicPcapNanoBE {
		r.nano, r.factor = true, 1
	}
	if int64(snaplen) > pcapEagerMax {
		r.maxCap = int(snaplen)
	}
	return r
}

// bigEndian is a capture's byte order: its fields read through u16 and
// u32, not binary.ByteOrder, so that they are inlined.
type bigEndian bool

func (be bigEndian) u32(b []byte) uint32 {
	if be {
		return binary.BigEndian.Uint32(b)
	}
	return binary.LittleEndian.Uint32(b)
}

func (be bigEndian) u16(b []byte) uint16 {
	if be {
		return binary.BigEndian.Uint16(b)
	}
	return binary.LittleEndian.Uint16(b)
}

// nextPcap is next for a pcap.
func (s *Source) nextPcap() error {
	r := &s.rec
	hdr, err := s.pb.peek(pcapRecordHeader)
	if len(hdr) < pcapRecordHeader {
		if len(hdr) == 0 && err == io.EOF {
			return s.endPcap()
		}
		return s.failRecord(err)
	}
	sec, frac := r.be.u32(hdr[0:]), r.be.u32(hdr[4:])
	capLen, origLen := int(r.be.u32(hdr[8:])), int(r.be.u32(hdr[12:]))
	switch {
	case capLen > r.maxCap:
		return s.failRecord(fmt.Errorf("capture length exceeds snap length: %d > %d", capLen, r.snaplen))
	case capLen > origLen:
		return s.failRecord(fmt.Errorf("capture length exceeds original packet length: %d > %d", capLen, origLen))
	case capLen > MaxPacketBytes:
		return s.skipPcapRecord(sec, frac, capLen)
	}
	var (
		data []byte
		held *aheadBuf // the chunk data lies in, when read ahead
	)
	if n := pcapRecordHeader + capLen; n <= pcapBufSize {
		b, err := s.pb.peek(n)
		if len(b) < n {
			if len(b) == pcapRecordHeader && err == io.EOF {
				return s.endPcap() // none of the packet's bytes: as pcapgo, the end
			}
			return s.failRecord(err)
		}
		data = b[pcapRecordHeader:n:n]
		held = s.pb.take(n)
	} else if data, err = s.readLarge(capLen); err != nil {
		if err == io.EOF {
			return s.endPcap()
		}
		return s.failRecord(err)
	}
	// The microseconds are scaled in 32 bits, as pcapgo does.
	s.setPacket(data, held, s.link, time.Unix(int64(sec), int64(frac*r.factor)).UTC(), origLen, 0)
	return nil
}

// setPacket makes s.pkt the packet just read, data (in the chunk held,
// when parsed in place there), field by field: no Packet built and
// copied. Its capture length is len(data).
func (s *Source) setPacket(data []byte, held *aheadBuf, link layers.LinkType, ts time.Time, origLen, iface int) {
	s.good = s.consumed()
	s.lastTS = ts
	p := &s.pkt
	p.Data, p.LinkType, p.chunk = data, link, held
	p.CI.Timestamp, p.CI.CaptureLength, p.CI.Length = ts, len(data), origLen
	p.CI.InterfaceIndex, p.CI.AncillaryData = iface, nil
}

// endPcap ends a pcap cleanly.
func (s *Source) endPcap() error {
	s.err = io.EOF
	s.release()
	return s.err
}

// failRecord makes err, met reading a record, the Source's error: the end
// of the input within the record is io.ErrUnexpectedEOF.
func (s *Source) failRecord(err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	s.err = s.fail(s.good, err)
	s.release()
	return s.err
}

// readLarge reads the packet of a record too long for the read buffer
// (capLen at most MaxPacketBytes) into r.large, grown as its bytes come, so
// that a record claiming more bytes than the input holds allocates no more
// than the input gave. It returns io.EOF when the input ends before the
// packet's first byte.
func (s *Source) readLarge(capLen int) ([]byte, error) {
	s.pb.r += pcapRecordHeader // buffered
	buf := s.rec.large[:0]
	for len(buf) < capLen {
		k := min(capLen-len(buf), max(len(buf), pcapBufSize))
		buf = slices.Grow(buf, k)
		m, err := io.ReadFull(&s.pb, buf[len(buf):len(buf)+k])
		buf = buf[:len(buf)+m]
		if err != nil {
			if err == io.EOF && len(buf) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	s.rec.large = buf
	return buf, nil
}

// skipPcapRecord skips a record whose packet is over MaxPacketBytes (see
// oversized.go) and reads it as a packet with no Data, CI.Length its
// captured bytes.
func (s *Source) skipPcapRecord(sec, frac uint32, capLen int) error {
	if err := s.pb.discard(pcapRecordHeader + capLen); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		s.err = s.fail(s.good, fmt.Errorf("capture: a packet of %d bytes (over the %d-byte bound, skipped) is cut short: %w", capLen, MaxPacketBytes, err))
		s.release()
		return s.err
	}
	s.good = s.consumed()
	ns := int64(frac)
	if !s.rec.nano {
		ns *= 1000
	}
	s.pkt = Packet{CI: gopacket.CaptureInfo{Timestamp: time.Unix(int64(sec), ns).UTC(), Length: capLen}, LinkType: s.link}
	return nil
}

// pcapBuf is the buffer a pcap's records are parsed in: the bytes of the
// stream from offset off-(w-r) to off are buf[r:w].
type pcapBuf struct {
	buf  []byte
	r, w int
	off  int64 // stream offset of buf[w]
	rd   io.Reader
	err  error // rd's error after buf[w], sticky
	// ahead, once the stream is read ahead, hands it on in chunks
	// (pcapahead.go), each taken as buf in turn.
	ahead *pcapAhead
}

// newPcapBuf makes the buffer of a pcap read so far through br, up to
// offset off, from rd, which br read: br's buffered bytes move to it.
func newPcapBuf(br *bufio.Reader, rd io.Reader, off int64) pcapBuf {
	b := pcapBuf{buf: make([]byte, pcapBufSize), rd: rd, off: off}
	n := br.Buffered()
	head, _ := br.Peek(n)
	b.w = copy(b.buf, head)
	br.Discard(n)
	return b
}

func (b *pcapBuf) buffered() int { return b.w - b.r }

// fill adds bytes after buf[w], keeping buf[r:w]: it moves them to the
// front and reads into the room after them. There is room: peek asks for at
// most pcapBufSize bytes, and Read and discard fill an empty buffer only.
func (b *pcapBuf) fill() {
	if b.err != nil {
		return
	}
	if b.ahead != nil {
		b.fillAhead()
		return
	}
	if b.r > 0 {
		copy(b.buf, b.buf[b.r:b.w])
		b.w -= b.r
		b.r = 0
	}
	for range 100 {
		n, err := b.rd.Read(b.buf[b.w:])
		b.w += n
		b.off += int64(n)
		if err != nil {
			b.err = err
			return
		}
		if n > 0 {
			return
		}
	}
	b.err = io.ErrNoProgress
}

// peek returns the next n bytes (n at most pcapBufSize) without consuming
// them; fewer, with the stream's error, when it ends before.
func (b *pcapBuf) peek(n int) ([]byte, error) {
	for b.w-b.r < n && b.err == nil {
		b.fill()
	}
	if b.w-b.r < n {
		return b.buf[b.r:b.w], b.err
	}
	return b.buf[b.r : b.r+n], nil
}

// discard consumes the next n bytes; the stream's error when it ends
// before.
func (b *pcapBuf) discard(n int) error {
	for {
		k := min(n, b.w-b.r)
		b.r += k
		n -= k
		if n == 0 {
			return nil
		}
		if b.err != nil {
			return b.err
		}
		b.fill()
	}
}

// Read reads the stream through the buffer.
func (b *pcapBuf) Read(p []byte) (int, error) {
	if b.r == b.w {
		if b.err != nil {
			return 0, b.err
		}
		b.fill()
	}
	n := copy(p, b.buf[b.r:b.w])
	b.r += n
	if n == 0 {
		return 0, b.err
	}
	return n, nil
}

// release lets the Source's buffer go at the end of the stream, and with
// it, once read ahead to its end, the decompressor: a merge closes its
// files only at its end, and a zstd decoder keeps its window.
func (s *Source) release() {
	s.pb.release()
	if a := s.pb.ahead; a != nil && a.ended {
		s.cnt.r = nil // the goroutine read it last before it sent the end
	}
}

// take moves the buffer past the n bytes at its start, the record just
// parsed in place, and returns the chunk they lie in when read ahead.
func (b *pcapBuf) take(n int) *aheadBuf {
	b.r += n
	if b.ahead != nil {
		return b.ahead.cur
	}
	return nil
}

// release lets the buffer go at the end of the stream.
func (b *pcapBuf) release() {
	b.buf, b.r, b.w = nil, 0, 0
	if b.ahead != nil {
		b.ahead.drop()
	}
}
