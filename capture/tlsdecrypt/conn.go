package tlsdecrypt

import (
	"bytes"
	"crypto/tls"
	"net/netip"
	"slices"
	"time"

	"github.com/kdupcap/kdupcap/capture"
)

type mode uint8

const (
	modeSniff mode = iota // first bytes not seen yet
	modePlain             // not TLS: every call passed through
	modeTLS               // a handshake was seen: records decrypted
	modeMid               // TLS records without a handshake: consumed
	modeHold              // odd first bytes (not 0, not TLS): held until clear
	modeFirst             // plaintext so far; the other side's first bytes not seen yet
)

// maxHold bounds the odd first bytes held: enough for two whole records
// and the header of a third, wherever the capture started.
const maxHold = 2*(recordHeaderLen+maxWire) + recordHeaderLen

// conn is the Stream of one TCP connection. Nearly all connections are
// plaintext, and every one has a conn, so it holds only what each needs
// (the inner stream, the endpoints, the mode, the side that spoke first);
// the rest is in a tlsState, made only for a connection whose first
// bytes need it. TestPlainConnSize bounds a plaintext connection's cost.
type conn struct {
	d     *Decrypter
	inner capture.Stream
	// *tlsState is nil until the connection is taken as TLS (modeTLS) or
	// MidStream (modeMid), is held (modeHold), or its first bytes are too
	// few to tell (modeSniff); a connection made plaintext lets go of it.
	*tlsState
	start time.Time
	// The endpoints A and B, as netip.AddrPorts split in two: AddrPort's
	// padding would cost a larger size class.
	addrA, addrB netip.Addr
	portA, portB uint16
	mode         mode
	sniffDir     bool // the side whose first bytes were sniffed or held
	evicted      bool // ended by Evict: the inner stream is told so
}

// tlsState is what a connection keeps beyond passing its bytes on: the
// first bytes sniffed or held, and everything of a TLS or MidStream
// connection.
type tlsState struct {
	sniff    [6]byte
	sniffN   int
	held     []byte // modeHold: the first bytes, copied
	heldScan int    // len(held) at the last scan

	notKafka  bool // the inner stream returned false
	clientIsA bool
	h         [2]half // [0]: from A, [1]: from B

	chSeen, shSeen bool
	ch             clientHello
	sh             serverHello
	suite          *suite
	etm            bool
	ticket         []byte // TLS 1.2 NewSessionTicket of this connection
	keysFound      bool
	noKey          bool // keys looked up and not found
	gaveUp         bool // buffering bound hit while waiting for keys
	lastGen        uint64
	master         []byte
	app13          [2][]byte // TLS 1.3 application secrets by half
	rc12           [2]*recordCipher

	waiting bool
	// closing: Close came while waiting for keys (Options.KeepClosed);
	// the inner stream is closed at closeAt once they come, or at Flush.
	closing bool
	closeAt time.Time
	queue   []pending
	arena   []byte

	st       ConnState // current state; Status computed on publish
	pub      ConnState // last published
	listIdx  int
	sincePub int
}

// state returns the connection's tlsState, made on first use.
func (c *conn) state() *tlsState {
	if c.tlsState == nil {
		c.tlsState = &tlsState{listIdx: -1}
	}
	return c.tlsState
}

// endA and endB are the connection's endpoints A and B.
func (c *conn) endA() netip.AddrPort { return netip.AddrPortFrom(c.addrA, c.portA) }
func (c *conn) endB() netip.AddrPort { return netip.AddrPortFrom(c.addrB, c.portB) }

// toPlain makes the connection plaintext for good; the bytes its
// tlsState held stay valid for the caller.
func (c *conn) toPlain() {
	c.mode, c.tlsState = modePlain, nil
}

// pending is a record (or a gap, when gap is true) kept while a
// connection waits for its keys; off and end index tlsState.arena.
type pending struct {
	fromA    bool
	gap      bool
	raw      bool // bytes of the stream after a gap, to frame anew (not a whole record)
	ended    bool // the direction's FIN or RST (rst), for capture.Ender
	rst      bool
	n        int
	off, end int
	ts       time.Time
}

// half is one direction of a TLS connection.
type half struct {
	fromA     bool
	client    bool
	buf       []byte // an incomplete record, or bytes scanned after a gap
	out       []byte // plaintext of the record being handed on
	rc        *recordCipher
	seq       uint64
	encrypted bool // protected records follow (1.2: after CCS; 1.3: after ServerHello)
	app       bool // TLS 1.3: application traffic keys in use
	hs        hsReader
	stop      bool // nothing more is decrypted in this direction
	resync    bool // looking for a record boundary after a gap
	// rawWait: a gap came while waiting for keys; what follows can only
	// be framed again (resync) with the keys, so it is kept as it came.
	rawWait bool
	tries   int
	scanned int
}

