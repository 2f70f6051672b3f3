package decode

import (
	"encoding/binary"
	"net/netip"
	"time"
)

// role is what a direction of a connection carries.
type role uint8

const (
	roleUnknown   role = iota // not decided yet (sniffing)
	roleRequests              // client to broker
	roleResponses             // broker to client
)

// direction is the framing state of one direction of a connection.
type direction struct {
	fromA bool
	role  role
	// synced: the next byte is a frame start (or continues buf's frame).
	synced bool
	// lost: bytes were dropped since the last sync, so the next sync is a
	// resync.
	lost bool
	// probing: unsynced, and buf holds a candidate frame start taken at
	// the beginning of a Data call, too short to judge yet; need is the
	// length at which to judge it again.
	probing bool
	need    int
	// marks are the offsets in buf, while probing, where a later Data call
	// began: segment boundaries, the next candidates when the first fails.
	marks []int
	// buf holds, when synced, the start of a frame whose end has not
	// arrived; when probing, the candidate. It is decode's own copy, grown
	// only by grow (buffer.go); held is its capacity as Decoder.held
	// counts it.
	buf  []byte
	held int
	// scan sums the batches of the request frame buf holds as it comes
	// (scan.go); nil until a request frame large enough to scan comes in
	// segments, so that the many connections that send none (a flood of
	// half-open ones) do not carry it.
	scan *batchScan
	// arr is the array buf is cut from, when it is one that outlives its
	// frame (buffer.go); excess is its room past buf, as Decoder.spareBytes
	// counts it.
	arr    []byte
	excess int
	// bufTS is the time of the packet that brought buf's first bytes;
	// frameStart that of the frame being decoded (the SASL spans of
	// evidence start there: a token may span segments).
	bufTS, frameStart time.Time
	// pos counts the bytes of this direction (delivered and known lost).
	pos int64
	// skip is what is still to come of a frame over
	// Options.MaxHeldFrameBytes, passed over as it arrives (oversized.go).
	skip int64
}

// Conn decodes one TCP connection. It satisfies capture.Stream.
//
// Its flags stand together, so that a Conn fits the 576-byte size class:
// a capture holds as many as its connections (16384 by default).
type Conn struct {
	d    *Decoder
	a, b netip.AddrPort
	dirs [2]direction // [0] from a, [1] from b

	decided    bool // which side is the client is known
	clientIsA  bool
	byPort     bool // both ends on a Kafka port: never rejected
	seen       bool // data came (at firstSeen)
	rejected   bool
	closed     bool
	evicted    bool // closed by Evict
	ended      bool // its end was reported (end.go)
	detectedBy string

	info *ConnInfo    // nil until the connection is taken as Kafka and has data
	sum  *ConnSummary // with info

	firstSeen  time.Time
	sniffBytes int       // bytes delivered while undecided
	sniffTries int       // candidate frame starts that failed while undecided
	clientIDs  []*string // interned client.ids; sum.ClientIDs holds their values
	lastClient *string
	pending    []pending // requests awaiting a response, in the order sent
	sasl       *saslConn // nil until a SASL request (sasl.go)
}

// dir returns the state of the direction fromA says.
func (c *Conn) dir(fromA bool) *direction {
	if fromA {
		return &c.dirs[0]
	}
	return &c.dirs[1]
}

// decide takes the side clientIsA says as the client.
func (c *Conn) decide(clientIsA bool, by string) {
	c.decided, c.clientIsA, c.detectedBy = true, clientIsA, by
	req, resp := &c.dirs[0], &c.dirs[1]
	if !clientIsA {
		req, resp = resp, req
	}
	req.role, resp.role = roleRequests, roleResponses
	if resp.probing {
		// Its candidate was judged as a request: judge anew as responses.
		c.unsync(resp)
	}
	if c.seen {
		c.register()
	}
}

// register numbers the connection and lists it as Kafka.
func (c *Conn) register() {
	d := c.d
	d.stats.Connections++
	c.info = &ConnInfo{Client: c.a, Broker: c.b, DetectedBy: c.detectedBy, FirstSeen: c.firstSeen}
	if !c.clientIsA {
		c.info.Client, c.info.Broker = c.b, c.a
	}
	d.share(Event{Kind: EventConnection, Conn: c.info})
	c.sum = &ConnSummary{Info: c.info}
	if d.opts.MaxConnections <= 0 || len(d.conns) < d.opts.MaxConnections {
		d.conns = append(d.conns, c.sum)
	}
}

