package capture

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Defaults of EvidenceOptions.
const (
	DefaultEvidencePerConnBytes = 8 << 20
	DefaultEvidenceTotalBytes   = 256 << 20
	DefaultEvidenceRetain       = 10 * time.Minute
)

// ErrEvidenceEvicted is wrapped by the error of [Evidence.WritePcap] when
// packets of the requested connection and time range may no longer be held
// (dropped by a bound, expired, or never held): what is still held was
// written, and the evidence is partial.
var ErrEvidenceEvicted = errors.New("evidence evicted")

// EvidenceOptions bounds an Evidence; zero fields take the defaults.
type EvidenceOptions struct {
	// PerConnBytes bounds the packets held per connection (their captured
	// bytes plus a 30 byte header each); past it the connection's oldest
	// packets are dropped.
	PerConnBytes int
	// TotalBytes bounds the memory holding packets of all connections;
	// past it the oldest packets of all connections are dropped.
	TotalBytes int
	// Retain is how long after a connection's last packet (packet time, or
	// the time given to Assembler.Tick) its packets are kept once the
	// connection is closed.
	Retain time.Duration
}

// EvidenceStats counts what an Evidence held and dropped.
type EvidenceStats struct {
	Packets        int64 // packets recorded
	Bytes          int64 // their captured bytes
	DroppedPackets int64 // packets dropped by PerConnBytes or TotalBytes (or larger than either)
	DroppedBytes   int64 // their captured bytes
	ExpiredPackets int64 // packets dropped Retain after their connection closed
	ExpiredBytes   int64 // their captured bytes
	Connections    int   // connections holding packets now
	HeldBytes      int64 // memory holding packets now
}

// Evidence keeps a bounded rolling buffer of the recent raw packets of every
// TCP connection an Assembler reassembles (see AssemblerOptions.Evidence),
// so that the packets behind a finding can be written to a pcap with
// WritePcap. Connections the Assembler was told to ignore (NewStreamFunc
// returned nil, or Stream.Data returned false) are not kept. The packets of
// a 4-tuple reused by a new connection are kept together.
//
// Packet bytes are copied into pooled slabs, so recording a packet allocates
// nothing in the steady state.
//
// An Evidence serves one Assembler and, like it, is not safe for concurrent
// use: call WritePcap and Stats on the goroutine that calls Add and Tick
// (from within a Stream method too), or hold a lock around all of them.
type Evidence struct {
	opts     EvidenceOptions
	slabSize int64
	maxSlabs int

	conns map[connKey]*evConn
	heap  evHeap // entries holding packets, oldest first
	free  [][]byte
	slabs int // allocated
	seq   uint64
	stats EvidenceStats
	// writing is the entry a packet is being written to: not released
	// when the pool takes its packets to make room for the new one.
	writing *evConn

	// The entry the packet being added was offered to, its tail before,
	// and whether the packet was written.
	cur        *evConn
	curTail    int64
	curWritten bool
}

// NewEvidence returns an Evidence bounded by opts.
func NewEvidence(opts EvidenceOptions) *Evidence {
	if opts.PerConnBytes <= 0 {
		opts.PerConnBytes = DefaultEvidencePerConnBytes
	}
	if opts.TotalBytes <= 0 {
		opts.TotalBytes = DefaultEvidenceTotalBytes
	}
	if opts.Retain <= 0 {
		opts.Retain = DefaultEvidenceRetain
	}
	// Slabs of 16 KiB, smaller when the bound holds fewer than 64 of them.
	s := int64(16 << 10)
	for s > 512 && s*64 > int64(opts.TotalBytes) {
		s /= 2
	}
	return &Evidence{
		opts:     opts,
		slabSize: s,
		maxSlabs: int(int64(opts.TotalBytes) / s),
		conns:    make(map[connKey]*evConn),
	}
}

// connKey names a connection by its two endpoints, in a fixed order.
type connKey struct{ lo, hi netip.AddrPort }

func keyOf(a, b netip.AddrPort) connKey {
	if a.Compare(b) > 0 {
		a, b = b, a
	}
	return connKey{a, b}
}