// outBuf is the half's plaintext buffer, made when the first protected
// record is opened: a connection that never gets its keys (no key, mid
// stream) costs none.
func (h *half) outBuf() []byte {
	if h.out == nil {
		h.out = make([]byte, maxWire)
	}
	return h.out
}

func idx(fromA bool) int {
	if fromA {
		return 0
	}
	return 1
}

// Data implements capture.Stream.
func (c *conn) Data(fromA bool, data []byte, ts time.Time) bool {
	switch c.mode {
	case modePlain:
		return c.inner.Data(fromA, data, ts)
	case modeHold:
		return c.holdData(fromA, data, ts)
	case modeFirst:
		if fromA == c.sniffDir || len(data) == 0 {
			return c.inner.Data(fromA, data, ts)
		}
		c.mode = modePlain
		if classify(data) != isMid {
			return c.inner.Data(fromA, data, ts)
		}
		// The other side starts with a TLS record header, which no Kafka
		// frame does: the first side's bytes were from inside a record.
		c.inner.Gap(!fromA, -1, ts)
		c.startMid(fromA, data, ts)
		return false
	case modeSniff:
		return c.sniffData(fromA, data, ts)
	case modeMid:
		c.st.LostBytes += int64(len(data))
		return false
	}
	if c.notKafka {
		return false
	}
	if c.waiting && c.d.keys.Gen() != c.lastGen {
		c.retryKeys()
	}
	if h := &c.h[idx(fromA)]; c.waiting && h.rawWait {
		c.enqueue(h, data, ts) // after a gap: framed anew with the keys
	} else {
		c.feed(h, data, ts)
	}
	if c.sincePub >= 256 {
		c.publish()
	}
	return !c.notKafka
}

// Gap implements capture.Stream.
func (c *conn) Gap(fromA bool, n int, ts time.Time) {
	switch c.mode {
	case modeSniff:
		if c.tlsState != nil && c.sniffN > 0 {
			// Too few bytes to tell, and the rest lost: plaintext.
			p := c.sniff[:c.sniffN]
			c.toPlain()
			c.inner.Data(c.sniffDir, p, ts)
		}
		c.inner.Gap(fromA, n, ts)
		return
	case modeHold:
		if fromA == c.sniffDir && !c.release(ts) {
			return
		}
	case modeTLS:
		if c.waiting {
			// The partial record before the hole is lost with it; what
			// comes after is kept raw, framed anew once the keys come.
			h := &c.h[idx(fromA)]
			h.buf, h.rawWait = h.buf[:0], true
			c.queue = append(c.queue, pending{fromA: fromA, gap: true, n: n, ts: ts})
			return
		}
		c.gap(&c.h[idx(fromA)], n, ts)
		return
	}
	c.inner.Gap(fromA, n, ts)
}

// End implements capture.Ender: passed on in order with the direction's
// bytes, after the records kept waiting for their keys.
func (c *conn) End(fromA bool, rst bool, ts time.Time) {
	if c.mode == modeTLS && c.waiting {
		c.queue = append(c.queue, pending{fromA: fromA, ended: true, rst: rst, ts: ts})
		return
	}
	c.endInner(fromA, rst, ts)
}

func (c *conn) endInner(fromA, rst bool, ts time.Time) {
	if e, ok := c.inner.(capture.Ender); ok {
		e.End(fromA, rst, ts)
	}
}

// Close implements capture.Stream.
func (c *conn) Close(ts time.Time) {
	if c.mode == modeSniff && c.tlsState != nil && c.sniffN > 0 {
		p := c.sniff[:c.sniffN]
		c.toPlain()
		c.inner.Data(c.sniffDir, p, ts)
	}
	if c.mode == modeHold {
		c.release(ts)
	}
	if c.mode == modeTLS || c.mode == modeMid {
		if c.waiting {
			if c.d.keys.Gen() != c.lastGen {
				c.retryKeys()
			}
			if c.waiting && c.d.opts.KeepClosed && c.d.keepClosed(1) {
				// Its keys may come yet (a key log written a little
				// after the handshake): the connection ends once they do,
				// or at Decrypter.Flush.
				c.closeAt, c.closing = ts, true
				return
			}
			if c.waiting {
				c.dropQueue()
				c.noKey = true
			}
		}
		c.finishClose()
	}
	if e, ok := c.inner.(capture.Evicter); ok && c.evicted {
		e.Evict(ts)
		return
	}
	c.inner.Close(ts)
}

