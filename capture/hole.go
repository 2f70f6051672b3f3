package capture

import (
	"encoding/binary"
	"slices"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/reassembly"
)

// Holes the capture will never fill. A hole in one direction is bytes the
// capture lost; when the peer's acknowledgment covers it, the peer got them
// and no retransmission will come, so once the reorder window ran out
// (reorder.go) it is filled with made-up bytes that the conn reports as a
// Gap, never as data. Segment starts of the data queued behind a hole are
// kept so that it is delivered one Data call per captured segment.

// maxStarts bounds the queued segment starts kept per direction; the
// boundaries of segments queued beyond it are not kept.
const maxStarts = 256

// maxFill bounds the hole skipped on the peer's acknowledgment; a larger
// one waits for IdleTimeout like any other.
const maxFill = 16 << 20

// queue records that reassembly queues the bytes [seq, end) of direction d
// beyond a hole.
func (c *conn) queue(d int, seq, end reassembly.Sequence) {
	if len(c.starts[d]) < maxStarts {
		c.starts[d] = append(c.starts[d], seq)
	}
	if !c.queued[d] {
		c.queued[d], c.hasAhead[d] = true, true
		c.ahead[d], c.aheadEnd[d] = seq, end
		return
	}
	if c.hasAhead[d] && seq.Difference(c.ahead[d]) > 0 {
		c.ahead[d] = seq
	}
	if c.aheadEnd[d].Difference(end) > 0 {
		c.aheadEnd[d] = end
	}
}

// ackedHole reports whether ack, the acknowledgment number of a segment of
// direction d, shows that the peer received bytes of the other direction
// that the capture lost: bytes beyond what that direction delivered, before
// data reassembly queued waiting for them. Such a hole is never filled by
// the capture (a segment merely late was waited for: reorder.go); waiting
// for IdleTimeout would hand the bytes after it to the Stream after this
// segment, which may answer them. It then asks Add to fill the hole first.
func (c *conn) ackedHole(d int, ack uint32) bool {
	r := 1 - d
	if !c.hasNext[r] || !c.hasAhead[r] {
		return false
	}
	end := reassembly.Sequence(ack - c.shift[r])
	if c.ahead[r].Difference(end) > 0 {
		end = c.ahead[r]
	}
	return c.askFill(r, end)
}

// askFill asks Add to fill direction r's hole up to end (see fillHole) and
// reports whether it will; a hole of no byte or over maxFill is not filled.
func (c *conn) askFill(r int, end reassembly.Sequence) bool {
	f := c.next[r].Difference(end)
	if f <= 0 || f > maxFill {
		return false
	}
	a := c.a
	a.fillConn, a.fillSeq, a.fillLen = c, c.next[r], f
	c.fill[r] = f
	return true
}

// boundaries returns, in increasing order, the offsets within the n bytes
// of direction d starting at sequence number first where a queued segment
// began, and forgets the starts delivered. The slice is reused.
func (c *conn) boundaries(d int, first reassembly.Sequence, n int, known bool) []int {
	a := c.a
	a.offs = a.offs[:0]
	if len(c.starts[d]) == 0 {
		return a.offs
	}
	if !known {
		c.starts[d] = c.starts[d][:0]
		return a.offs
	}
	kept := c.starts[d][:0]
	for _, s := range c.starts[d] {
		off := first.Difference(s)
		if off >= n {
			kept = append(kept, s)
			continue
		}
		if off > 0 {
			a.offs = append(a.offs, off)
		}
	}
	c.starts[d] = kept
	slices.Sort(a.offs)
	a.offs = slices.Compact(a.offs)
	return a.offs
}

// fillHole assembles on a flow a made-up segment of a.fillLen zero bytes at
// a.fillSeq, filling the hole the conn found acknowledged; the conn reports
// those bytes as a Gap and delivers the data queued after them.
func (a *Assembler) fillHole(netFlow gopacket.Flow, src, dst layers.TCPPort) {
	c, f := a.fillConn, a.fillLen
	a.fillConn = nil
	if cap(a.zeros) < f {
		a.zeros = make([]byte, f)
	}
	h := a.rstHeader[:]
	clear(h)
	binary.BigEndian.PutUint16(h[0:], uint16(src))
	binary.BigEndian.PutUint16(h[2:], uint16(dst))
	h[12] = 5 << 4 // data offset
	if err := a.rst.DecodeFromBytes(h, gopacket.NilDecodeFeedback); err != nil {
		return
	}
	a.rst.Seq = uint32(a.fillSeq)
	a.rst.Payload = a.zeros[:f]
	a.filling = true
	a.asm.AssembleWithContext(netFlow, &a.rst, a.ctx)
	a.filling, a.cur = false, nil
	a.rst.Payload = nil
	c.fill = [2]int{}
}