// entry returns the entry of k, making one if there is none.
func (e *Evidence) entry(k connKey, closed bool) *evConn {
	c := e.conns[k]
	if c == nil {
		c = &evConn{key: k, idx: -1, closed: closed}
		e.conns[k] = c
	}
	return c
}

// record holds the packet being added, of connection k, unless its
// connection is ignored; c is the entry its conn was given (nil or expired:
// found again by k). It returns the entry used. The Assembler calls it
// before the packet's bytes are delivered, so that a finding decided on them
// finds the packet held.
func (e *Evidence) record(c *evConn, k connKey, p Packet) *evConn {
	if c == nil || c.dead {
		// Closed until the Assembler opens it: the late packets of a
		// connection whose packets expired expire like a closed one.
		c = e.entry(k, true)
	}
	if p.CI.Timestamp.After(c.lastSeen) {
		c.lastSeen = p.CI.Timestamp
	}
	e.cur, e.curTail, e.curWritten = c, c.tail, false
	if !c.ignored {
		e.put(c, p)
		e.curWritten = true
	}
	return c
}

// done ends the packet being added.
func (e *Evidence) done() {
	e.cur, e.curWritten = nil, false
}

// open is called when the Assembler starts a connection, on the packet
// being added: its packets are kept from now on unless it is ignored. It
// returns the connection's entry, and whether the packet, offered to the
// entry while it was ignored, must be offered again.
func (e *Evidence) open(k connKey, ignored bool) (c *evConn, again bool) {
	c = e.entry(k, false)
	c.closed, c.ignored = false, ignored
	c.connStart = c.tail
	if c != e.cur {
		return c, false
	}
	switch {
	case e.curWritten && ignored:
		// A SYN on a 4-tuple whose old connection was kept.
		e.truncate(c, e.curTail)
		e.curWritten = false
	case e.curWritten:
		c.connStart = e.curTail
	case !ignored:
		return c, true
	}
	return c, false
}

// ignore drops the packets of a connection the Stream refused and keeps
// none of its later packets; those of an earlier connection on the same
// 4-tuple are kept.
func (e *Evidence) ignore(c *evConn) {
	if c == nil || c.dead || c.ignored {
		return
	}
	c.ignored = true
	e.truncate(c, c.connStart)
}

// closeConn starts the Retain period of a connection.
func (e *Evidence) closeConn(c *evConn) {
	if c != nil {
		c.closed = true
	}
}

// expire drops the packets of connections closed for more than Retain.
func (e *Evidence) expire(now time.Time) {
	cutoff := now.Add(-e.opts.Retain)
	for k, c := range e.conns {
		if !c.closed || !c.lastSeen.Before(cutoff) {
			continue
		}
		for c.head < c.tail {
			n, _ := e.dropHead(c)
			e.stats.ExpiredPackets++
			e.stats.ExpiredBytes += int64(n)
		}
		delete(e.conns, k)
		c.dead = true
	}
}

// Stats returns the counters so far.
func (e *Evidence) Stats() EvidenceStats {
	s := e.stats
	s.Connections = len(e.heap)
	s.HeldBytes = int64(e.slabs-len(e.free)) * e.slabSize
	return s
}

// WritePcap writes the packets held of the connection between a and b (in
// either order), both directions, whose time is within [from, to], in
// capture order; a zero from or to leaves that end open. It returns how
// many packets it wrote.
//
// The output is a pcap file with nanosecond timestamps, or, when the
// packets were captured on links of different types (a pcapng input with
// several interfaces), a pcapng file with one interface per link type.
//
// When packets of the range may have been dropped already, what is held is
// written and the error wraps ErrEvidenceEvicted; any other error is the
// writer's.
func (e *Evidence) WritePcap(w io.Writer, a, b netip.AddrPort, from, to time.Time) (packets int, err error) {
	return e.WritePcapConns(w, []Endpoints{{a, b}}, from, to)
}

// Endpoints names a TCP connection by its two ends, in either order.
type Endpoints struct{ A, B netip.AddrPort }