// Evict is Close for a connection capture closes early, holding too many
// (capture.Evicter): the inner stream is told Evict, if it listens.
func (c *conn) Evict(ts time.Time) {
	c.evicted = true
	c.Close(ts)
}

// finishClose is the end of a TLS connection's Close: its state published
// for good, its buffers let go.
func (c *conn) finishClose() {
	c.st.Closed = true
	c.publish()
	c.h[0].buf, c.h[1].buf, c.h[0].out, c.h[1].out = nil, nil, nil, nil
}

// endClosing ends a connection closed while waiting for its keys, after
// they came (retryKeys) or when none can come any more (flush).
func (c *conn) endClosing(flush bool) {
	if !c.closing {
		return
	}
	c.closing = false
	c.d.keepClosed(-1)
	if flush && c.waiting {
		c.dropQueue()
		c.noKey = true
	}
	c.finishClose()
	c.inner.Close(c.closeAt)
}

// verdict of the first bytes of a connection.
type verdict uint8

const (
	needMore verdict = iota
	isPlain
	isHello // a ClientHello: TLS with a handshake
	isMid   // TLS records without a ClientHello
)

// classify looks at the first bytes of a connection. A Kafka frame starts
// with its int32 size, so its first byte is 0 for any frame under 16 MiB;
// a TLS record starts 0x14-0x17 0x03 0x01-0x04. Any other first bytes,
// a record type without a version after it too, may be from inside a
// record: two chained record headers in them make them MidStream.
func classify(p []byte) verdict {
	if len(p) == 0 {
		return needMore
	}
	switch p[0] {
	case 0:
		return isPlain
	case typeCCS, typeAlert, typeHandshake, typeAppData:
		if len(p) < 3 {
			return needMore
		}
		if p[1] != 3 || p[2] < 1 || p[2] > 4 {
			break // not a record header: ciphertext, maybe
		}
		if p[0] != typeHandshake {
			return isMid
		}
		if len(p) < 6 {
			return needMore
		}
		if p[5] == hsClientHello && p[2] <= 3 {
			return isHello
		}
		return isMid
	}
	if chainedRecords(p) {
		return isMid
	}
	return isPlain
}

// chainedRecords reports whether p, which does not start at a record,
// holds two consecutive TLS 1.2/1.3 application_data record headers: a
// capture that starts inside a TLS record.
func chainedRecords(p []byte) bool {
	const scan = 64 << 10
	if len(p) > scan {
		p = p[:scan]
	}
	pat := []byte{typeAppData, 3, 3}
	for off := 0; ; {
		i := bytes.Index(p[off:], pat)
		if i < 0 || off+i+recordHeaderLen > len(p) {
			return false
		}
		at := off + i
		n, ok := validHeader(p[at:])
		next := at + recordHeaderLen + n
		if ok && (next == len(p) || next+3 <= len(p) && bytes.Equal(p[next:next+3], pat)) {
			return true
		}
		off = at + 1
	}
}

func (c *conn) sniffData(fromA bool, data []byte, ts time.Time) bool {
	if c.tlsState == nil {
		// The first bytes; a tlsState keeps them if too few to tell.
		switch classify(data) {
		case isPlain:
			// Odd first bytes (classify found no chained records in them)
			// are held until the other side or more bytes tell.
			if data[0] != 0 && len(data) < maxHold {
				c.mode, c.sniffDir = modeHold, fromA
				c.state().held = append(make([]byte, 0, maxHold), data...)
				return true
			}
			c.mode, c.sniffDir = modeFirst, fromA
			return c.inner.Data(fromA, data, ts)
		case isHello:
			c.startTLS(fromA, ts)
			return c.Data(fromA, data, ts)
		case isMid:
			c.startMid(fromA, data, ts)
			return false
		}
		if len(data) == 0 {
			return true
		}
		c.sniffDir = fromA
		s := c.state()
		s.sniffN = copy(s.sniff[:], data)
		return true
	}
	s := c.tlsState
	if fromA != c.sniffDir {
		// The other side speaks before the first bytes were clear: no TLS
		// client does that.
		p := s.sniff[:s.sniffN]
		c.toPlain()
		if !c.inner.Data(c.sniffDir, p, ts) {
			return false
		}
		return c.inner.Data(fromA, data, ts)
	}
	took := copy(s.sniff[s.sniffN:], data)
	s.sniffN += took
	p := s.sniff[:s.sniffN]
	switch classify(p) {
	case needMore:
		return true
	case isPlain:
		// A record type without a TLS version after it: odd first bytes,
		// held as when they come in one call (never 0: only a record
		// type is too few bytes to tell).
		c.mode, s.held = modeHold, append(make([]byte, 0, maxHold), p...)
		s.sniffN = 0
		return c.holdData(fromA, data[took:], ts)
	case isHello:
		c.startTLS(fromA, ts)
		s.sniffN = 0
		if !c.Data(fromA, p, ts) {
			return false
		}
		return c.Data(fromA, data[took:], ts)
	}
	c.startMid(fromA, p, ts)
	return false
}

