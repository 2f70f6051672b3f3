package capture

import (
	"slices"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/reassembly"
)

// Reordered segments. A capture taken on a SPAN port or over several NIC
// queues may show a segment after the one that followed it on the wire, and
// after the peer's acknowledgment of both: the hole it leaves looks lost,
// and, once the peer acknowledged it, is given up at once (hole.go), so the
// late segment would be dropped as a retransmission.
//
// So a segment that comes ahead of its direction's stream opens a reorder
// window on its connection (a hold): while it is open, a packet of the
// connection goes to reassembly only when it can follow on: it follows on
// its direction's stream (or repeats bytes of it), and its acknowledgment
// covers only bytes of the other direction delivered already. The others
// are kept aside (copied). After every packet that went in, the kept ones
// that now can follow on go too, the earliest captured first. So the late
// segment is delivered in place, and the bytes of both directions
// interleave as on the wire, holes in both directions included. When all
// went in, the window closes. When it runs out first, the kept packets go
// to reassembly in capture order, as if there had been no window: a hole
// acknowledged is a Gap at once, one not acknowledged waits for a
// retransmission.
//
// The window is ReorderWindow of capture time from the segment that came
// ahead, by the timestamps of its direction's packets (a capture that
// reorders may take the two directions on different ports or queues, and
// its timestamps need not increase), and ReorderPackets packets of the
// connection; with no such packet, it runs out at the first Flush a
// FlushInterval past it. It is checked at the connection's own packets and
// at Flush, so that Assemblers sharing a capture by connection decide as
// one would. What is kept is bounded per connection (maxHeldBytesPerConn)
// and per Assembler (maxHeldBytesTotal, so Assemblers sharing a capture
// may each keep that much); past them the window runs out at once.
//
// A window delays the connection's bytes, not those of others: a
// receiver that relates connections by the order of their bytes (a topic
// named on one connection, used on another) may see them in another order
// than with no reordering.

// Defaults of AssemblerOptions' reorder window.
const (
	// DefaultReorderWindow: reordering on a SPAN port or across the queues
	// of one NIC is microseconds; 10 ms is well past it, and short enough
	// that a hole really lost costs little waiting.
	DefaultReorderWindow = 10 * time.Millisecond
	// DefaultReorderPackets: packets of the connection, both directions.
	DefaultReorderPackets = 64
)

// Bounds on the packets kept aside while reorder windows are open.
const (
	maxHeldBytesPerConn = 4 << 20
	maxHeldBytesTotal   = 32 << 20
)

// hold is a connection's open reorder window and the packets kept aside.
type hold struct {
	on       bool
	dir      int       // of the segment that opened it
	deadline time.Time // capture time of that direction past which it ran out
	seen     int       // packets of the connection since it opened
	// pkts and buf hold the packets kept aside; when no window is open,
	// their room serves the next one. pkts[:first] have all been given to
	// reassembly.
	pkts  []keptPacket
	buf   []byte
	first int
}

// keptPacket is a packet kept aside: its frame is buf[off:off+n].
type keptPacket struct {
	off, n   int
	ci       gopacket.CaptureInfo
	link     layers.LinkType
	dir      int
	seq, ack uint32 // as on the wire
	hasACK   bool
	done     bool // given to reassembly
}

// reorderOn reports whether reorder windows are open at all.
func (a *Assembler) reorderOn() bool {
	return a.opts.ReorderWindow > 0 && a.opts.ReorderPackets > 0
}

// startHold opens a reorder window on c for the segment being assembled,
// of direction d, which came ahead of the stream, and keeps it aside. It
// reports false, opening none, when windows are off or the bounds leave no
// room.
func (c *conn) startHold(d int, tcp *layers.TCP, ci gopacket.CaptureInfo) bool {
	a := c.a
	if !a.reorderOn() || a.replaying != nil {
		return false
	}
	if c.hold == nil {
		c.hold = new(hold)
	}
	h := c.hold
	h.on, h.dir, h.deadline, h.seen = true, d, ci.Timestamp.Add(a.opts.ReorderWindow), 0
	h.pkts, h.buf, h.first = h.pkts[:0], h.buf[:0], 0
	if !c.keep(d, tcp.Seq+c.shift[d], tcp, ci) {
		h.on = false
		return false
	}
	a.holding = append(a.holding, c)
	a.stats.ReorderHolds++
	return true
}

// keep copies the packet being assembled (its frame a.frame, its capture
// info ci) aside, within the bounds; seq is its sequence number as on the
// wire.
func (c *conn) keep(d int, seq uint32, tcp *layers.TCP, ci gopacket.CaptureInfo) bool {
	a, h := c.a, c.hold
	n := len(a.frame)
	if len(h.buf)+n > maxHeldBytesPerConn || a.heldBytes+n > maxHeldBytesTotal {
		return false
	}
	h.pkts = append(h.pkts, keptPacket{off: len(h.buf), n: n, ci: ci, link: a.link,
		dir: d, seq: seq, ack: tcp.Ack, hasACK: tcp.ACK})
	h.buf = append(h.buf, a.frame...)
	a.heldBytes += n
	return true
}

