package hostile

import (
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/klauspost/compress/gzip"
)

// The kinds of malformed or misleading bytes: forged and shared CRCs, cut
// packets, and this package's own kinds (overlaps, floods, sizes, counts,
// nesting, pcapng blocks, gaps).

// oneRecordBatch is a batch of one record of valueLen random bytes, and
// where in it the value starts.
func (g *gen) oneRecordBatch(valueLen int, uniq uint64) (batch []byte, valueAt int) {
	recs := g.rw.append(nil, 0, 0, nil, g.value(valueLen, uniq))
	b := notIdempotent(1, g.now/int64(time.Millisecond)).batch(recs)
	// The value ends one byte (the header count) before the batch.
	return b, len(b) - 1 - valueLen
}

// n: two pairs of different answered batches with equal, valid CRC-32C:
// the second of each pair is the first with one byte of its value changed
// and four others forged. The pairs differ only in the middle of their
// records: same length, header, first and last bytes. The second pair
// goes over two connections of one client.
func writeForgedCRC(w io.Writer, _ float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	p := g.newProducer(client1, broker1, 40000, 7, "forged")
	q := g.newProducer(client1, broker1, 40001, 9, "forged")
	for pair, second := range []*producer{p, q} {
		a, at := g.oneRecordBatch(1000, uint64(pair+1))
		b := append([]byte(nil), a...)
		b[at+300] ^= 0xff
		if err := forgeCRC(b, crcFrom, at+600, binary.BigEndian.Uint32(a[17:])); err != nil {
			return err
		}
		g.exchange(p, "forged", int32(pair), a, 1)
		g.wait(2 * time.Millisecond)
		g.exchange(second, "forged", int32(pair), b, 1)
		g.wait(2 * time.Millisecond)
	}
	g.fin(p.cn)
	g.fin(q.cn)
	t.Topics, t.ClientIDs = 1, 1
	return g.close()
}

// o: two different answered batches that carry the same CRC, wrong for
// both.
func writeSharedBadCRC(w io.Writer, _ float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	p := g.newProducer(client1, broker1, 40000, 7, "bad-crc")
	a, at := g.oneRecordBatch(1000, 1)
	b := append([]byte(nil), a...)
	b[at+300] ^= 0xff
	wrong := binary.BigEndian.Uint32(a[17:]) ^ 0x5a5a5a5a
	binary.BigEndian.PutUint32(a[17:], wrong)
	binary.BigEndian.PutUint32(b[17:], wrong)
	g.exchange(p, "bad-crc", 0, a, 1)
	g.wait(2 * time.Millisecond)
	g.exchange(p, "bad-crc", 0, b, 1)
	t.CorruptBatches = 2
	g.fin(p.cn)
	t.Topics, t.ClientIDs = 1, 1
	return g.close()
}

// p: ordinary traffic with re-sends, every packet cut to snap bytes: no
// batch survives, so no finding does.
func writeSnaplen(w io.Writer, snap int, scale float64, t *Truth) error {
	g := newGen(w, fileFormat{link: linkEthernet, snap: uint32(snap), cut: snap}, t)
	var uniq uint64
	g.ordinary(4, int(scaled(50, scale)), 4, 2*time.Millisecond, &uniq)
	t.Findings, t.Duplicated = 0, 0
	return g.close()
}

func writeSnaplen96(w io.Writer, scale float64, t *Truth) error {
	return writeSnaplen(w, 96, scale, t)
}

func writeSnaplen200(w io.Writer, scale float64, t *Truth) error {
	return writeSnaplen(w, 200, scale, t)
}

// overlapping sends frame on cn with a segment over its middle half
// carrying other bytes. With intoNew, that segment comes between the
// frame's halves, so its second half is bytes never sent before: the frame
// as received is corrupt whichever copy of an overlap a receiver keeps.
// Without, it comes after both halves were sent and acknowledged: a
// receiver keeping the first copy (as Linux does, and so the broker) has
// the frame intact.
func (g *gen) overlapping(cn *conn, frame []byte, intoNew bool) {
	n := len(frame)
	seq := cn.next[toBroker]
	other := append([]byte(nil), frame[n/4:3*n/4]...)
	for i := range other {
		other[i] ^= 0x55
	}
	rewrite := func() {
		g.segment(cn, toBroker, seq+uint32(n/4), flagACK, nil, &bytesSrc{b: other}, len(other))
	}
	g.segment(cn, toBroker, seq, flagACK, nil, &bytesSrc{b: frame[:n/2]}, n/2)
	if intoNew {
		rewrite()
	}
	g.segment(cn, toBroker, seq+uint32(n/2), flagACK|flagPSH, nil, &bytesSrc{b: frame[n/2:]}, n-n/2)
	cn.next[toBroker] += uint32(n)
	g.ack(cn, toClient)
	if !intoNew {
		rewrite()
	}
}