// holdData takes the bytes of a connection whose first bytes were odd:
// they may be from inside a TLS record. Two chained record headers in
// them, or a record header at the start of the other side's first bytes,
// make it MidStream; maxHold bytes without either make it plaintext.
func (c *conn) holdData(fromA bool, data []byte, ts time.Time) bool {
	if fromA != c.sniffDir {
		if len(data) == 0 {
			return true
		}
		if classify(data) == isMid {
			c.startMid(fromA, data, ts)
			c.st.LostBytes += int64(len(c.held))
			c.held = nil
			c.publish()
			return false
		}
		return c.release(ts) && c.inner.Data(fromA, data, ts)
	}
	take := min(maxHold-len(c.held), len(data))
	c.held = append(c.held, data[:take]...)
	// Scanning again only every KiB keeps tiny segments from costing
	// quadratic time.
	if len(c.held) >= c.heldScan+1024 || len(c.held) == maxHold {
		c.heldScan = len(c.held)
	} else {
		return true
	}
	if chainedRecords(c.held) {
		c.startMid(fromA, data, ts)
		c.st.LostBytes += int64(len(c.held) - take)
		c.held = nil
		c.publish()
		return false
	}
	if len(c.held) < maxHold {
		return true
	}
	return c.release(ts) && c.inner.Data(fromA, data[take:], ts)
}

// release hands the held bytes on as plaintext.
func (c *conn) release(ts time.Time) bool {
	held := c.held
	c.toPlain()
	return c.inner.Data(c.sniffDir, held, ts)
}

func (c *conn) startTLS(clientIsA bool, ts time.Time) {
	c.state() // made now, or kept from the first bytes sniffed
	c.mode = modeTLS
	c.clientIsA = clientIsA
	for i := range c.h {
		h := &c.h[i]
		h.fromA = i == 0
		h.client = h.fromA == clientIsA
	}
	c.st.Client, c.st.Broker = c.endA(), c.endB()
	if !clientIsA {
		c.st.Client, c.st.Broker = c.endB(), c.endA()
	}
	c.st.Start = c.start
	c.pub = c.st
	c.d.register(c)
}

func (c *conn) startMid(fromA bool, data []byte, ts time.Time) {
	c.state() // made now, or kept from the first bytes sniffed or held
	c.mode = modeMid
	// No ClientHello tells the client: a configured broker port does,
	// else the lower port is taken for the broker's.
	c.st.Client, c.st.Broker = c.endA(), c.endB()
	aBroker, bBroker := slices.Contains(c.d.opts.Ports, c.portA), slices.Contains(c.d.opts.Ports, c.portB)
	if aBroker && !bBroker || aBroker == bBroker && c.portA < c.portB {
		c.st.Client, c.st.Broker = c.endB(), c.endA()
	}
	c.st.Start = c.start
	c.st.LostBytes = int64(len(data))
	c.pub = c.st
	c.d.register(c)
	c.publish()
}

// status is the connection's Status from its facts.
func (c *conn) status() Status {
	switch {
	case c.mode == modeMid:
		return MidStream
	case c.st.BadMACs > 0:
		return BadMAC
	case c.noKey || c.gaveUp || c.waiting:
		return NoKey
	case c.st.Reason != "":
		return Undecryptable
	case c.keysFound:
		return Decrypted
	}
	return Handshake
}

func (c *conn) publish() {
	c.sincePub = 0
	st := c.st
	st.Status = c.status()
	c.d.update(c, st)
}