// Data decodes the next in-order bytes of one direction. data is only read
// during the call; decode copies the start of a frame whose end is still to
// come. It returns false once the connection is known not to be Kafka.
func (c *Conn) Data(fromA bool, data []byte, ts time.Time) bool {
	if c.rejected || c.closed {
		return !c.rejected
	}
	if len(data) == 0 {
		return true
	}
	if !c.seen {
		c.seen, c.firstSeen = true, ts
		if c.decided {
			c.register()
		}
	}
	dir := c.dir(fromA)
	pos := dir.pos
	dir.pos += int64(len(data))
	if !c.decided {
		c.sniffBytes += len(data)
	}
	if dir.synced {
		c.frames(dir, data, pos, ts)
		return true
	}

	// Unsynced: the candidate frame start is the beginning of this call,
	// or of the earlier call whose bytes are in buf.
	cand := data
	if dir.probing && c.probeStrict(dir, data) == probeYes {
		// The waiting candidate (which may be the middle of a frame whose
		// size field lies) loses to a segment that starts a whole frame
		// that parses.
		c.d.stats.DroppedBytes += int64(len(dir.buf))
		dir.probing, dir.lost = false, true
		dir.buf, dir.marks = dir.buf[:0], dir.marks[:0]
	}
	if dir.probing && !c.grow(dir, len(data), 0) {
		// The partial frames of all connections are at their bound: the
		// waiting candidate is dropped, data judged on its own.
		c.d.stats.BufferDrops++
		c.d.stats.DroppedBytes += int64(len(dir.buf))
		dir.probing, dir.lost = false, true
		dir.marks = dir.marks[:0]
		c.release(dir)
	}
	if dir.probing {
		dir.marks = append(dir.marks, len(dir.buf))
		pos -= int64(len(dir.buf))
		if len(dir.buf) == 0 {
			dir.bufTS = ts
		}
		dir.buf = append(dir.buf, data...)
		cand = dir.buf
		if len(cand) < dir.need {
			return true
		}
	}
	// While probing, cand is dir.buf[base:] and dir.marks[k:] the segment
	// boundaries not tried yet: failed candidates are passed over without
	// moving the buffer, which is compacted once, so that a buffer of many
	// small segments costs linear work, not a copy per boundary.
	base, k := 0, 0
	for {
		verdict, need := c.probe(dir, cand)
		if verdict == probeMore && len(cand) > probeBytes {
			verdict = probeNo
		}
		if verdict == probeYes {
			break
		}
		if verdict == probeMore {
			// Judge again once the candidate is need bytes long, or past
			// probeBytes, where it is refused.
			dir.need = min(max(need, len(cand)+1), probeBytes+1)
			if !dir.probing {
				dir.buf = dir.buf[:0]
				if !c.grow(dir, len(data), 0) {
					c.d.stats.BufferDrops++
					c.d.stats.DroppedBytes += int64(len(data))
					dir.lost = true
					c.release(dir)
					return c.checkSniff()
				}
				dir.buf, dir.bufTS = append(dir.buf, data...), ts
				dir.probing = true
				dir.marks = dir.marks[:0]
			} else if base > 0 {
				dir.buf = dir.buf[:copy(dir.buf, dir.buf[base:])]
				dir.marks = dir.marks[:copy(dir.marks, dir.marks[k:])]
				for i := range dir.marks {
					dir.marks[i] -= base
				}
			}
			return c.checkSniff()
		}
		if !c.decided {
			c.sniffTries++
		}
		dir.lost = true
		if !dir.probing || k == len(dir.marks) {
			c.d.stats.DroppedBytes += int64(len(cand))
			dir.probing = false
			dir.buf, dir.marks = dir.buf[:0], dir.marks[:0]
			c.idle(dir)
			return c.checkSniff()
		}
		// A candidate that waited for more bytes failed: try the next
		// segment boundary within what was buffered.
		m := dir.marks[k]
		k++
		c.d.stats.DroppedBytes += int64(m - base)
		pos += int64(m - base)
		base = m
		cand = dir.buf[base:]
		dir.need = 0
		if !c.checkSniff() {
			return false
		}
	}

	if !c.decided {
		c.decide(fromA, "sniff")
	}
	if dir.lost {
		c.d.stats.Resyncs++
	}
	dir.synced, dir.lost = true, false
	if dir.probing {
		// Frame from the candidate; buf must start empty for frames.
		dir.probing = false
		c.forget(dir) // cand is read from the old one
		dir.marks = dir.marks[:0]
	}
	c.frames(dir, cand, pos, ts)
	return true
}