// OverlapRewrite: requests each sent with an overlapping segment of other
// bytes, answered; then a canary. Every other request's overlap reaches
// into bytes not sent before (corrupt under any overlap policy), the
// others' comes once the request was acknowledged (intact to a receiver
// that keeps the first copy). Whichever copy reassembly keeps, no batch is
// sent twice.
func writeOverlapRewrite(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	p := g.newProducer(client1, broker1, 40000, 7, "overlap")
	var uniq uint64
	for i := int64(0); i < scaled(1000, scale) && g.err == nil; i++ {
		h := p.next("overlap", 0)
		corr := h.corr
		g.req = produceBytes(g.req[:0], h, g.smallBatch(2, 1400, &uniq))
		t.Requests++
		t.Batches++
		g.overlapping(p.cn, g.req, i%2 == 0)
		if i%2 == 0 {
			t.CorruptBatches++
		}
		g.wait(300 * time.Microsecond)
		g.answer(p, corr, "overlap", 0, errNone, p.offset)
		p.offset += 2
	}
	g.canary(p, "overlap", 0, &uniq)
	g.fin(p.cn)
	t.Topics, t.ClientIDs = 1, 1
	return g.close()
}

// WindowFlood: bare SYNs with window scale 14 (1 GiB windows), then
// connections whose client skips 4 KiB of its stream and sends 1 MiB
// beyond the hole, which nothing fills and the broker never acknowledges.
func writeWindowFlood(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	opts := synOpts(14)
	syns := scaled(50_000, scale)
	for i := int64(0); i < syns && g.err == nil; i++ {
		cn := g.newConn(clientIP(i), broker1, uint16(40000+i%20000), 9092)
		g.segment(cn, toBroker, cn.next[toBroker], flagSYN, opts, nil, 0)
	}
	fill := g.pattern(4096)
	for i := int64(0); i < scaled(2000, scale) && g.err == nil; i++ {
		cn := g.newConn(clientIP(syns+i), broker1, uint16(50000+i%10000), 9092)
		g.handshake(cn, 14)
		seq := cn.next[toBroker] + 4096
		src := &repeatSrc{unit: fill, n: 1 << 20}
		for src.left() > 0 {
			n := int(min(int64(g.mss), src.left()))
			g.segment(cn, toBroker, seq, flagACK, nil, src, n)
			seq += uint32(n)
		}
		t.Gaps++
		t.GapBytes += 4096
	}
	return g.close()
}

// FrameSizeMax: connections whose client sends a frame size of 2^31-1,
// -1, -2^31 or 100 MiB+1, a produce header and 64 KiB of zeros; every
// fourth broker answers with a size of 2^31-1 too. Then a canary on a
// clean connection.
func writeFrameSizeMax(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	sizes := []uint32{1<<31 - 1, 0xffffffff, 1 << 31, 100<<20 + 1}
	for i := int64(0); i < scaled(1000, scale) && g.err == nil; i++ {
		cn := g.newConn(clientIP(i), broker1, uint16(40000+i%20000), 9092)
		g.handshake(cn, 7)
		size := sizes[i%4]
		f := binary.BigEndian.AppendUint32(nil, size)
		f = append(f, 0, 0, 0, 7, 0, 0, 0, 1) // Produce v7, correlation ID 1
		f = binary.BigEndian.AppendUint16(f, 14)
		f = append(f, "frame-size-max"...)
		g.send(cn, toBroker, chain(&bytesSrc{b: f}, &zeroSrc{n: 64 << 10}), true)
		if int32(size) < 0 {
			// Not counted as malformed: a stream whose first bytes are
			// no frame start cannot be told from a capture begun in the
			// middle of a connection; kdupcap drops them while it looks
			// for a frame start, and the canary after is found.
		} else {
			t.Unfinished++
			t.UnfinishedBytes += int64(len(f)) + 64<<10
		}
		if i%4 == 0 {
			r := []byte{0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1}
			g.send(cn, toClient, chain(&bytesSrc{b: r}, &zeroSrc{n: 1 << 10}), true)
		}
	}
	var uniq uint64
	p := g.newProducer(client1, broker1, 39999, 7, "clean")
	g.canary(p, "clean", 0, &uniq)
	g.fin(p.cn)
	return g.close()
}

