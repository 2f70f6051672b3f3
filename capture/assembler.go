package capture

import (
	"encoding/binary"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/reassembly"
)

// Defaults of AssemblerOptions.
const (
	DefaultIdleTimeout   = 2 * time.Minute
	DefaultFlushInterval = time.Second
	// DefaultMaxBufferedPagesPerConnection bounds out-of-order data waiting
	// for a hole to be filled, per connection (pages of 1900 bytes: ~7.6 MB).
	DefaultMaxBufferedPagesPerConnection = 4096
	// DefaultMaxBufferedPagesTotal bounds it over all connections (~30 MB).
	DefaultMaxBufferedPagesTotal = 16384
	// DefaultMaxConnections bounds the connections open at once
	// (AssemblerOptions.MaxConnections): some 2 KB each with decode's
	// state, 32 MB in all.
	DefaultMaxConnections = 16384
)

// AssemblerOptions tunes an Assembler; zero fields take the defaults.
type AssemblerOptions struct {
	// IdleTimeout: out-of-order data that waited this long (packet time)
	// for a hole to be filled is delivered after a Gap, and connections
	// without a packet for this long are closed.
	IdleTimeout time.Duration
	// FlushInterval is how often, in packet time, the Assembler looks for
	// such data and connections.
	FlushInterval time.Duration
	// MaxBufferedPagesPerConnection and MaxBufferedPagesTotal bound the
	// out-of-order data held; past them the oldest hole is skipped (a Gap).
	MaxBufferedPagesPerConnection int
	MaxBufferedPagesTotal         int
	// MaxConnections bounds the connections held at once (conns.go):
	// beyond it the quarter least recently active are closed at once,
	// counted in Stats.Evicted, their Streams told Evict (an Evicter) or
	// else Close. Zero takes DefaultMaxConnections.
	MaxConnections int
	// ReorderWindow and ReorderPackets bound how long a segment that
	// came ahead of its stream waits for the one before it to come late,
	// reordered as on a SPAN port, before the hole is taken as lost
	// (reorder.go): capture time from that segment, and packets of the
	// connection. Zero takes DefaultReorderWindow and
	// DefaultReorderPackets; a negative value opens no window.
	ReorderWindow  time.Duration
	ReorderPackets int
	// Evidence, when not nil, is given a copy of every packet of every TCP
	// connection not ignored, for Evidence.WritePcap. nil costs nothing.
	Evidence *Evidence
	// ExternalFlush: Add and Tick do none of the time-driven work; the
	// caller calls Flush when a FlushGate over every packet says it is due.
	// Assemblers sharing one capture by connection (see FlowHasher) then
	// do it at the same points of the capture as a single one would.
	ExternalFlush bool
}

// Stats counts what an Assembler saw.
type Stats struct {
	Packets        int64 // packets given to Add
	Bytes          int64 // their captured bytes
	NonTCP         int64 // well-formed packets that are not TCP (ARP, UDP, fragments, ...)
	Undecodable    int64 // packets that could not be decoded, or of an unsupported link type
	TCPConnections int64 // connections seen (NewStreamFunc calls), ignored ones included
	Gaps           int64 // holes reported with Stream.Gap
	GapBytes       int64 // bytes those holes missed

	TCPPackets      int64 // TCP segments
	PayloadBytes    int64 // TCP payload bytes captured
	DeliveredBytes  int64 // bytes handed to Stream.Data
	Truncated       int64 // segments cut by the snap length
	Retransmissions int64 // segments whose payload had all been delivered already
	OverlapBytes    int64 // payload bytes dropped because they were delivered or queued already
	IdleClosed      int64 // connections closed after IdleTimeout without a packet, not by FIN or RST
	Evicted         int64 // connections closed early because MaxConnections were held

	// Reorder windows (AssemblerOptions.ReorderWindow): ReorderHolds
	// counts those opened by a segment ahead of its stream, Reordered
	// those closed with the late segment delivered in place,
	// ReorderGivenUp those that ran out (the hole then taken as lost).
	ReorderHolds   int64
	Reordered      int64
	ReorderGivenUp int64

	// Packets cut short by the snap length (captured length below the
	// original one): SnapCut counts them, SnapCutBytes the bytes they
	// lost, SnapLen is the largest captured length among them (the snap
	// length the capture was taken with; the largest, not a sum, in Add).
	SnapCut      int64
	SnapCutBytes int64
	SnapLen      int64
	// Oversized counts the packets over MaxPacketBytes a Source skipped
	// unread (see Source.Next), OversizedBytes their captured bytes.
	Oversized      int64
	OversizedBytes int64

	Evidence EvidenceStats // of AssemblerOptions.Evidence; zero without one
}

