package capture

import (
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/reassembly"
)

// packetContext carries a packet's CaptureInfo through reassembly. Queued
// out-of-order data keeps a pointer to it, so it is replaced, not reused,
// after a packet was queued.
type packetContext struct{ ci gopacket.CaptureInfo }

func (c *packetContext) GetCaptureInfo() gopacket.CaptureInfo { return c.ci }

// factory makes a conn for every new connection reassembly sees.
type factory struct{ a *Assembler }

func (f factory) New(netFlow, _ gopacket.Flow, tcp *layers.TCP, ac reassembly.AssemblerContext) reassembly.Stream {
	a := f.a
	a.stats.TCPConnections++
	ts := ac.GetCaptureInfo().Timestamp
	c := &conn{a: a, last: ts}
	a.track(c)
	a.known(c, netFlow, tcp)
	if a.newStream != nil {
		c.s = a.newStream(a.dec.src, a.dec.dst, ts)
	}
	if a.ev != nil {
		c.key = keyOf(a.dec.src, a.dec.dst)
		var again bool
		c.ev, again = a.ev.open(c.key, c.s == nil)
		a.evPending = a.evPending || again
	}
	return c
}

// conn adapts one Stream to reassembly. Direction A is reassembly's
// "client to server", the direction of the first packet seen.
type conn struct {
	a      *Assembler
	s      Stream  // nil: ignored from the start
	key    connKey // its endpoints, when the Assembler has an Evidence
	ev     *evConn // and its packets held there
	last   time.Time
	done   bool // Data returned false: deliver nothing more
	closed bool // Close was called (or would have been, for a nil s)
	rst    bool // the segment being assembled has RST set
	// shift moves the sequence numbers of a direction down by the bytes the
	// snap length cut from its earlier segments, so that the next segment
	// follows on at once and the cut bytes are reported as a Gap.
	shift [2]uint32
	// gapAfter is the size of the Gap to report after the bytes of the
	// truncated segment being assembled.
	gapAfter [2]int
	// halfClosed records the directions that ended with FIN or RST.
	halfClosed [2]bool
	// isn is the sequence number of the SYN of a direction, when seen: a
	// SYN with another one opens a new connection.
	isn    [2]uint32
	hasISN [2]bool
	// next is the sequence number (moved down by shift) a direction
	// expects next, once known. queued says reassembly may hold data of
	// the direction beyond a hole, up to aheadEnd; hasAhead that ahead is
	// the lowest sequence number of that data (unknown once part of the
	// queue was delivered, until all of it was).
	next, ahead, aheadEnd     [2]reassembly.Sequence
	hasNext, queued, hasAhead [2]bool
	// hold, when on, is a reorder window open for a late segment
	// (reorder.go); nil until the connection's first.
	hold *hold
	// fill is the size of the made-up bytes that open the next delivery
	// of a direction: they stand for a hole the peer acknowledged, and are
	// reported as a Gap, never as data.
	fill [2]int
	// starts are the sequence numbers at which queued segments of a
	// direction begin (at most maxStarts), so that data delivered after a
	// hole keeps its segment boundaries: a receiver resyncing its framing
	// after a Gap looks for a message at the start of a Data call.
	starts [2][]reassembly.Sequence
	// fastState is the fast path's (fastpath.go).
	fastState
}

func dirIndex(dir reassembly.TCPFlowDirection) int {
	if dir == reassembly.TCPDirClientToServer {
		return 0
	}
	return 1
}

const noSequence = reassembly.Sequence(-1) // reassembly's invalidSequence