// Settled reports whether the connection is known to be Kafka, by a port
// or by the bytes sniffed: Data returns true from then on. Until then
// (Options.Sniff, no Kafka port) Data may return false, the bytes not
// Kafka.
func (c *Conn) Settled() bool { return c.decided || c.byPort }

// probe judges whether cand starts a frame of dir.
func (c *Conn) probe(dir *direction, cand []byte) (probe, int) {
	switch dir.role {
	case roleRequests:
		return c.d.probeRequest(cand, false)
	case roleResponses:
		return c.probeResponse(cand)
	}
	return c.d.probeRequest(cand, !c.byPort)
}

// probeStrict judges data as a frame start for dir with the strictest
// test: a request frame that parses whole with kmsg, or a response to a
// pending request.
func (c *Conn) probeStrict(dir *direction, data []byte) probe {
	var v probe
	if dir.role == roleResponses {
		v, _ = c.probeResponse(data)
	} else {
		v, _ = c.d.probeRequest(data, true)
	}
	return v
}

// checkSniff gives up an undecided connection after bounded bytes or
// attempts that did not parse as Kafka requests.
func (c *Conn) checkSniff() bool {
	if c.decided || c.byPort {
		return true
	}
	if c.sniffBytes > sniffGiveUpBytes || c.sniffTries >= sniffGiveUpTries {
		c.rejected = true
		c.pending = nil
		c.release(&c.dirs[0])
		c.release(&c.dirs[1])
		c.d.stats.Rejected++
		return false
	}
	return true
}

// frames splits b, the next bytes of a synced direction starting at stream
// position pos, into frames and decodes them. Whole frames are decoded in
// place; only a frame's start whose end is still to come is copied.
func (c *Conn) frames(dir *direction, b []byte, pos int64, ts time.Time) {
	if b, pos = c.pass(dir, b, pos); dir.skip > 0 {
		return
	}
	// Finish the frame started in an earlier call.
	if len(dir.buf) > 0 {
		start := pos - int64(len(dir.buf))
		if len(dir.buf) < 4 {
			n := min(4-len(dir.buf), len(b))
			if !c.grow(dir, n, 0) {
				c.overflow(dir, len(b))
				return
			}
			dir.buf = append(dir.buf, b[:n]...)
			b, pos = b[n:], pos+int64(n)
			if len(dir.buf) < 4 {
				return
			}
			if !c.checkSize(dir, dir.buf, start) {
				return
			}
		}
		size := int(binary.BigEndian.Uint32(dir.buf))
		if c.tooLarge(size) {
			n := min(oversizedHead-len(dir.buf), len(b))
			if !c.grow(dir, n, oversizedHead) {
				c.overflow(dir, len(b))
				return
			}
			dir.buf = append(dir.buf, b[:n]...)
			b, pos = b[n:], pos+int64(n)
			if len(dir.buf) < oversizedHead {
				return
			}
			c.oversized(dir, dir.buf)
			dir.buf = dir.buf[:0]
			c.idle(dir)
			if b, pos = c.pass(dir, b, pos); dir.skip > 0 {
				return
			}
		} else {
			n := min(4+size-len(dir.buf), len(b))
			if !c.grow(dir, n, 4+size) {
				c.overflow(dir, len(b))
				return
			}
			dir.buf = append(dir.buf, b[:n]...)
			b, pos = b[n:], pos+int64(n)
			whole := len(dir.buf) == 4+size
			dir.scan.more(dir.buf, whole)
			if !whole {
				return
			}
			dir.frameStart = dir.bufTS
			c.d.scan, c.d.scanBuf = dir.scan, dir.buf
			c.d.offer(dir, dir.buf)
			c.frame(dir, dir.buf[4:], start, ts)
			c.d.scan, c.d.scanBuf = nil, nil
			if c.d.settle() {
				c.forget(dir) // its exchange took the array (lend.go)
			} else {
				dir.scan.quit()
				dir.buf = dir.buf[:0]
				c.idle(dir)
			}
			if !dir.synced {
				return
			}
		}
	}
	for len(b) >= 4 {
		if !c.checkSize(dir, b, pos) {
			return
		}
		size := int(binary.BigEndian.Uint32(b))
		if c.tooLarge(size) {
			if len(b) < oversizedHead {
				break
			}
			c.oversized(dir, b[:oversizedHead])
			b, pos = c.pass(dir, b[oversizedHead:], pos+oversizedHead)
			continue
		}
		if len(b)-4 < size {
			break
		}
		dir.frameStart = ts
		c.frame(dir, b[4:4+size], pos, ts)
		b, pos = b[4+size:], pos+4+int64(size)
	}
	if len(b) > 0 {
		want := 0
		if len(b) >= 4 {
			want = 4 + int(binary.BigEndian.Uint32(b)) // checked above
			if c.tooLarge(want - 4) {
				want = oversizedHead
			}
		}
		dir.buf = dir.buf[:0]
		if !c.grow(dir, len(b), want) {
			c.overflow(dir, len(b))
			return
		}
		dir.buf, dir.bufTS = append(dir.buf, b...), ts
		if dir.role != roleRequests || want <= oversizedHead || !scans(want-4) {
			dir.scan.quit()
			return
		}
		if dir.scan == nil {
			dir.scan = new(batchScan)
		}
		dir.scan.reset() // quits the last frame's scan too
		dir.scan.advance(dir.buf)
	}
}