// holdPacket takes a packet of direction d on a connection with a window
// open, and reports whether it goes on to reassembly now (see the comment
// at the top of the file); the others are kept aside. When the window ran
// out, or the packet cannot be kept, or it is an RST or SYN (which would
// end the connection with packets aside), Add is asked to close the window
// before the packet is assembled again.
func (c *conn) holdPacket(d int, tcp *layers.TCP, ci gopacket.CaptureInfo) bool {
	a, h := c.a, c.hold
	h.seen++
	ranOut := h.seen > a.opts.ReorderPackets || d == h.dir && ci.Timestamp.After(h.deadline) || tcp.RST || tcp.SYN
	if !ranOut && c.follows(d, tcp.Seq) && c.acked(d, tcp.ACK, tcp.Ack) {
		a.check = c
		return true // Accept sets c.last next
	}
	// Not assembled now: the packet's time counts at once, before kept
	// packets go in.
	if ci.Timestamp.After(c.last) {
		c.last = ci.Timestamp
	}
	if ranOut {
		a.release = c
		return false
	}
	if !c.keep(d, tcp.Seq, tcp, ci) {
		a.release = c
	}
	return false
}

// follows reports whether a segment of direction d at wire sequence number
// seq follows on its stream (or repeats bytes of it): reassembly takes it
// now.
func (c *conn) follows(d int, seq uint32) bool {
	if !c.hasNext[d] {
		return true
	}
	return c.next[d].Difference(reassembly.Sequence(seq-c.shift[d])) <= 0
}

// acked reports whether a packet of direction d acknowledges only bytes of
// the other direction delivered already.
func (c *conn) acked(d int, hasACK bool, ack uint32) bool {
	r := 1 - d
	if !hasACK || !c.hasNext[r] {
		return true
	}
	return c.next[r].Difference(reassembly.Sequence(ack-c.shift[r])) <= 0
}

// ready reports whether a kept packet can go to reassembly.
func (c *conn) ready(p *keptPacket) bool {
	return c.follows(p.dir, p.seq) && c.acked(p.dir, p.hasACK, p.ack)
}

// drain gives the kept packets that can go to reassembly to it, in the
// connection's order, and closes the window once none is left. Each look
// for the next starts after those given all before it (h.first), so that
// segments that come late in order are drained in one pass.
func (a *Assembler) drain(c *conn) {
	h := c.hold
	for h.on {
		for h.first < len(h.pkts) && h.pkts[h.first].done {
			h.first++
		}
		// The earliest captured of those that can go goes.
		next := -1
		for i := h.first; i < len(h.pkts); i++ {
			if p := &h.pkts[i]; !p.done && c.ready(p) {
				next = i
				break
			}
		}
		if next < 0 {
			if h.first == len(h.pkts) {
				a.stats.Reordered++
				a.closeHold(c, false)
			}
			return
		}
		p := &h.pkts[next]
		p.done = true
		a.heldBytes -= p.n
		a.replayKept(c, h.buf, *p)
	}
}

// replayKept gives one kept packet to reassembly.
func (a *Assembler) replayKept(c *conn, buf []byte, p keptPacket) {
	frame, link, replaying := a.frame, a.link, a.replaying
	a.replaying = c
	a.replay(Packet{Data: buf[p.off : p.off+p.n], CI: p.ci, LinkType: p.link})
	a.replaying = replaying
	a.frame, a.link = frame, link
}

// closeHold closes c's window; when it ran out (late), the packets still
// kept go to reassembly in capture order, as with no window.
func (a *Assembler) closeHold(c *conn, late bool) {
	h := c.hold
	if h == nil || !h.on {
		return
	}
	h.on = false
	if i := slices.Index(a.holding, c); i >= 0 {
		a.holding = slices.Delete(a.holding, i, i+1)
	}
	if late {
		// Nothing appends to h while it replays: the window is off, and
		// none opens on c while a.replaying is set (startHold).
		a.stats.ReorderGivenUp++
		for _, p := range h.pkts {
			if !p.done {
				a.heldBytes -= p.n
				a.replayKept(c, h.buf, p)
			}
		}
	}
	h.pkts, h.buf, h.first = h.pkts[:0], h.buf[:0], 0
	// Buffers grown for one window are let go: maxHeldBytesTotal bounds
	// what is held, not what a connection that once held much keeps.
	if cap(h.buf) > keepHoldBytes {
		h.pkts, h.buf = nil, nil
	}
}

// keepHoldBytes is the most a closed window's buffers keep for the next.
const keepHoldBytes = 64 << 10

// replay assembles a packet kept aside.
func (a *Assembler) replay(p Packet) {
	if a.dec.decode(p.LinkType, p.Data) != decodedTCP {
		return
	}
	a.assemble(p)
}

// expireHolds closes the windows that ran out by capture time ts, a
// FlushInterval after their deadline (see the comment at the top).
func (a *Assembler) expireHolds(ts time.Time) {
	for i := 0; i < len(a.holding); {
		c := a.holding[i]
		if !ts.After(c.hold.deadline.Add(a.opts.FlushInterval)) {
			i++
			continue
		}
		a.closeHold(c, true) // removes c from a.holding
	}
}

// releaseAll closes every window, at the end of the input.
func (a *Assembler) releaseAll() {
	for len(a.holding) > 0 {
		a.closeHold(a.holding[0], true)
	}
}
