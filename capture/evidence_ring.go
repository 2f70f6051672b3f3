package capture

import (
	"container/heap"
	"encoding/binary"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// How Evidence holds packets. Each connection's packets are a byte ring: a
// header (evHeaderLen bytes) then the captured bytes, one packet after the
// other at increasing positions, laid over fixed-size slabs taken from a
// pool shared by all connections. Dropping a connection's oldest packet
// moves its head on and gives back the slabs left behind; a packet may
// straddle slabs, so a slab is never wasted but at the ends of a ring.
// Headers carry a global sequence number: a heap of the connections holding
// packets, by the sequence number of their oldest one, says whose packet to
// drop when the pool is exhausted, oldest first over all connections.

// evHeaderLen is the size of the header held before every packet: sequence
// number (8), seconds (8), nanoseconds (4), capture length (4), length (4),
// link type (2).
const evHeaderLen = 30

type evHeader struct {
	seq     uint64
	ts      time.Time
	capLen  uint32
	origLen uint32
	link    layers.LinkType
}

// evConn is the packets held of one 4-tuple.
type evConn struct {
	key connKey
	// slabs[i] holds the positions [base+i*slabSize, base+(i+1)*slabSize);
	// the packets held are at [head, tail).
	slabs            [][]byte
	base, head, tail int64
	// connStart is the tail when the connection in progress opened: what
	// an ignored connection drops.
	connStart int64
	headSeq   uint64 // sequence number of the packet at head
	idx       int    // in Evidence.heap; -1 when holding nothing
	lastSeen  time.Time
	// evictedTo is the time of the newest packet dropped by a bound.
	evictedTo  time.Time
	hasEvicted bool
	link       layers.LinkType // of the last packet recorded
	hasLink    bool
	ignored    bool // the connection in progress is ignored: record nothing
	closed     bool // Retain runs from lastSeen
	dead       bool // expired: no longer in Evidence.conns
}

// put appends a packet to c, dropping the oldest packets held past the
// bounds.
func (e *Evidence) put(c *evConn, p Packet) {
	n := int64(evHeaderLen + len(p.Data))
	ts := p.CI.Timestamp
	// While it is written, c may hold a slab more than the packet needs.
	if n > int64(e.opts.PerConnBytes) || n > int64(e.maxSlabs-2)*e.slabSize {
		// A packet that can never be held: what is held of c now lies
		// before a hole, and evidence is the newest packets or none.
		e.dropAll(c)
		e.dropped(c, len(p.Data), ts)
		return
	}
	for c.head < c.tail && c.tail-c.head+n > int64(e.opts.PerConnBytes) {
		e.dropOldest(c)
	}
	e.writing = c
	for c.base+int64(len(c.slabs))*e.slabSize < c.tail+n {
		s := e.slab()
		if s == nil {
			e.writing = nil
			e.truncate(c, c.tail)
			e.dropAll(c)
			e.dropped(c, len(p.Data), ts)
			return
		}
		c.slabs = append(c.slabs, s)
	}
	e.writing = nil
	e.seq++
	var h [evHeaderLen]byte
	binary.LittleEndian.PutUint64(h[0:], e.seq)
	binary.LittleEndian.PutUint64(h[8:], uint64(ts.Unix()))
	binary.LittleEndian.PutUint32(h[16:], uint32(ts.Nanosecond()))
	binary.LittleEndian.PutUint32(h[20:], uint32(len(p.Data)))
	binary.LittleEndian.PutUint32(h[24:], uint32(max(p.CI.Length, len(p.Data))))
	binary.LittleEndian.PutUint16(h[28:], uint16(p.LinkType))
	c.copyIn(e.slabSize, c.tail, h[:])
	c.copyIn(e.slabSize, c.tail+evHeaderLen, p.Data)
	c.tail += n
	c.link, c.hasLink = p.LinkType, true
	if c.idx < 0 {
		c.headSeq = e.seq
		heap.Push(&e.heap, c)
	}
	e.stats.Packets++
	e.stats.Bytes += int64(len(p.Data))
}

// dropOldest drops the oldest packet of c to make room.
func (e *Evidence) dropOldest(c *evConn) {
	n, ts := e.dropHead(c)
	e.dropped(c, n, ts)
}

// dropped counts a packet of c dropped by a bound.
func (e *Evidence) dropped(c *evConn, n int, ts time.Time) {
	e.stats.DroppedPackets++
	e.stats.DroppedBytes += int64(n)
	if !c.hasEvicted || ts.After(c.evictedTo) {
		c.evictedTo, c.hasEvicted = ts, true
	}
}

// slab returns a free slab, dropping the oldest packets of all connections
// when the pool is exhausted; nil if none can be freed.
func (e *Evidence) slab() []byte {
	for len(e.free) == 0 && e.slabs >= e.maxSlabs {
		if len(e.heap) == 0 {
			return nil
		}
		c := e.heap[0]
		e.dropOldest(c)
	}
	if n := len(e.free); n > 0 {
		s := e.free[n-1]
		e.free[n-1] = nil
		e.free = e.free[:n-1]
		return s
	}
	e.slabs++
	return make([]byte, e.slabSize)
}

// dropHead drops the oldest packet of c and returns its captured length and
// time.
func (e *Evidence) dropHead(c *evConn) (int, time.Time) {
	var h evHeader
	e.header(c, c.head, &h)
	c.head += evHeaderLen + int64(h.capLen)
	for len(c.slabs) > 0 && c.head >= c.base+e.slabSize {
		// Slicing off the front, not copying the rest down: append
		// packs the live slabs when it next grows the slice, so a busy
		// connection at its bound pays O(1) per slab, not O(slabs).
		e.free = append(e.free, c.slabs[0])
		c.slabs[0] = nil
		c.slabs = c.slabs[1:]
		c.base += e.slabSize
	}
	if c.head == c.tail {
		heap.Remove(&e.heap, c.idx)
		if c != e.writing {
			e.release(c)
		}
	} else {
		var next evHeader
		e.header(c, c.head, &next)
		c.headSeq = next.seq
		heap.Fix(&e.heap, c.idx)
	}
	return int(h.capLen), h.ts
}

// dropAll drops every packet c holds, oldest first, as the bounds do.
func (e *Evidence) dropAll(c *evConn) {
	for c.head < c.tail {
		e.dropOldest(c)
	}
}

// truncate drops the packets of c from position to on (the newest ones).
func (e *Evidence) truncate(c *evConn, to int64) {
	to = max(to, c.head)
	if to < c.tail {
		c.tail = to
	}
	for n := len(c.slabs); n > 0 && c.base+int64(n-1)*e.slabSize >= c.tail; n-- {
		e.free = append(e.free, c.slabs[n-1])
		c.slabs[n-1] = nil
		c.slabs = c.slabs[:n-1]
	}
	c.connStart = min(c.connStart, c.tail)
	if c.head == c.tail {
		if c.idx >= 0 {
			heap.Remove(&e.heap, c.idx)
		}
		e.release(c)
	}
}

// release gives back the slabs of c, which holds no packet.
func (e *Evidence) release(c *evConn) {
	for i, s := range c.slabs {
		e.free = append(e.free, s)
		c.slabs[i] = nil
	}
	c.slabs = c.slabs[:0]
	c.base = c.tail
}

// header reads the header of the packet at pos.
func (e *Evidence) header(c *evConn, pos int64, h *evHeader) {
	var b [evHeaderLen]byte
	c.copyOut(e.slabSize, pos, b[:])
	h.seq = binary.LittleEndian.Uint64(b[0:])
	h.ts = time.Unix(int64(binary.LittleEndian.Uint64(b[8:])), int64(binary.LittleEndian.Uint32(b[16:]))).UTC()
	h.capLen = binary.LittleEndian.Uint32(b[20:])
	h.origLen = binary.LittleEndian.Uint32(b[24:])
	h.link = layers.LinkType(binary.LittleEndian.Uint16(b[28:]))
}

// copyIn writes b at position pos of c's ring.
func (c *evConn) copyIn(slabSize, pos int64, b []byte) {
	for len(b) > 0 {
		off := pos - c.base
		n := copy(c.slabs[off/slabSize][off%slabSize:], b)
		b, pos = b[n:], pos+int64(n)
	}
}

// copyOut reads len(b) bytes at position pos of c's ring.
func (c *evConn) copyOut(slabSize, pos int64, b []byte) {
	for len(b) > 0 {
		off := pos - c.base
		n := copy(b, c.slabs[off/slabSize][off%slabSize:])
		b, pos = b[n:], pos+int64(n)
	}
}

// evHeap orders the connections holding packets by their oldest packet.
type evHeap []*evConn

func (h evHeap) Len() int           { return len(h) }
func (h evHeap) Less(i, j int) bool { return h[i].headSeq < h[j].headSeq }
func (h evHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}

func (h *evHeap) Push(x any) {
	c := x.(*evConn)
	c.idx = len(*h)
	*h = append(*h, c)
}

func (h *evHeap) Pop() any {
	old := *h
	n := len(old)
	c := old[n-1]
	old[n-1] = nil
	c.idx = -1
	*h = old[:n-1]
	return c
}