// fail stops a direction as undecryptable for reason, telling the inner
// stream that bytes are missing.
func (c *conn) fail(h *half, reason string, ts time.Time) {
	if h.stop {
		return
	}
	h.stop = true
	if c.st.Reason == "" {
		c.st.Reason = reason
	}
	h.buf = h.buf[:0]
	c.inner.Gap(h.fromA, -1, ts)
	c.publish()
}

// feed takes the next bytes of one direction.
func (c *conn) feed(h *half, data []byte, ts time.Time) {
	for len(data) > 0 && !h.stop && !c.notKafka {
		if h.resync {
			data = c.resyncFeed(h, data, ts)
			continue
		}
		if len(h.buf) > 0 {
			if len(h.buf) < recordHeaderLen {
				n := copy(h.buf[len(h.buf):recordHeaderLen], data)
				h.buf = h.buf[:len(h.buf)+n]
				data = data[n:]
				if len(h.buf) < recordHeaderLen {
					return
				}
			}
			n, ok := validHeader(h.buf)
			if !ok {
				c.fail(h, "not a TLS record", ts)
				break
			}
			take := min(recordHeaderLen+n-len(h.buf), len(data))
			h.buf = append(h.buf, data[:take]...)
			data = data[take:]
			if len(h.buf) < recordHeaderLen+n {
				return
			}
			c.record(h, h.buf, ts)
			h.buf = h.buf[:0]
			continue
		}
		rest := c.consume(h, data, ts)
		if !h.stop && !h.resync {
			if h.buf == nil {
				h.buf = make([]byte, 0, recordHeaderLen+maxWire)
			}
			h.buf = append(h.buf[:0], rest...)
		}
		return
	}
	if h.stop {
		c.st.LostBytes += int64(len(data))
	}
}

// consume handles the complete records at the start of p and returns the
// incomplete rest.
func (c *conn) consume(h *half, p []byte, ts time.Time) []byte {
	for len(p) >= recordHeaderLen && !h.stop && !c.notKafka {
		n, ok := validHeader(p)
		if !ok {
			c.fail(h, "not a TLS record", ts)
			c.st.LostBytes += int64(len(p))
			return nil
		}
		if len(p) < recordHeaderLen+n {
			break
		}
		c.record(h, p[:recordHeaderLen+n], ts)
		p = p[recordHeaderLen+n:]
	}
	return p
}

// record handles one whole record (header and fragment), valid only
// during the call.
func (c *conn) record(h *half, rec []byte, ts time.Time) {
	if c.waiting {
		c.enqueue(h, rec, ts)
		return
	}
	typ, body := rec[0], rec[recordHeaderLen:]
	tls13 := c.shSeen && c.sh.version == tls.VersionTLS13
	if !h.encrypted || (tls13 && typ != typeAppData) {
		c.plainRecord(h, typ, body, ts, false)
		return
	}
	if h.rc == nil {
		switch {
		case c.gaveUp || c.noKey && c.d.keys == nil:
			c.st.LostBytes += int64(len(rec))
		case c.suite == nil:
			c.fail(h, "protected records without a ServerHello", ts)
		default:
			c.waiting = true
			c.d.wait(c, true)
			c.enqueue(h, rec, ts)
			c.publish()
		}
		return
	}
	typ, pt, err := h.rc.open(h.outBuf(), h.seq, rec[:recordHeaderLen], body)
	if err != nil {
		c.badMAC(h, int64(len(rec)), ts)
		return
	}
	h.seq++
	c.plainRecord(h, typ, pt, ts, true)
}

func (c *conn) badMAC(h *half, n int64, ts time.Time) {
	if c.st.BadMACs == 0 {
		c.d.forgetKeys(c.st.Client, c.st.Broker)
	}
	c.st.BadMACs++
	c.st.LostBytes += n
	h.stop = true
	h.buf = h.buf[:0]
	c.inner.Gap(h.fromA, -1, ts)
	c.publish()
}

// plainRecord handles the content of a record, decrypted or not.
func (c *conn) plainRecord(h *half, typ byte, p []byte, ts time.Time, decrypted bool) {
	switch typ {
	case typeAppData:
		if !decrypted {
			c.fail(h, "application data before the keys changed", ts)
			return
		}
		c.st.Records++
		c.sincePub++
		if len(p) == 0 {
			return
		}
		c.st.Bytes += int64(len(p))
		if !c.inner.Data(h.fromA, p, ts) {
			c.notKafka = true
		}
	case typeHandshake:
		h.hs.feed(p, func(t byte, body []byte) { c.handshake(h, t, body, ts) })
	case typeCCS:
		if !decrypted && !(c.shSeen && c.sh.version == tls.VersionTLS13) && !c.sawHRR() {
			c.changeCipherSpec(h, ts)
		}
	case typeAlert:
		if len(p) >= 2 && p[1] == 0 {
			c.st.CloseNotify = true
			// close_notify ends the sender's side of the connection, as
			// a FIN does below TLS (a TLS broker closing sends it first,
			// and its peer may send the first FIN in answer).
			c.endInner(h.fromA, false, ts)
		}
	}
}