// Assembler decodes packets and reassembles the TCP connections in them,
// handing each connection's bytes, in order and once, to the Stream that
// NewStreamFunc returned for it. Time is packet time throughout: no clock is
// read.
//
// An Assembler is not safe for concurrent use.
type Assembler struct {
	opts      AssemblerOptions
	newStream NewStreamFunc
	ev        *Evidence // nil: off
	// evPacket is the packet being added, handed to ev by the conn it goes
	// to while evPending.
	evPacket  Packet
	evPending bool
	dec       *decoder
	asm       *reassembly.Assembler
	stats     Stats

	ctx        *packetContext // context of the packet being added
	ctxQueued  bool           // ctx is held by queued data: use a new one next
	gate       FlushGate
	flushing   bool // in a time-driven flush: connections closed are idle
	missing    int  // truncated payload bytes of the packet being added
	synthetic  bool // the segment being assembled is a made-up RST
	pendingRST *conn
	rstDir     int   // direction of pendingRST's RST
	restart    bool  // the segment being assembled is a SYN opening a new connection on a 4-tuple still open
	cur        *conn // the connection of the segment being assembled
	rst        layers.TCP
	rstHeader  [20]byte

	// An acknowledged hole to fill before the packet is assembled again
	// (see conn.ackedHole): its connection, first sequence number and size.
	fillConn *conn
	fillSeq  reassembly.Sequence
	fillLen  int
	filling  bool // the segment being assembled is the made-up filler
	refilled bool // the packet is assembled again after a fill
	zeros    []byte
	offs     []int // reused by conn.boundaries

	// Reorder windows (reorder.go): the connections with one open, in
	// the order they opened, and the bytes kept aside.
	holding   []*conn
	heldBytes int
	frame     []byte          // the frame being assembled, for conn.keep
	link      layers.LinkType // and its link type
	// live are the connections in reassembly's pool, as far as conns.go
	// can tell; evictDue says they are over MaxConnections, evicting that
	// a flush is closing some of them for it; times is scratch for evict.
	live     []*conn
	evictDue bool
	evicting bool
	times    []int64
	// release is a connection whose window must close before the packet
	// is assembled again; check one whose kept packets may go now that
	// the packet went in; replaying one whose kept packets are going in.
	release, check, replaying *conn

	// The fast path's (fastpath.go): the connections by 4-tuple, those
	// with segments reassembly did not see since the last flush, and the
	// made-up segment that gives it their time (touching while it goes
	// in). noFast turns the fast path off (for tests comparing the two).
	byKey       map[connKey]*conn
	lastConn    *conn // the last byKey gave
	touches     []*conn
	touching    bool
	touchTCP    layers.TCP
	touchHeader [20]byte
	noFast      bool
	// fastSegments counts the segments that took the fast path.
	fastSegments int
}

// NewAssembler returns an Assembler calling newStream for every connection.
func NewAssembler(newStream NewStreamFunc, opts AssemblerOptions) *Assembler {
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.MaxBufferedPagesPerConnection <= 0 {
		opts.MaxBufferedPagesPerConnection = DefaultMaxBufferedPagesPerConnection
	}
	if opts.MaxBufferedPagesTotal <= 0 {
		opts.MaxBufferedPagesTotal = DefaultMaxBufferedPagesTotal
	}
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = DefaultMaxConnections
	}
	if opts.ReorderWindow == 0 {
		opts.ReorderWindow = DefaultReorderWindow
	}
	if opts.ReorderPackets == 0 {
		opts.ReorderPackets = DefaultReorderPackets
	}
	a := &Assembler{
		opts:      opts,
		newStream: newStream,
		ev:        opts.Evidence,
		dec:       newDecoder(),
		ctx:       new(packetContext),
		gate:      NewFlushGate(opts),
	}
	a.asm = reassembly.NewAssembler(reassembly.NewStreamPool(factory{a}))
	a.asm.MaxBufferedPagesPerConnection = opts.MaxBufferedPagesPerConnection
	a.asm.MaxBufferedPagesTotal = opts.MaxBufferedPagesTotal
	return a
}

