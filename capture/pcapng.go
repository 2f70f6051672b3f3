package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// A pcapng's Enhanced Packet Blocks, nearly all of its bytes, are parsed
// by Source itself where they lie in its buffer (the pcapBuf a pcap's
// records are parsed in, pcap.go), and their packets handed out as slices
// of it with no copy: once the merge reads the Source ahead, in the chunks
// read ahead, which a caller may Hold (pipeline's split then hands them to
// its decoding goroutine in place, as a pcap's). On a real 1 GiB capture
// of kgo producers as pcapng, pcapgo's copy of every packet and the split
// kept off (a pcapng's packets had to be copied into its batches) made
// analyze 1.36x the time of the same capture as pcap.
//
// pcapgo still reads every other block (section and interface headers,
// statistics, name resolution, decryption secrets, simple and obsolete
// packet blocks, and any Enhanced Packet Block not read in place): Source
// hands it one block at a time (ngFeed), the bytes of that block and then
// io.EOF, which pcapgo takes at a block's start as the end of the input,
// and takes the interfaces pcapgo read from it. What is read is pcapgo's:
// an Enhanced Packet Block is read in place only where pcapgo would read
// the same packet from it, its fields and options within its length;
// anything else goes to pcapgo. Two things differ, both on files pcapgo
// misreads:
//   - a block whose length field is not a multiple of 4 or under 12 (no
//     block is), or a section header whose byte order is not one, gives the
//     rest of the stream to pcapgo, as before: Source can no longer find
//     the blocks' boundaries.
//   - a block whose contents run past its length (an option, a packet or
//     a field longer than the block) is an error (errBlockOverrun), where
//     pcapgo read on into the next block's bytes as if they were the rest
//     of it.
//
// FuzzPcapngInPlace holds this against pcapgo reading the same bytes.

// Block types Source and its tap need to know (pcapng spec, 4), and the
// sizes of an Enhanced Packet Block's parts.
const (
	blockSHB       = 0x0A0D0D0A // Section Header Block, the same either way round
	blockPB        = 2          // (obsolete) Packet Block
	blockSPB       = 3          // Simple Packet Block
	blockEPB       = 6          // Enhanced Packet Block
	blockDSB       = 0x0000000A // Decryption Secrets Block
	byteOrderMagic = 0x1A2B3C4D // a Section Header Block's, in its byte order
	ngEPBFixed     = 20         // interface, timestamp, captured and original lengths
	ngBlockHeader  = 8          // type and total length
)

// shbOrder reports the byte order of the section whose header's first 12
// bytes are hdr, and whether it is either.
func shbOrder(hdr []byte) (be bigEndian, ok bool) {
	switch binary.LittleEndian.Uint32(hdr[8:]) {
	case byteOrderMagic:
		return false, true
	case bits.ReverseBytes32(byteOrderMagic):
		return true, true
	}
	return false, false
}

// errBlockOverrun ends a pcapng whose block holds more than its length.
var errBlockOverrun = errors.New("pcapng block reads past its length")

// ngBlocks is how a pcapng's blocks read.
type ngBlocks struct {
	be     bigEndian // the section's byte order
	ifaces []ngIface // the section's interfaces, as pcapgo read them
	feed   ngFeed
}

// ngIface is what a packet needs of its interface: its link type and
// pcapgo's conversion of its timestamps.
type ngIface struct {
	link                       layers.LinkType
	mask, up, down, offsetSecs uint64
}

// newNgIface takes an interface as pcapgo read it, with the time scale
// pcapgo keeps to itself worked out again as pcapgo does
// (readInterfaceDescriptor: a resolution over 63 was refused there).
func newNgIface(in pcapgo.NgInterface) ngIface {
	res := in.TimestampResolution
	i := ngIface{link: in.LinkType, offsetSecs: in.TimestampOffset, up: 1, down: 1}
	if res.Binary() {
		i.mask = 1 << res.Exponent()
	} else {
		i.mask = 1
		for range res.Exponent() {
			i.mask *= 10
		}
	}
	if i.mask < 1e9 {
		i.up = 1e9 / i.mask
	} else {
		i.down = i.mask / 1e9
	}
	return i
}

// time is pcapgo's convertTime, ts%mask*up/down, without the division
// by 1 of the usual resolutions (one of up and down is 1).
func (i *ngIface) time(ts uint64) time.Time {
	frac := ts % i.mask * i.up
	if i.down > 1 {
		frac /= i.down
	}
	return time.Unix(int64(ts/i.mask+i.offsetSecs), int64(frac)).UTC()
}