func (c *conn) sawHRR() bool { return c.st.HelloRetry }

func (c *conn) changeCipherSpec(h *half, ts time.Time) {
	if !c.shSeen {
		c.fail(h, "ChangeCipherSpec before the ServerHello", ts)
		return
	}
	h.encrypted = true
	h.seq = 0
	h.rc = c.rc12[idx(h.fromA)]
}

// handshake handles one handshake message; body is nil when not kept.
func (c *conn) handshake(h *half, typ byte, body []byte, ts time.Time) {
	switch {
	case typ == hsClientHello && h.client && !c.shSeen:
		ch, ok := parseClientHello(body)
		if !ok {
			c.fail(h, "malformed ClientHello", ts)
			return
		}
		c.ch, c.chSeen = ch, true
		c.st.SNI = ch.sni
	case typ == hsServerHello && !h.client && !c.shSeen:
		c.serverHello(h, body, ts)
	case typ == hsNewTicket && !h.client && c.shSeen && c.sh.version != tls.VersionTLS13:
		c.ticket = parseTicket(body)
		if c.master != nil && c.ticket != nil {
			c.d.rememberSession(nil, c.ticket, c.master)
		}
	case typ == hsFinished && c.shSeen && c.sh.version == tls.VersionTLS13 && !h.app:
		h.app = true
		h.seq = 0
		h.rc = nil
		if s := c.app13[idx(h.fromA)]; s != nil {
			h.rc, _ = newCipher13(c.suite, s)
		}
		if h.rc == nil {
			c.fail(h, "no application traffic secret", ts)
		}
	case typ == hsKeyUpdate && h.app && h.rc != nil:
		next := nextSecret(c.suite, h.rc.secret)
		rc, err := newCipher13(c.suite, next)
		if err != nil {
			c.fail(h, "KeyUpdate: "+err.Error(), ts)
			return
		}
		h.rc, h.seq = rc, 0
		c.st.KeyUpdates++
	}
}

func (c *conn) serverHello(h *half, body []byte, ts time.Time) {
	sh, ok := parseServerHello(body)
	if !ok || !c.chSeen {
		c.fail(h, "malformed ServerHello", ts)
		return
	}
	if sh.random == hrrRandom {
		c.st.HelloRetry = true
		return
	}
	c.sh, c.shSeen = sh, true
	c.st.Version, c.st.CipherSuite = sh.version, sh.suite
	s := suites[sh.suite]
	switch {
	case sh.version != tls.VersionTLS12 && sh.version != tls.VersionTLS13:
		c.st.Reason = "unsupported version " + tls.VersionName(sh.version)
	case s == nil || s.tls13 != (sh.version == tls.VersionTLS13):
		c.st.Reason = "unsupported cipher suite " + suiteName(sh.suite)
	}
	if c.st.Reason != "" {
		c.stopBoth(ts)
		return
	}
	c.suite = s
	if sh.version == tls.VersionTLS13 {
		c.st.Resumed = sh.psk
		c.h[0].encrypted, c.h[1].encrypted = true, true
	} else {
		c.etm = s.kind == cipherCBC && c.ch.etm && sh.etm
		c.st.EncryptThenMAC = c.etm
		c.st.Resumed = len(sh.sessionID) > 0 && bytes.Equal(sh.sessionID, c.ch.sessionID)
	}
	c.lookupKeys()
	c.publish()
}

// stopBoth stops decrypting both directions (the version or suite is not
// supported); the inner stream hears of a gap in each.
func (c *conn) stopBoth(ts time.Time) {
	for i := range c.h {
		if h := &c.h[i]; !h.stop {
			h.stop = true
			c.inner.Gap(h.fromA, -1, ts)
		}
	}
	c.publish()
}