// Add decodes one packet and feeds it to reassembly. Bad or non-TCP packets
// are counted and skipped. p.Data is not kept after Add returns. Streams are
// called from within Add.
func (a *Assembler) Add(p Packet) {
	a.stats.Packets++
	a.stats.Bytes += int64(len(p.Data))
	ts := p.CI.Timestamp
	if !a.opts.ExternalFlush {
		a.flush(ts)
	}
	if n := p.CI.Length; n > len(p.Data) {
		if n > MaxPacketBytes {
			// Skipped unread by the Source (or past the bound anyway).
			a.stats.Oversized++
			a.stats.OversizedBytes += int64(n)
			if len(p.Data) == 0 {
				return
			}
		} else {
			a.stats.SnapCut++
			a.stats.SnapCutBytes += int64(n - len(p.Data))
			a.stats.SnapLen = max(a.stats.SnapLen, int64(len(p.Data)))
		}
	}
	switch a.dec.decodeHead(p.LinkType, p.Data) {
	case decodedNone:
		a.stats.NonTCP++
		return
	case decodedBad:
		a.stats.Undecodable++
		return
	}
	tcp := &a.dec.tcp
	if a.ev != nil {
		a.evPacket, a.evPending = p, true
	}
	a.stats.TCPPackets++
	a.stats.PayloadBytes += int64(len(tcp.Payload))
	if a.dec.missing > 0 {
		a.stats.Truncated++
	}
	if !a.fast(&p) {
		a.dec.fullTCP() // reassembly reads the options and TransportFlow
		a.assemble(p)
	}
	if a.ev != nil {
		a.ev.done()
		a.evPacket, a.evPending = Packet{}, false
	}
	if a.evictDue {
		a.evict()
	}
}

// assemble feeds the segment a.dec decoded from p to reassembly, with what
// it asks for: a hole filled first, a hold given up first, a connection
// ended or restarted.
func (a *Assembler) assemble(p Packet) {
	tcp := &a.dec.tcp
	for {
		a.frame, a.link = p.Data, p.LinkType
		a.missing = a.dec.missing
		if a.ctxQueued {
			a.ctx, a.ctxQueued = new(packetContext), false
		}
		a.ctx.ci = p.CI
		a.ctx.ci.AncillaryData = nil
		a.asm.AssembleWithContext(a.dec.netFlow, tcp, a.ctx)
		a.cur = nil
		c := a.release
		if c == nil {
			break
		}
		// The connection's reorder window ran out at this packet: the
		// packets kept aside go in, then this one again (decoded again:
		// the kept ones were decoded over it).
		a.release, a.check = nil, nil
		a.closeHold(c, true)
		a.dec.decode(p.LinkType, p.Data)
	}
	if a.fillConn != nil {
		// The packet acknowledged bytes of the other direction that the
		// capture lost: fill the hole (reported as a Gap), then assemble
		// the packet again.
		a.fillHole(a.dec.netFlow.Reverse(), tcp.DstPort, tcp.SrcPort)
		a.refilled = true
		a.asm.AssembleWithContext(a.dec.netFlow, tcp, a.ctx)
		a.cur, a.refilled = nil, false
	}
	switch {
	case a.restart:
		// A SYN with a new sequence number on a connection whose end the
		// capture missed: end the old connection in both directions, then
		// the SYN opens a new one.
		a.restart = false
		a.synthRST(a.dec.netFlow, tcp.SrcPort, tcp.DstPort)
		a.synthRST(a.dec.netFlow.Reverse(), tcp.DstPort, tcp.SrcPort)
		a.asm.AssembleWithContext(a.dec.netFlow, tcp, a.ctx)
		a.cur, a.pendingRST, a.restart = nil, nil, false
	case a.pendingRST != nil:
		// An RST ends both directions, but reassembly closes only the one
		// that sent it: close the other with a made-up RST at its next
		// sequence number, so that both halves are closed and the 4-tuple
		// can be reused by a new connection.
		// Data of the other direction waiting behind a hole would be
		// dropped with it: fill the hole first (a Gap), so that they are
		// delivered before Close.
		c, r := a.pendingRST, 1-a.rstDir
		a.pendingRST = nil
		if c.hasNext[r] && c.hasAhead[r] && c.askFill(r, c.ahead[r]) {
			a.fillHole(a.dec.netFlow.Reverse(), tcp.DstPort, tcp.SrcPort)
		}
		a.synthRST(a.dec.netFlow.Reverse(), tcp.DstPort, tcp.SrcPort)
	}
	if c := a.check; c != nil {
		// A packet went in during a reorder window: kept packets may
		// follow it now.
		a.check = nil
		if c.hold.on {
			a.drain(c)
		}
	}
}