// ngFeed is the reader under pcapgo: the bytes of the block Source hands
// it (left of them still to come), then io.EOF; or, once whole, the rest
// of the stream.
type ngFeed struct {
	pb    *pcapBuf
	left  int64
	whole bool
	over  bool // a read came after the block's last byte
}

func (f *ngFeed) Read(p []byte) (int, error) {
	if f.whole {
		return f.pb.Read(p)
	}
	if f.left == 0 {
		f.over = true
		return 0, io.EOF
	}
	if int64(len(p)) > f.left {
		p = p[:f.left]
	}
	n, err := f.pb.Read(p)
	f.left -= int64(n)
	return n, err
}

// openNg reads a pcapng's section header through pcapgo, the bytes read so
// far in s.br, the rest from s.cnt.
func (s *Source) openNg() error {
	s.pb = newPcapBuf(s.br, s.cnt, s.cnt.n.Load())
	s.ngb = &ngBlocks{}
	g := s.ngb
	g.feed.pb = &s.pb
	s.tap = &secretsTap{r: &g.feed}
	s.br = bufio.NewReaderSize(s.tap, readerSize)
	hdr, _ := s.pb.peek(12)
	typ, length, ok := s.ngFrame(hdr) // a section header: its magic was read
	if !ok {
		g.feed.whole = true
	}
	g.feed.left = int64(length)
	r, err := pcapgo.NewNgReader(s.br, pcapgo.NgReaderOptions{WantMixedLinkType: true})
	if err != nil {
		if g.feed.over && !g.feed.whole {
			err = s.overrun(typ, length, 0)
		}
		return s.fail(0, err)
	}
	s.ng = r
	if g.feed.left != 0 || s.br.Buffered() != 0 {
		g.feed.whole = true // pcapgo read the header from less than its block: it reads on from there
	}
	return nil
}

// ngFrame reads the type and length of the block whose first bytes are
// hdr, in the section's byte order (a section header's own, which it then
// takes), and reports whether Source can follow the blocks from there:
// false for fewer than 12 bytes (the stream ends within a block header),
// a length not a multiple of 4 or under 12, and a section header of no
// known byte order.
func (s *Source) ngFrame(hdr []byte) (typ, length uint32, ok bool) {
	g := s.ngb
	if len(hdr) < 12 {
		return 0, 0, false
	}
	if binary.LittleEndian.Uint32(hdr) == blockSHB {
		if g.be, ok = shbOrder(hdr); !ok {
			return 0, 0, false
		}
	}
	typ, length = g.be.u32(hdr), g.be.u32(hdr[4:])
	return typ, length, length >= 12 && length%4 == 0
}

// nextNg is next for a pcapng.
func (s *Source) nextNg() error {
	g := s.ngb
	for !g.feed.whole {
		hdr, err := s.pb.peek(12)
		if len(hdr) == 0 && err == io.EOF {
			return s.endNg()
		}
		typ, length, ok := s.ngFrame(hdr)
		if !ok {
			g.feed.whole = true
			break
		}
		if typ == blockEPB && length <= pcapBufSize && s.epbInPlace(int(length)) {
			return nil
		}
		if typ == blockSHB {
			g.ifaces = g.ifaces[:0] // pcapgo starts the section's list anew
		}
		start := s.consumed()
		g.feed.left, g.feed.over = int64(length), false
		got, err := s.readNg()
		if err == nil && got {
			if g.feed.left != 0 || s.br.Buffered() != 0 {
				g.feed.whole = true // pcapgo took the packet from less than the block: it reads on from there
			}
			return nil
		}
		if err != nil {
			if g.feed.over && err != io.EOF {
				s.err = s.fail(s.good, s.overrun(typ, length, start))
				s.release()
			}
			return s.err
		}
		s.takeIfaces()
	}
	_, err := s.readNg()
	return err
}

// overrun is errBlockOverrun for a block of type typ and length bytes at
// stream offset at.
func (s *Source) overrun(typ, length uint32, at int64) error {
	return fmt.Errorf("%w: the block at byte %d, of type 0x%x and %d bytes, holds more than that", errBlockOverrun, at, typ, length)
}