// v7 is a hand encoder of Produce v7 frames (non-flexible), to write the
// counts and lengths kmsg will not: field by field, as kmsg lays them out
// (a test checks that for valid fields the bytes are kmsg's).
type v7 struct{ b []byte }

func (e *v7) i16(v int16) *v7 { e.b = binary.BigEndian.AppendUint16(e.b, uint16(v)); return e }
func (e *v7) i32(v int32) *v7 { e.b = binary.BigEndian.AppendUint32(e.b, uint32(v)); return e }
func (e *v7) str(s string) *v7 {
	e.i16(int16(len(s)))
	e.b = append(e.b, s...)
	return e
}
func (e *v7) raw(b []byte) *v7 { e.b = append(e.b, b...); return e }

// start writes the frame's size placeholder, the request header and the
// body's fields before the topics array.
func (e *v7) start(clientID string, corr int32) *v7 {
	e.b = append(e.b[:0], 0, 0, 0, 0)
	e.i16(0).i16(7).i32(corr).str(clientID)
	return e.i16(-1).i16(-1).i32(30000) // null transactional.id, acks, timeout
}

// end sets the frame size and returns the frame.
func (e *v7) end() []byte {
	binary.BigEndian.PutUint32(e.b, uint32(len(e.b)-4))
	return e.b
}

// validV7 is a whole valid Produce v7 frame of one topic and partition.
func validV7(clientID string, corr int32, topic string, partition int32, batch []byte) []byte {
	e := &v7{}
	e.start(clientID, corr).i32(1).str(topic).i32(1).i32(partition).i32(int32(len(batch))).raw(batch)
	return e.end()
}

// recordsWith returns a batch of one record with key key whose encoded
// bytes after the key are tail (a value length, a value, a header count
// and headers, any of them hostile), with a correct CRC.
func recordsWith(key, tail []byte, ts int64) []byte {
	body := []byte{0, 0, 0} // attributes, timestamp delta, offset delta
	body = binary.AppendVarint(body, int64(len(key)))
	body = append(body, key...)
	body = append(body, tail...)
	recs := binary.AppendVarint(nil, int64(len(body)))
	return notIdempotent(1, ts).batch(append(recs, body...))
}

// badCountFrames are the hostile frames of BadCounts, each valid but for
// one count or length; the records they carry are each their own (uniq).
// The first badRequests do not parse as requests; the others are requests
// whose one batch cannot be read.
func (g *gen) badCountFrames(corr int32, uniq *uint64) [][]byte {
	id := "bad-counts"
	ts := g.now / int64(time.Millisecond)
	record := func() []byte {
		*uniq++
		b, _ := g.oneRecordBatch(100, *uniq)
		return b
	}
	ok := record()
	f := func(build func(e *v7)) []byte {
		e := &v7{}
		e.start(id, corr)
		build(e)
		return append([]byte(nil), e.end()...)
	}
	huge := notIdempotent(1<<31-1, ts).batch(record()[batchHeaderLen:])
	negative := notIdempotent(-1, ts).batch(record()[batchHeaderLen:])
	shortLen := record()
	binary.BigEndian.PutUint32(shortLen[8:], 3) // batch length below its header
	negLen := record()
	binary.BigEndian.PutUint32(negLen[8:], 0xfffffff0)
	v := func(n int64) []byte { return binary.AppendVarint(nil, n) }
	abc := fmt.Appendf(nil, "%03d", corr%1000) // a key and value of its own
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	return [][]byte{
		f(func(e *v7) { e.i32(-5) }),                                                   // topics -5
		f(func(e *v7) { e.i32(1<<31 - 1) }),                                            // topics 2^31-1
		f(func(e *v7) { e.i32(1).str("t").i32(-1_000_000) }),                           // partitions -10^6
		f(func(e *v7) { e.i32(1).str("t").i32(1<<31 - 1).i32(0).i32(-1) }),             // partitions 2^31-1
		f(func(e *v7) { e.i32(1).i16(-2).i32(1).i32(0).i32(-1) }),                      // topic name length -2
		f(func(e *v7) { e.i32(1).i16(32767).raw([]byte("short")) }),                    // topic name past the frame
		f(func(e *v7) { e.i32(1).str("t").i32(1).i32(0).i32(-7) }),                     // records length -7
		f(func(e *v7) { e.i32(1).str("t").i32(1).i32(0).i32(1<<31 - 1).raw(ok[:40]) }), // records past the frame
		flexibleHugeCount(id, corr),                                                    // v9 compact count 2^32-2
		validV7(id, corr, "t", 0, huge),                                                // 2^31-1 records, 1 present
		validV7(id, corr, "t", 0, negative),                                            // -1 records
		validV7(id, corr, "t", 0, shortLen),                                            // batch length 3
		validV7(id, corr, "t", 0, negLen),                                              // batch length negative
		validV7(id, corr, "t", 0, recordsWith(abc, cat(v(-5), v(0)), ts)),              // value length -5
		validV7(id, corr, "t", 0, recordsWith(abc, cat(v(3), abc, v(-3)), ts)),         // header count -3
		validV7(id, corr, "t", 0, recordsWith(abc, cat(v(3), abc, v(1<<31-1)), ts)),    // header count 2^31-1
		validV7(id, corr, "t", 0, recordsWith(abc, cat(v(1<<40)), ts)),                 // value length 2^40
	}
}