// synthRST assembles a made-up RST on a flow; the conn receiving it moves it
// to the next sequence number expected.
func (a *Assembler) synthRST(netFlow gopacket.Flow, src, dst layers.TCPPort) {
	if !madeUp(&a.rst, &a.rstHeader, src, dst, 0x04) { // RST
		return
	}
	a.synthetic = true
	a.asm.AssembleWithContext(netFlow, &a.rst, a.ctx)
	a.synthetic, a.cur = false, nil
}

// madeUp decodes into tcp a segment from src to dst with flags and no
// byte, its header written in h (TCP.TransportFlow uses the ports seen by
// DecodeFromBytes, so the segment is decoded, not filled in).
func madeUp(tcp *layers.TCP, h *[20]byte, src, dst layers.TCPPort, flags byte) bool {
	clear(h[:])
	binary.BigEndian.PutUint16(h[0:], uint16(src))
	binary.BigEndian.PutUint16(h[2:], uint16(dst))
	h[12] = 5 << 4 // data offset
	h[13] = flags
	return tcp.DecodeFromBytes(h[:], gopacket.NilDecodeFeedback) == nil
}

// Tick does the time-driven work of Add when no packet comes: given the
// wall clock, in live capture, it delivers data that waited IdleTimeout for
// a hole (after a Gap), closes connections idle for IdleTimeout and expires
// the Evidence of connections closed for its Retain period. It does nothing
// until FlushInterval passed since the last such work, by packet time or
// Tick time, so it may be called often. Streams are called from within
// Tick.
func (a *Assembler) Tick(now time.Time) {
	if !a.opts.ExternalFlush {
		a.flush(now)
	}
}

// flush delivers data stuck behind holes, closes idle connections and
// expires evidence, once per FlushInterval of packet (or Tick) time.
func (a *Assembler) flush(ts time.Time) {
	if a.gate.Due(ts) {
		a.Flush(ts)
	}
}

// Flush does the time-driven work now, whatever the time of the last: it
// delivers data that waited IdleTimeout for a hole (after a Gap), closes
// connections idle for IdleTimeout and expires Evidence. With
// ExternalFlush, the caller calls it where a FlushGate says; otherwise Add
// and Tick do. Streams are called from within Flush.
func (a *Assembler) Flush(ts time.Time) {
	a.touch()
	a.expireHolds(ts)
	cutoff := ts.Add(-a.opts.IdleTimeout)
	a.flushing = true
	a.asm.FlushWithOptions(reassembly.FlushOptions{T: cutoff, TC: cutoff})
	a.flushing = false
	a.prune(cutoff)
	if a.ev != nil {
		a.ev.expire(ts)
	}
}

// Close delivers all data still held (after Gaps for the holes) and calls
// Close on every Stream not closed yet. The Assembler must not be used after.
func (a *Assembler) Close() {
	a.releaseAll()
	a.asm.FlushAll()
}

// Stats returns the counters so far.
func (a *Assembler) Stats() Stats {
	s := a.stats
	if a.ev != nil {
		s.Evidence = a.ev.Stats()
	}
	return s
}
