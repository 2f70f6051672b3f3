package hostile

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"time"
)

// Link types written.
const (
	linkEthernet = 1
	linkSLL2     = 276 // Linux cooked v2, what `tcpdump -i any` writes
)

// startTime is the capture time of every kind's first packet.
var startTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

// fileFormat is how a capture's packets are framed in the file.
type fileFormat struct {
	ng   bool   // pcapng (one interface) instead of classic pcap
	link uint16 // link type
	snap uint32 // the snap length the file header says
	cut  int    // cut every packet to this many bytes (0: none)
}

// capWriter writes the packets of one capture, in time order, to a
// buffered writer. Errors are sticky: after the first, every call is a
// no-op and err says why, so loops of millions of packets check it once per
// connection, not per packet. It owns one frame buffer, reused for every
// packet.
type capWriter struct {
	bw    *bufio.Writer
	out   *countWriter
	f     fileFormat
	now   int64 // capture time of the next packet, ns since the epoch
	step  int64 // ns added after each packet
	mss   int   // TCP payload bytes per segment
	truth *Truth
	err   error
	frame []byte
	rec   [32]byte
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// bufSize is the write buffer: big enough that a pipe sees few writes.
const bufSize = 1 << 20

// maxFrame is the largest frame the reused buffer holds: link, IP and TCP
// headers with options, and an IPv4 packet's largest payload.
const maxFrame = 20 + 20 + 60 + 65535

func newCapWriter(w io.Writer, f fileFormat, t *Truth) *capWriter {
	out := &countWriter{w: w}
	c := &capWriter{
		bw: bufio.NewWriterSize(out, bufSize), out: out, f: f,
		now: startTime, step: 10 * int64(time.Microsecond), mss: 65000,
		truth: t, frame: make([]byte, maxFrame),
	}
	c.header()
	return c
}

func (c *capWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	if _, err := c.bw.Write(b); err != nil {
		c.err = fmt.Errorf("write capture at byte %d: %w", c.out.n, err)
	}
}

// header writes the pcap file header, or the pcapng section header and
// interface description blocks.
func (c *capWriter) header() {
	le := binary.LittleEndian
	if !c.f.ng {
		var h [24]byte
		le.PutUint32(h[0:], 0xa1b2c3d4) // microsecond resolution
		le.PutUint16(h[4:], 2)
		le.PutUint16(h[6:], 4)
		le.PutUint32(h[16:], c.f.snap)
		le.PutUint32(h[20:], uint32(c.f.link))
		c.write(h[:])
		return
	}
	var shb [28]byte
	le.PutUint32(shb[0:], 0x0A0D0D0A)
	le.PutUint32(shb[4:], 28)
	le.PutUint32(shb[8:], 0x1A2B3C4D)
	le.PutUint16(shb[12:], 1)
	le.PutUint64(shb[16:], ^uint64(0)) // section length unknown
	le.PutUint32(shb[24:], 28)
	c.write(shb[:])
	var idb [20]byte
	le.PutUint32(idb[0:], 1)
	le.PutUint32(idb[4:], 20)
	le.PutUint16(idb[8:], c.f.link)
	le.PutUint32(idb[12:], c.f.snap)
	le.PutUint32(idb[16:], 20)
	c.write(idb[:])
}

// recordHeader writes the header of a packet of incl captured bytes (orig
// on the wire) at the current time; for pcapng, an Enhanced Packet Block
// header whose block length covers incl padded bytes.
func (c *capWriter) recordHeader(incl, orig int64) {
	le := binary.LittleEndian
	us := c.now / 1000
	if !c.f.ng {
		h := c.rec[:16]
		le.PutUint32(h[0:], uint32(us/1e6))
		le.PutUint32(h[4:], uint32(us%1e6))
		le.PutUint32(h[8:], uint32(incl))
		le.PutUint32(h[12:], uint32(orig))
		c.write(h)
		return
	}
	h := c.rec[:28]
	le.PutUint32(h[0:], 6)
	le.PutUint32(h[4:], uint32(32+pad4(incl)))
	le.PutUint32(h[8:], 0)
	le.PutUint32(h[12:], uint32(uint64(us)>>32))
	le.PutUint32(h[16:], uint32(us))
	le.PutUint32(h[20:], uint32(incl))
	le.PutUint32(h[24:], uint32(orig))
	c.write(h)
}

// recordTrailer ends a pcapng block of incl packet bytes.
func (c *capWriter) recordTrailer(incl int64) {
	if !c.f.ng {
		return
	}
	var zero [4]byte
	c.write(zero[:pad4(incl)-incl])
	binary.LittleEndian.PutUint32(c.rec[:4], uint32(32+pad4(incl)))
	c.write(c.rec[:4])
}

func pad4(n int64) int64 { return (n + 3) &^ 3 }

// packet writes one frame, cut to the format's cut length, and moves the
// clock on.
func (c *capWriter) packet(frame []byte) {
	orig := int64(len(frame))
	incl := orig
	if c.f.cut > 0 && incl > int64(c.f.cut) {
		incl = int64(c.f.cut)
		c.truth.SnapLen = incl
		c.truth.SnapCutPackets++
		c.truth.SnapCutBytes += orig - incl
	}
	c.recordHeader(incl, orig)
	c.write(frame[:incl])
	c.recordTrailer(incl)
	c.count(incl)
}

// count updates the truth for a packet of n captured bytes.
func (c *capWriter) count(n int64) {
	c.truth.Packets++
	c.truth.MaxPacket = max(c.truth.MaxPacket, n)
	if n > HugePacket {
		c.truth.HugePackets++
		if c.f.ng {
			// kdupcap gives a pcapng packet over its bound the length of
			// its block (capture/oversized.go): read no further, the
			// block holds a header of 28 bytes, the padded packet and the
			// trailing length.
			n = 32 + (n+3)&^3
		}
		c.truth.HugeBytes += n
	}
	c.now += c.step
}

// streamPacket writes a packet of head followed by body's bytes, streamed:
// for the packets of hundreds of MiB or more that no reader should hold.
// The snap cut is not applied.
func (c *capWriter) streamPacket(head []byte, body source) {
	n := int64(len(head)) + body.left()
	c.recordHeader(n, n)
	c.write(head)
	c.copySource(body)
	c.recordTrailer(n)
	c.count(n)
}

// copySource writes src to the file in chunks of the frame buffer.
func (c *capWriter) copySource(src source) {
	for src.left() > 0 && c.err == nil {
		k := min(int64(len(c.frame)), src.left())
		src.fill(c.frame[:k])
		c.write(c.frame[:k])
	}
}

// wait moves the clock on by d.
func (c *capWriter) wait(d time.Duration) { c.now += int64(d) }

// close flushes the capture and sets the truth's byte count.
func (c *capWriter) close() error {
	if c.err == nil {
		if err := c.bw.Flush(); err != nil {
			c.err = fmt.Errorf("flush capture at byte %d: %w", c.out.n, err)
		}
	}
	c.truth.Bytes = c.out.n
	return c.err
}