// badRequests is how many of badCountFrames' frames do not parse as
// requests.
const badRequests = 9

// heldFrameBytes is the largest frame kdupcap decodes whole by default
// (--max-frame-bytes): larger ones are passed over, counted as oversized.
const heldFrameBytes = 16 << 20

// flexibleHugeCount is a Produce v9 frame whose compact topics array says
// 2^32-2 entries.
func flexibleHugeCount(clientID string, corr int32) []byte {
	e := &v7{}
	e.b = append(e.b[:0], 0, 0, 0, 0)
	e.i16(0).i16(9).i32(corr).str(clientID)
	e.b = append(e.b, 0) // header tags
	e.b = append(e.b, 0) // compact transactional.id: null
	e.i16(-1).i32(30000) // acks, timeout
	e.b = binary.AppendUvarint(e.b, 1<<32-1)
	e.b = append(e.b, 2, 't') // one compact string, then nothing
	return e.end()
}

// BadCounts: rounds of every hostile frame, each on its own connection and
// followed by a valid exchange there; then a request of 100 MB whose
// partition count is the number of bytes left (what kmsg's length check
// lets through), of 8-byte entries, so an eager decoder allocates for 8
// times the entries present. Then a canary on a clean connection.
func writeBadCounts(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	var uniq uint64
	port := uint16(40000)
	for round := int64(0); round < scaled(20, scale) && g.err == nil; round++ {
		for i, frame := range g.badCountFrames(int32(round+1), &uniq) {
			p := g.newProducer(client1, broker1, port, 7, "bad-counts")
			port++
			p.corr = int32(round + 2)
			g.sendBytes(p.cn, toBroker, frame, true)
			if i < badRequests {
				t.Malformed++
			} else {
				t.Requests++
				t.Unanswered++
				t.BadBatches++
			}
			g.exchange(p, "t", 0, g.smallBatch(1, 100, &uniq), 1)
			g.fin(p.cn)
		}
	}
	p := g.newProducer(client1, broker1, port, 7, "bad-counts")
	e := &v7{}
	e.start("bad-counts", p.corr).i32(1).str("wide")
	size := scaled(100_000_000, scale)
	count := size - int64(len(e.b)) // what is left after the count: more than the entries
	count = min(count, 1<<31-1)
	e.i32(int32(count))
	head := e.b
	body := (size - int64(len(head))) &^ 7
	binary.BigEndian.PutUint32(head, uint32(int64(len(head))-4+body))
	unit := []byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}
	g.send(p.cn, toBroker, chain(&bytesSrc{b: head}, &repeatSrc{unit: unit, n: body}), true)
	if int64(len(head))+body <= heldFrameBytes {
		t.Malformed++ // read whole, its count refused
	} // else passed over unread: kdupcap holds no frame that large

	g.fin(p.cn)
	q := g.newProducer(client1, broker1, port+1, 7, "clean")
	g.canary(q, "clean", 0, &uniq)
	g.fin(q.cn)
	return g.close()
}

// legacySet is a message set of n copies of one magic 1 message holding
// value (compressed with attrs' codec, which the caller did), offsets 0 to
// n-1.
func legacySet(n int, attrs int8, ts int64, value []byte) []byte {
	var out []byte
	for i := range n {
		out = legacyMessage(out, int64(i), attrs, ts, value)
	}
	return out
}