// readNg reads the next packet through pcapgo into s.pkt, and reports
// whether there was one: with the feed at a block, false and no error when
// pcapgo read the block whole and found no packet in it. An error is the
// Source's (s.err) but for that end.
func (s *Source) readNg() (bool, error) {
	data, ci, err := s.ng.ZeroCopyReadPacketData()
	link := layers.LinkTypeNull
	if err == nil {
		iface, ierr := s.ng.Interface(ci.InterfaceIndex)
		if ierr != nil {
			err = ierr
		}
		link = iface.LinkType
	}
	if err != nil {
		switch {
		case err == io.EOF && !s.ngb.feed.whole && s.ngb.feed.over:
			return false, nil
		case err == io.EOF:
			return false, s.endNg()
		case s.tap.over.on && isOversized(err):
			return true, s.skipOversized()
		default:
			s.err = s.fail(s.good, err)
			s.release()
		}
		return false, s.err
	}
	s.good = s.consumed()
	ci.AncillaryData = nil
	s.lastTS = ci.Timestamp
	s.pkt = Packet{Data: data, CI: ci, LinkType: link}
	return true, nil
}

// skipOversized skips the pcapng packet block over the bound that the tap
// stopped the stream at (oversized.go) and reads it as a packet with no
// Data, CI.Length its block's bytes, and the previous packet's timestamp.
func (s *Source) skipOversized() error {
	o := s.tap.over
	// What pcapgo left buffered is of the packet: the tap stopped the
	// stream within it.
	if _, err := s.br.Discard(s.br.Buffered()); err != nil {
		s.err = s.fail(s.good, err)
		s.release()
		return s.err
	}
	if err := s.tap.skip(); err != nil {
		s.err = s.fail(s.good, fmt.Errorf("capture: a packet of %d bytes (over the %d-byte bound, skipped) is cut short: %w", o.n, MaxPacketBytes, err))
		s.release()
		return s.err
	}
	s.good = s.consumed()
	s.pkt = Packet{CI: gopacket.CaptureInfo{Timestamp: s.lastTS, Length: int(o.n)}, LinkType: s.link}
	return nil
}

// endNg ends a pcapng cleanly.
func (s *Source) endNg() error {
	s.err = io.EOF
	s.release()
	return s.err
}

// takeIfaces takes the interfaces pcapgo added to the section.
func (s *Source) takeIfaces() {
	g := s.ngb
	for i := len(g.ifaces); i < s.ng.NInterfaces(); i++ {
		in, err := s.ng.Interface(i)
		if err != nil {
			break
		}
		g.ifaces = append(g.ifaces, newNgIface(in))
	}
}

// epbInPlace reads the Enhanced Packet Block of length bytes (at most
// pcapBufSize) at the buffer's start into s.pkt, where it lies, when pcapgo
// would read the same packet from it (ZeroCopyReadPacketData: its
// interface known, its packet, padding and options within its length, an
// end of options of no length); else it reads nothing and reports false.
func (s *Source) epbInPlace(length int) bool {
	g := s.ngb
	b, _ := s.pb.peek(length)
	if len(b) < length {
		return false // cut short: pcapgo says how
	}
	rest := length - ngBlockHeader - ngEPBFixed
	if rest < 0 {
		return false
	}
	f := b[ngBlockHeader:]
	id := g.be.u32(f)
	if uint64(id) >= uint64(len(g.ifaces)) {
		return false
	}
	capLen := g.be.u32(f[12:])
	if uint64(capLen) > uint64(rest) {
		return false
	}
	rest -= int(capLen) + (4-int(capLen)&3)&3
	if rest < 0 {
		return false
	}
	for opt := length - rest; rest != 4; {
		if rest < 4 {
			return false
		}
		code, n := g.be.u16(b[opt:]), int(g.be.u16(b[opt+2:]))
		rest -= 4
		opt += 4
		if code == 0 {
			if n != 0 {
				return false
			}
			break
		}
		n += (4 - n&3) & 3
		if n > rest {
			return false
		}
		rest -= n
		opt += n
	}
	iface := &g.ifaces[id]
	end := ngBlockHeader + ngEPBFixed + int(capLen)
	data := b[ngBlockHeader+ngEPBFixed : end : end]
	ts := iface.time(uint64(g.be.u32(f[4:]))<<32 | uint64(g.be.u32(f[8:])))
	s.setPacket(data, s.pb.take(length), iface.link, ts, int(g.be.u32(f[16:])), int(id))
	return true
}