// lookupKeys looks the connection's secrets up and installs its record
// ciphers; it reports whether they were found.
func (c *conn) lookupKeys() bool {
	c.lastGen = c.d.keys.Gen()
	sec, _ := c.d.keys.lookup(c.ch.random)
	ref := keyRef{random: c.ch.random, start: c.start}
	cl, sv := idx(c.clientIsA), idx(!c.clientIsA)
	if c.sh.version == tls.VersionTLS13 {
		if sec[kindClientHS] == nil || sec[kindServerHS] == nil || sec[kindClientApp] == nil || sec[kindServerApp] == nil {
			c.noKey = true
			return false
		}
		crc, err1 := newCipher13(c.suite, sec[kindClientHS])
		src, err2 := newCipher13(c.suite, sec[kindServerHS])
		if err1 != nil || err2 != nil {
			c.noKey = true
			return false
		}
		c.h[cl].rc, c.h[sv].rc = crc, src
		c.app13[cl], c.app13[sv] = sec[kindClientApp], sec[kindServerApp]
	} else {
		master := sec[kindMaster]
		if master == nil {
			master = c.d.resumedMaster(c.sh.sessionID, c.ch.ticket)
			if master == nil || !c.st.Resumed {
				c.noKey = true
				return false
			}
			ref.master = master
		}
		crc, src, err := keys12(c.suite, master, c.ch.random, c.sh.random, c.etm)
		if err != nil {
			c.noKey = true
			return false
		}
		c.master = master
		c.rc12[cl], c.rc12[sv] = crc, src
		for _, i := range []int{cl, sv} {
			if c.h[i].encrypted && c.h[i].rc == nil {
				c.h[i].rc = c.rc12[i]
			}
		}
		if !c.st.Resumed {
			c.d.rememberSession(c.sh.sessionID, nil, master)
		}
		if c.ticket != nil {
			c.d.rememberSession(nil, c.ticket, master)
		}
	}
	c.noKey, c.keysFound = false, true
	c.d.rememberKeys(c.st.Client, c.st.Broker, ref)
	return true
}

// enqueue keeps a record (copied) until the keys arrive, within the
// bounds; beyond them the connection is given up as NoKey.
func (c *conn) enqueue(h *half, rec []byte, ts time.Time) {
	if len(c.arena)+len(rec) > c.d.opts.MaxBufferPerConn ||
		c.d.buffered.Add(int64(len(rec))) > c.d.opts.MaxBufferTotal {
		if len(c.arena)+len(rec) <= c.d.opts.MaxBufferPerConn {
			c.d.buffered.Add(-int64(len(rec)))
		}
		c.st.LostBytes += int64(len(rec))
		c.dropQueue()
		c.gaveUp = true
		c.d.countBufferLimit()
		c.publish()
		return
	}
	off := len(c.arena)
	c.arena = append(c.arena, rec...)
	c.queue = append(c.queue, pending{fromA: h.fromA, off: off, end: len(c.arena), ts: ts, raw: h.rawWait})
}

func (c *conn) dropQueue() {
	for _, p := range c.queue {
		if p.ended {
			c.endInner(p.fromA, p.rst, p.ts)
			continue
		}
		if !p.gap {
			c.st.LostBytes += int64(p.end - p.off)
		}
	}
	c.d.buffered.Add(-int64(len(c.arena)))
	c.queue, c.arena, c.waiting = nil, nil, false
	c.d.wait(c, false)
}

// retryKeys looks the keys up again and, when found, replays the records
// kept meanwhile in their order.
func (c *conn) retryKeys() {
	if !c.lookupKeys() {
		return
	}
	q, arena := c.queue, c.arena
	c.queue, c.arena, c.waiting = nil, nil, false
	c.d.wait(c, false)
	c.h[0].rawWait, c.h[1].rawWait = false, false
	for _, p := range q {
		h := &c.h[idx(p.fromA)]
		switch {
		case p.ended:
			c.endInner(p.fromA, p.rst, p.ts)
		case p.gap:
			c.gap(h, p.n, p.ts)
		case h.stop:
		case p.raw:
			c.feed(h, arena[p.off:p.end], p.ts)
		default:
			c.record(h, arena[p.off:p.end], p.ts)
		}
	}
	c.d.buffered.Add(-int64(len(arena)))
	c.publish()
	c.endClosing(false)
}

// gap handles n lost bytes of one direction.
func (c *conn) gap(h *half, n int, ts time.Time) {
	c.inner.Gap(h.fromA, n, ts)
	if n > 0 {
		c.st.LostBytes += int64(n)
	}
	if h.stop {
		return
	}
	h.buf = h.buf[:0]
	h.hs.reset()
	h.resync, h.tries, h.scanned = true, 0, 0
	if !c.shSeen && (h.client && !c.chSeen || !h.client) {
		c.fail(h, "handshake lost in a gap", ts)
	}
}