// NestedLegacy: Produce v2 requests, unanswered, of legacy message sets
// whose leaves differ from request to request:
// one gzip wrapper inside another 1000 deep, and seven levels of gzip
// wrappers each holding 100 copies of the level below (100 messages of 100
// bytes at the bottom: 10^14 messages, 13 PB, once all expanded). Then a
// canary on a clean connection.
func writeNestedLegacy(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	// The deep levels do not compress (gzip of gzip): the fastest level;
	// the wide ones must, 100-fold: the best.
	fast, err := newGzipper(gzip.BestSpeed)
	if err != nil {
		return err
	}
	best, err := newGzipper(gzip.BestCompression)
	if err != nil {
		return err
	}
	ts := g.now / int64(time.Millisecond)
	wrapWith := func(gz *gzipper, set []byte) ([]byte, error) {
		c, err := gz.compress(&bytesSrc{b: set})
		if err != nil {
			return nil, err
		}
		return legacyMessage(nil, 0, codecGzip, ts, c), nil
	}
	p := g.newProducer(client1, broker1, 40000, 2, "nested")
	for i := int64(0); i < scaled(4, scale) && g.err == nil; i++ {
		// Leaves of their own in every request: no record is sent twice.
		deep := legacySet(1, 0, ts, fmt.Appendf(nil, "leaf of request %d", i))
		for range 1000 {
			if deep, err = wrapWith(fast, deep); err != nil {
				return err
			}
		}
		// Each level is 100 copies of the wrapper below, which stays
		// within deflate's 32 KiB window, so every level compresses
		// 100-fold.
		leaf := g.pattern(100)
		wide := legacySet(100, 0, ts, leaf)
		for range 6 {
			w1, err := wrapWith(best, wide)
			if err != nil {
				return err
			}
			wide = make([]byte, 0, 100*len(w1))
			for j := range 100 {
				wide = append(wide, w1...)
				binary.BigEndian.PutUint64(wide[len(wide)-len(w1):], uint64(j))
			}
		}
		if wide, err = wrapWith(best, wide); err != nil {
			return err
		}
		for _, set := range [][]byte{deep, wide} {
			g.produce(p, "nested", 0, set)
			t.Unanswered++
		}
	}
	var uniq uint64
	q := g.newProducer(client1, broker1, 40001, 7, "clean")
	g.canary(q, "clean", 0, &uniq)
	g.fin(q.cn)
	t.Topics = 2
	return g.close()
}

// NgHugeBlock: a pcapng of ordinary traffic with one re-send, then one
// packet block of 1 GiB of zeros, then an Enhanced Packet Block claiming
// 4 GiB whose file ends after 1 MiB of it.
func writeNgHugeBlock(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, fileFormat{ng: true, link: linkEthernet}, t)
	var uniq uint64
	g.ordinary(2, 10, 1, time.Millisecond, &uniq)
	cn := g.newConn(client1, broker1, 45000, 9092)
	g.handshake(cn, 7)
	g.hugeSegment(cn, toBroker, scaled(1<<30, scale))
	var epb [28]byte
	le := binary.LittleEndian
	le.PutUint32(epb[0:], 6)
	le.PutUint32(epb[4:], 0xfffffff0)
	le.PutUint32(epb[20:], 0xfffffff0-32)
	le.PutUint32(epb[24:], 0xfffffff0-32)
	g.write(epb[:])
	g.copySource(&zeroSrc{n: 1 << 20})
	t.Truncated = true
	return g.close()
}

// TinyGaps: requests of about 2 KB in four segments, the third missing its
// first byte, each acknowledged whole by the broker and answered; then a
// canary on a clean connection.
func writeTinyGaps(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	p := g.newProducer(client1, broker1, 40000, 7, "tiny-gaps")
	var uniq uint64
	for i := int64(0); i < scaled(200_000, scale) && g.err == nil; i++ {
		h := p.next("gaps", 0)
		corr := h.corr
		g.req = produceBytes(g.req[:0], h, g.smallBatch(2, 900, &uniq))
		n := len(g.req)
		seq := p.cn.next[toBroker]
		q := n / 4
		for s := range 4 {
			from, to := s*q, (s+1)*q
			if s == 3 {
				to = n
			}
			if s == 2 {
				from++
			}
			g.segment(p.cn, toBroker, seq+uint32(from), flagACK, nil, &bytesSrc{b: g.req[from:to]}, to-from)
		}
		p.cn.next[toBroker] += uint32(n)
		g.ack(p.cn, toClient)
		g.wait(200 * time.Microsecond)
		g.answer(p, corr, "gaps", 0, errNone, p.offset)
		p.offset += 2
		t.Gaps++
		t.GapBytes++
	}
	g.fin(p.cn)
	q := g.newProducer(client1, broker1, 40001, 7, "clean")
	g.canary(q, "clean", 0, &uniq)
	g.fin(q.cn)
	return g.close()
}