// Accept is called by reassembly for every segment of the connection before
// it is used.
func (c *conn) Accept(tcp *layers.TCP, ci gopacket.CaptureInfo, dir reassembly.TCPFlowDirection, nextSeq reassembly.Sequence, start *bool, _ reassembly.AssemblerContext) bool {
	a := c.a
	if a.touching {
		return false // reassembly took the time of a fast path's segment (touch)
	}
	if a.evPending && !a.synthetic && !a.filling && a.replaying == nil {
		// Held before its bytes are delivered, late ones included.
		a.evPending = false
		c.ev = a.ev.record(c.ev, c.key, a.evPacket)
	}
	if c.closed {
		return false
	}
	if a.filling {
		// The made-up segment filling an acknowledged hole must land
		// exactly at the hole, or it is not used.
		d := dirIndex(dir)
		if nextSeq == noSequence || nextSeq != reassembly.Sequence(tcp.Seq) {
			// Not where it was expected: stop trying for this queue.
			c.fill[d], c.hasAhead[d] = 0, false
			return false
		}
		c.rst = false
		return true
	}
	if tcp.RST && !a.synthetic {
		if d := dirIndex(dir); c.halfClosed[d] && !c.halfClosed[1-d] {
			// An RST after its direction's FIN: a peer that closed, then
			// got bytes (a TLS client's close_notify) and answered them
			// with RST. Reassembly ignores packets of a closed half, but
			// the RST still ends the whole connection: close the other
			// direction as for any RST.
			a.pendingRST, a.rstDir = c, d
			return false
		}
	}
	if c.hold != nil && c.hold.on && a.replaying != c && !a.synthetic && c.s != nil && !c.done {
		// A reorder window is open: the packet may be kept aside.
		if !c.holdPacket(dirIndex(dir), tcp, ci) {
			return false
		}
	}
	if tcp.SYN && !tcp.ACK && !a.synthetic {
		d := dirIndex(dir)
		switch {
		case nextSeq == noSequence:
			c.isn[d], c.hasISN[d] = tcp.Seq, true
		case !c.hasISN[d] || c.isn[d] != tcp.Seq:
			a.restart = true
			return false
		}
	}
	if ci.Timestamp.After(c.last) {
		c.last = ci.Timestamp
	}
	// Take the connection from wherever the capture starts.
	*start = true
	d := dirIndex(dir)
	a.cur = c
	if a.synthetic {
		// With no sequence yet, *start makes the RST the start and end.
		if nextSeq != noSequence {
			tcp.Seq = uint32(nextSeq)
		}
		c.rst = false
		return true
	}
	if c.s == nil || c.done {
		// Ignored: only FIN, RST and SYN still matter (to close the
		// connection and let its 4-tuple be reused). Every segment becomes
		// an empty one at the expected place: nothing is queued or copied.
		tcp.Payload = tcp.Payload[:0]
		if nextSeq != noSequence && !tcp.SYN {
			tcp.Seq = uint32(nextSeq)
		}
		c.rst = tcp.RST
		return true
	}
	if tcp.ACK && !a.refilled && c.ackedHole(d, tcp.Ack) {
		// Assembled again by Add once the hole is filled.
		return false
	}
	c.rst = tcp.RST
	tcp.Seq -= c.shift[d]
	n := len(tcp.Payload)
	if nextSeq != noSequence {
		c.next[d], c.hasNext[d] = nextSeq, true
	}
	if nextSeq == noSequence || tcp.SYN {
		if a.missing > 0 && !tcp.SYN {
			c.cut(d, n, ci)
		}
		return true
	}
	seq := reassembly.Sequence(tcp.Seq)
	diff := nextSeq.Difference(seq)
	if tcp.FIN && diff > 0 {
		c.finAhead[d] = true // the fast path leaves the direction to reassembly
	}
	if diff < 0 && n > 0 {
		// Bytes before the stream: reassembly counts them as overlap, in
		// the stats of its next delivery of the direction.
		c.overlapDue[d] = true
	}
	switch {
	case diff > 0 && n > 0:
		if (c.hold == nil || !c.hold.on) && c.startHold(d, tcp, ci) {
			// Kept aside: the segment before it may come late.
			return false
		}
		// Ahead of the stream: reassembly queues it with the context.
		a.ctxQueued = true
		c.queue(d, seq, seq.Add(n))
	case diff == 0 && a.missing > 0:
		c.cut(d, n, ci)
	case n > 0 && nextSeq.Difference(seq.Add(n)) <= 0:
		a.stats.Retransmissions++
	}
	return true
}

// cut handles an in-order segment of direction d whose last a.missing
// payload bytes the snap length cut off: later segments are moved down so
// that they follow on at once, and the cut bytes are a Gap after the n bytes
// captured. With no byte captured, reassembly delivers nothing for the
// segment, so the Gap is reported now, before the next segment's bytes.
func (c *conn) cut(d, n int, ci gopacket.CaptureInfo) {
	a := c.a
	c.shift[d] += uint32(a.missing)
	if n > 0 {
		c.gapAfter[d] = a.missing
		return
	}
	a.stats.Gaps++
	a.stats.GapBytes += int64(a.missing)
	c.s.Gap(d == 0, a.missing, ci.Timestamp)
}