// WritePcapConns is WritePcap for several connections at once: the packets
// of all of them within [from, to], merged by time (capture order within a
// connection), in one file. A finding whose attempts went out on several
// connections (a client that re-sent on a new one) gets one pcap that
// analyze turns back into that finding. The error wraps ErrEvidenceEvicted
// when any connection's packets in the range may have been dropped.
func (e *Evidence) WritePcapConns(w io.Writer, conns []Endpoints, from, to time.Time) (packets int, err error) {
	spans := make([]ConnSpan, len(conns))
	for i, ends := range conns {
		spans[i] = ConnSpan{A: ends.A, B: ends.B, From: from, To: to}
	}
	return e.WritePcapSpans(w, spans)
}

// WritePcapSpans is WritePcapConns with a time span of its own for each
// connection, or several (spans of one connection must not overlap): the
// packets each span selects, merged by time, in one file. An evidence
// writer leaves out a connection's SASL authentication this way.
func (e *Evidence) WritePcapSpans(w io.Writer, spans []ConnSpan) (packets int, err error) {
	var (
		pkts     []heldPacket
		buf      []byte
		partials []error
		link     = layers.LinkTypeEthernet
		linkSet  bool
	)
	for _, sp := range spans {
		a, b, from, to := sp.A, sp.B, sp.From, sp.To
		c := e.conns[keyOf(a, b)]
		if c == nil || (c.head == c.tail && !c.hasEvicted) {
			partials = append(partials, fmt.Errorf("capture: no packets held for %v<->%v: %w", a, b, ErrEvidenceEvicted))
			continue
		}
		cp, cb := e.collect(c, from, to)
		for i := range cp {
			cp[i].off += len(buf)
		}
		pkts, buf = append(pkts, cp...), append(buf, cb...)
		if c.hasEvicted && (from.IsZero() || !c.evictedTo.Before(from)) {
			partials = append(partials, fmt.Errorf("capture: packets of %v<->%v up to %s were dropped: %w",
				a, b, c.evictedTo.UTC().Format(time.RFC3339Nano), ErrEvidenceEvicted))
		}
		if c.hasLink && !linkSet {
			link, linkSet = c.link, true
		}
	}
	if len(spans) > 1 {
		slices.SortStableFunc(pkts, func(x, y heldPacket) int { return x.ci.Timestamp.Compare(y.ci.Timestamp) })
	}
	if err := writeHeld(w, pkts, buf, link); err != nil {
		return 0, fmt.Errorf("capture: writing evidence: %w", err)
	}
	return len(pkts), errors.Join(partials...)
}

// heldPacket is a packet copied out by collect: its data is
// buf[off:off+CI.CaptureLength].
type heldPacket struct {
	ci   gopacket.CaptureInfo
	link layers.LinkType
	off  int
}

// collect copies out the packets of c within [from, to].
func (e *Evidence) collect(c *evConn, from, to time.Time) ([]heldPacket, []byte) {
	var (
		pkts []heldPacket
		buf  []byte
		h    evHeader
	)
	for pos := c.head; pos < c.tail; {
		e.header(c, pos, &h)
		data := pos + evHeaderLen
		pos = data + int64(h.capLen)
		if (!from.IsZero() && h.ts.Before(from)) || (!to.IsZero() && h.ts.After(to)) {
			continue
		}
		off := len(buf)
		buf = append(buf, make([]byte, h.capLen)...)
		c.copyOut(e.slabSize, data, buf[off:])
		pkts = append(pkts, heldPacket{
			ci:   gopacket.CaptureInfo{Timestamp: h.ts, CaptureLength: int(h.capLen), Length: int(h.origLen)},
			link: h.link,
			off:  off,
		})
	}
	return pkts, buf
}

// writeHeld writes packets as a pcap, or as a pcapng when their link types
// differ; link is the pcap's link type when there is no packet.
func writeHeld(w io.Writer, pkts []heldPacket, buf []byte, link layers.LinkType) error {
	links := []layers.LinkType{link}
	snap := uint32(262144)
	for i, p := range pkts {
		if i == 0 {
			links[0] = p.link
		} else if !slices.Contains(links, p.link) {
			links = append(links, p.link)
		}
		snap = max(snap, uint32(p.ci.CaptureLength))
	}
	pw, err := newPacketWriter(w, links, snap, nil)
	if err != nil {
		return err
	}
	for _, p := range pkts {
		if _, err := pw.write(p.ci, buf[p.off:p.off+p.ci.CaptureLength], p.link); err != nil {
			return err
		}
	}
	return pw.flush()
}