// maxResyncScan bounds the bytes scanned for a record after a gap.
const maxResyncScan = 1 << 20

// resyncFeed looks for the next record after a gap: a plausible header
// whose record authenticates with one of the next sequence numbers.
func (c *conn) resyncFeed(h *half, data []byte, ts time.Time) []byte {
	if h.buf == nil {
		h.buf = make([]byte, 0, recordHeaderLen+maxWire)
	}
	take := min(cap(h.buf)-len(h.buf), len(data))
	h.buf = append(h.buf, data[:take]...)
	data = data[take:]
	for !h.stop {
		i := c.findHeader(h)
		if i < 0 {
			keep := min(len(h.buf), recordHeaderLen-1)
			c.skip(h, len(h.buf)-keep)
			break
		}
		c.skip(h, i)
		if h.scanned > maxResyncScan {
			break
		}
		n, _ := validHeader(h.buf)
		if len(h.buf) < recordHeaderLen+n {
			return data
		}
		all := h.buf
		rec := all[:recordHeaderLen+n]
		if c.tryResync(h, rec, ts) {
			h.resync = false
			if h.stop {
				return nil
			}
			rest := c.consume(h, all[len(rec):], ts)
			if h.stop {
				return nil
			}
			h.buf = all[:copy(all, rest)]
			return data
		}
		// A record followed by another header (or ending where the bytes
		// end) is a record boundary: its sequence number is beyond reach.
		if next := h.buf[len(rec):]; len(next) == 0 || len(next) >= recordHeaderLen && c.headerAt(h, next) {
			h.tries = 1 << 10
			break
		}
		h.tries++
		if h.tries > 16 {
			break
		}
		c.skip(h, 1)
	}
	if h.scanned > maxResyncScan || h.tries > 16 {
		c.st.LostBytes += int64(len(h.buf) + len(data))
		c.fail(h, "records not found again after a gap", ts)
		return nil
	}
	return data
}

func (c *conn) skip(h *half, n int) {
	h.scanned += n
	c.st.LostBytes += int64(n)
	h.buf = h.buf[:copy(h.buf, h.buf[n:])]
}

// findHeader returns the offset in h.buf of the first plausible record
// header, or -1.
func (c *conn) findHeader(h *half) int {
	for i := 0; i+recordHeaderLen <= len(h.buf); i++ {
		if c.headerAt(h, h.buf[i:]) {
			return i
		}
	}
	return -1
}

// headerAt reports whether p starts with a plausible record header of h
// after the handshake's first records (version 0x0303).
func (c *conn) headerAt(h *half, p []byte) bool {
	if _, ok := validHeader(p); !ok || p[2] != 3 || p[1] != 3 {
		return false
	}
	return !h.encrypted || !c.shSeen || c.sh.version != tls.VersionTLS13 || p[0] == typeAppData || p[0] == typeCCS
}

// tryResync handles rec, the first record found after a gap: plaintext
// records are taken as they are, protected ones must authenticate under
// one of the next sequence numbers (or, in a TLS 1.3 handshake, under the
// first application keys).
func (c *conn) tryResync(h *half, rec []byte, ts time.Time) bool {
	tls13 := c.shSeen && c.sh.version == tls.VersionTLS13
	if !h.encrypted || h.rc == nil || (tls13 && rec[0] != typeAppData) {
		c.record(h, rec, ts)
		return true
	}
	hdr, body := rec[:recordHeaderLen], rec[recordHeaderLen:]
	for k := 0; k < c.d.opts.MaxGapRecords; k++ {
		if typ, pt, err := h.rc.open(h.outBuf(), h.seq+uint64(k), hdr, body); err == nil {
			h.seq += uint64(k) + 1
			c.plainRecord(h, typ, pt, ts, true)
			return true
		}
	}
	if tls13 && !h.app && c.app13[idx(h.fromA)] != nil {
		rc, err := newCipher13(c.suite, c.app13[idx(h.fromA)])
		if err != nil {
			return false
		}
		for k := 0; k < c.d.opts.MaxGapRecords; k++ {
			if typ, pt, err := rc.open(h.outBuf(), uint64(k), hdr, body); err == nil {
				h.rc, h.app, h.seq = rc, true, uint64(k)+1
				c.plainRecord(h, typ, pt, ts, true)
				return true
			}
		}
	}
	return false
}