// ReassembledSG hands in-order bytes to the Stream.
func (c *conn) ReassembledSG(sg reassembly.ScatterGather, _ reassembly.AssemblerContext) {
	dir, _, end, skip := sg.Info()
	d := dirIndex(dir)
	a := c.a
	if end {
		c.halfClosed[d] = true
		if c.rst && c == a.cur && !a.synthetic && !c.halfClosed[1-d] {
			a.pendingRST, a.rstDir = c, d
		}
	}
	if c.s == nil || c.done || c.closed {
		return
	}
	if end && !a.synthetic {
		// After this direction's last bytes, delivered below.
		defer c.ended(d, c.rst)
	}
	fromA := d == 0
	st := sg.Stats()
	a.stats.OverlapBytes += int64(st.OverlapBytes)
	c.overlapDue[d] = false
	n, _ := sg.Lengths()
	first, known := c.next[d].Add(max(skip, 0)), c.hasNext[d] // of the first byte
	if c.hasNext[d] {
		c.next[d] = c.next[d].Add(n + max(skip, 0))
		if c.queued[d] {
			switch {
			case c.next[d].Difference(c.aheadEnd[d]) <= 0:
				c.queued[d], c.hasAhead[d] = false, false // all delivered
			case c.next[d].Difference(c.ahead[d]) <= 0:
				c.hasAhead[d] = false // some delivered: the rest's start is unknown
			}
		}
	}
	ts := c.last
	if n > 0 {
		ts = sg.CaptureInfo(0).Timestamp
	}
	if skip > 0 {
		a.stats.Gaps++
		a.stats.GapBytes += int64(skip)
		c.s.Gap(fromA, skip, ts)
	}
	var data []byte
	if n > 0 {
		data = sg.Fetch(n)
	}
	f := 0
	if a.filling {
		f = min(c.fill[d], n)
	}
	if f > 0 {
		// The made-up bytes filling an acknowledged hole.
		c.fill[d] = 0
		a.stats.Gaps++
		a.stats.GapBytes += int64(f)
		c.s.Gap(fromA, f, ts)
		data, n, first = data[f:], n-f, first.Add(f)
		if n > 0 {
			ts = sg.CaptureInfo(f).Timestamp
		}
	}
	if n > 0 {
		a.stats.DeliveredBytes += int64(n)
		// One call per queued segment delivered here, one for the rest.
		prev := 0
		for _, off := range c.boundaries(d, first, n, known) {
			if !c.s.Data(fromA, data[prev:off], ts) {
				c.stop()
				return
			}
			prev, ts = off, sg.CaptureInfo(f+off).Timestamp
		}
		if !c.s.Data(fromA, data[prev:], ts) {
			c.stop()
			return
		}
	}
	if g := c.gapAfter[d]; g > 0 {
		c.gapAfter[d] = 0
		a.stats.Gaps++
		a.stats.GapBytes += int64(g)
		c.s.Gap(fromA, g, ts)
	}
}

// ended tells an Ender that direction d ended with a FIN or an RST, at
// the time of the packet that ended it.
func (c *conn) ended(d int, rst bool) {
	if c.done || c.closed {
		return
	}
	if e, ok := c.s.(Ender); ok {
		e.End(d == 0, rst, c.last)
	}
}

// stop ends delivery once the Stream's Data returned false.
func (c *conn) stop() {
	c.done = true
	c.gapAfter = [2]int{}
	c.starts = [2][]reassembly.Sequence{}
	if c.a.ev != nil {
		c.a.ev.ignore(c.ev)
	}
}

// ReassemblyComplete is called once both directions ended (FIN, RST, idle,
// end of input).
func (c *conn) ReassemblyComplete(_ reassembly.AssemblerContext) bool {
	if !c.closed {
		c.closed = true
		a := c.a
		evicted := a.evicting && !(c.halfClosed[0] && c.halfClosed[1])
		switch {
		case evicted:
			a.stats.Evicted++
		case a.flushing && !(c.halfClosed[0] && c.halfClosed[1]):
			a.stats.IdleClosed++
		}
		if a.ev != nil {
			a.ev.closeConn(c.ev)
		}
		if e, ok := c.s.(Evicter); ok && evicted {
			e.Evict(c.last)
		} else if c.s != nil {
			c.s.Close(c.last)
		}
	}
	// Stay in the pool until idle: late packets of the connection (the last
	// ACK) must not look like a new one; a new SYN replaces it.
	return false
}