// checkSize checks the size field at the start of b, a frame at stream
// position pos; a bad size is malformed and unsyncs the direction.
func (c *Conn) checkSize(dir *direction, b []byte, pos int64) bool {
	size := int32(binary.BigEndian.Uint32(b))
	lo := int32(4)
	if dir.role == roleRequests {
		lo = minRequestFrame
	}
	if c.saslRaw(dir) {
		lo = 0 // a raw SASL token may be empty
	}
	if size >= lo && size <= c.d.opts.MaxFrameBytes {
		return true
	}
	c.d.errorf(c, dir.fromA, pos, "frame size %d", size)
	c.unsync(dir)
	return false
}

// unsync drops what dir buffered; it resyncs at a later Data call.
func (c *Conn) unsync(dir *direction) {
	dir.synced, dir.probing, dir.lost = false, false, true
	dir.skip = 0
	dir.scan.quit()
	c.d.stats.DroppedBytes += int64(len(dir.buf))
	dir.buf = dir.buf[:0]
	c.idle(dir)
}

// frame decodes one whole frame (after its size field) of dir, which started
// at stream position pos.
func (c *Conn) frame(dir *direction, frame []byte, pos int64, ts time.Time) {
	if c.saslRaw(dir) && c.saslToken(dir, frame, ts) {
		return
	}
	c.d.stats.Frames++
	c.sum.Frames++
	if dir.role == roleRequests {
		c.d.stats.Requests++
		c.request(dir, frame, pos, ts)
		return
	}
	c.d.stats.Responses++
	c.response(dir, frame, pos, ts)
}

// Gap reports n bytes of one direction lost (n < 0: unknown). The direction
// drops its partial frame and resyncs at a later Data call. A gap in the
// responses marks the requests then pending: if they end unanswered, the
// reason is "bytes lost", since their answers may have been in the hole. They
// stay pending, because the hole may have held only other answers.
func (c *Conn) Gap(fromA bool, n int, ts time.Time) {
	if c.rejected || c.closed {
		return
	}
	dir := c.dir(fromA)
	if n > 0 {
		dir.pos += int64(n)
	}
	c.lose(dir)
}

// lose drops what dir buffered, as bytes lost: it resyncs at a later Data
// call, and requests pending when responses are lost may have lost their
// answer.
func (c *Conn) lose(dir *direction) {
	c.unsync(dir)
	c.saslGap()
	if dir.role == roleResponses {
		for i := range c.pending {
			c.pending[i].lost = true
		}
	}
}

// Evict ends the connection early, as capture does when it holds too many
// (capture.Evicter): its pending produce requests are complete with
// NoResponseEvicted, since their answers may still come in the capture.
func (c *Conn) Evict(ts time.Time) {
	c.evicted = true
	c.Close(ts)
}

// Close ends the connection: every pending produce request is complete with
// no response (NoResponseClosed, NoResponseEndOfCapture after
// Decoder.EndOfInput, NoResponseEvicted after Evict, or NoResponseBytesLost
// if a gap in the responses may have held its answer).
func (c *Conn) Close(ts time.Time) {
	if c.closed {
		return
	}
	c.closed = true
	c.saslClose(ts)
	c.endAtClose(ts)
	for _, p := range c.pending {
		if p.x == nil {
			c.unanswered(p)
			continue
		}
		p.x.NoResponse = NoResponseClosed
		switch {
		case c.evicted:
			p.x.NoResponse = NoResponseEvicted
		case c.d.atEnd:
			p.x.NoResponse = NoResponseEndOfCapture
		}
		if p.lost {
			p.x.NoResponse = NoResponseBytesLost
		}
		c.d.emit(p.x)
	}
	c.pending = nil
	c.release(&c.dirs[0])
	c.release(&c.dirs[1])
}
