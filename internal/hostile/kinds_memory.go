package hostile

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/klauspost/compress/gzip"
)

// The kinds of the memory and CPU rows (a to m): each makes state
// grow with what the capture says rather than with what it holds.

// randomName returns a name of n random lower-case letters after prefix.
func (g *gen) randomName(prefix string, n int) string {
	b := make([]byte, len(prefix)+n)
	copy(b, prefix)
	for i := len(prefix); i < len(b); i++ {
		b[i] = 'a' + byte(g.rng.IntN(26))
	}
	return string(b)
}

// pattern returns n random bytes (the filler of generated values).
func (g *gen) pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.rng.Uint32())
	}
	return b
}

// a: each answered batch to a new random topic, over 8 connections.
func writeManyTopics(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	n := scaled(1_500_000, scale)
	ps := make([]*producer, 8)
	for i := range ps {
		ps[i] = g.newProducer(client1, broker1, uint16(40000+i), int16(3+i%7), "many-topics")
	}
	var uniq uint64
	var first string
	for i := int64(0); i < n && g.err == nil; i++ {
		topic := g.randomName("", 16)
		if i == 0 {
			first = topic
		}
		g.exchange(ps[i%8], topic, 0, g.smallBatch(1, 60, &uniq), 1)
	}
	// The topic of the first exchange, at its next offset: a bound that
	// keeps the first topics it saw still finds it.
	ps[0].offset = 1
	g.canary(ps[0], first, 0, &uniq)
	for _, p := range ps {
		g.fin(p.cn)
	}
	t.Topics, t.ClientIDs = n, 1
	return g.close()
}

// b: connections from distinct client IPs, each with 5 answered batches of
// about 7.5 KB, every one with its own client.id and topic.
func writeManyClients(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	conns := scaled(50_000, scale)
	var uniq uint64
	for c := int64(0); c < conns && g.err == nil; c++ {
		cn := g.newConn(clientIP(c), broker1, uint16(40000+c%20000), 9092)
		g.handshake(cn, 7)
		p := &producer{cn: cn, version: int16(3 + c%7), acks: -1, corr: 1}
		for range 5 {
			id := g.randomName("app-", 12)
			p.clientID = &id
			g.exchange(p, g.randomName("topic-", 12), 0, g.smallBatch(5, 1500, &uniq), 5)
		}
		g.fin(cn)
	}
	t.Topics, t.ClientIDs = 5*conns, 5*conns
	return g.close()
}

// c: connections that each send one small request, never answered nor
// closed.
func writeHalfOpen(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	n := scaled(200_000, scale)
	var uniq uint64
	id := "half-open"
	for i := int64(0); i < n && g.err == nil; i++ {
		cn := g.newConn(clientIP(i), broker1, uint16(40000+i%20000), 9092)
		g.handshake(cn, 7)
		p := &producer{cn: cn, clientID: &id, version: 7, acks: -1, corr: 1}
		g.produce(p, "half-open", int32(i%16), g.smallBatch(1, 100, &uniq))
		t.Unanswered++
	}
	t.Topics, t.ClientIDs = 1, 1
	return g.close()
}

// openFrameBytes is the size the unfinished frames of OpenFrames declare;
// openFrameHeld the bytes of each sent.
const (
	openFrameBytes = 50_000_000
	openFrameHeld  = 1 << 20
)

// d: connections that each begin a 50 MB request and send 1 MiB of it,
// acknowledged, then nothing more.
func writeOpenFrames(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	n := scaled(10_000, scale)
	fill := g.pattern(4096)
	id := "open-frames"
	for i := int64(0); i < n && g.err == nil; i++ {
		cn := g.newConn(clientIP(i), broker1, uint16(40000+i%20000), 9092)
		g.handshake(cn, 7)
		p := &producer{cn: cn, clientID: &id, version: int16(3 + i%7), acks: -1, corr: 1}
		h := notIdempotent(1000, g.now/int64(time.Millisecond))
		batch := h.unchecked(&repeatSrc{unit: fill, n: openFrameBytes - 200}, 0)
		frame, err := produceFrame(p.next("open-frames", 0), batch)
		if err != nil {
			return err
		}
		g.send(cn, toBroker, &limitSrc{src: frame, n: openFrameHeld}, true)
		t.Unfinished++
		t.UnfinishedBytes += openFrameHeld
	}
	t.Topics, t.ClientIDs = 1, 1
	return g.close()
}

// bigFrame returns a produce request of about size bytes (never more),
// one batch of 1000-byte records whose values start with base+i.
func (g *gen) bigFrame(p *producer, topic string, size int64, base uint64, fill []byte) (source, int32, error) {
	const valueLen = 1000
	budget := size - 300 // request and batch headers
	var count int32
	for n := int64(0); ; count++ {
		n += recordLen(count, valueLen)
		if n > budget {
			break
		}
	}
	count = max(count, 1)
	h := notIdempotent(count, g.now/int64(time.Millisecond))
	batch := h.stream(countedRecords(count, valueLen, base, fill), g.scratch)
	frame, err := produceFrame(p.next(topic, 0), batch)
	if err != nil {
		return nil, 0, err
	}
	g.t.Requests++
	g.t.Batches++
	return frame, count, nil
}

// e: one valid 100 MB request, answered, then a canary on the same
// connection (framing must survive it).
func writeBigRequest(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	p := g.newProducer(client1, broker1, 40000, 7, "big-request")
	corr := p.corr
	frame, count, err := g.bigFrame(p, "big", scaled(100_000_000, scale), 1<<40, g.pattern(4096))
	if err != nil {
		return err
	}
	g.send(p.cn, toBroker, frame, true)
	g.wait(50 * time.Millisecond)
	g.answer(p, corr, "big", 0, errNone, 0)
	p.offset = int64(count)
	var uniq uint64
	g.canary(p, "big", 0, &uniq)
	g.fin(p.cn)
	t.Topics, t.ClientIDs = 1, 1
	return g.close()
}

// f: four connections each sending one 100 MB request, their segments
// interleaved, never answered.
func writeBigRequests4(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	fill := g.pattern(4096)
	var ps []*producer
	var frames []source
	for i := range 4 {
		p := g.newProducer(client1, broker1, uint16(40000+i), int16(3+2*i), "big-requests")
		frame, _, err := g.bigFrame(p, "big", scaled(100_000_000, scale), uint64(i+1)<<40, fill)
		if err != nil {
			return err
		}
		ps = append(ps, p)
		frames = append(frames, frame)
		t.Unanswered++
	}
	for more := true; more && g.err == nil; {
		more = false
		for i, p := range ps {
			if frames[i].left() == 0 {
				continue
			}
			more = true
			n := int(min(int64(g.mss), frames[i].left()))
			g.segment(p.cn, toBroker, p.cn.next[toBroker], flagACK|flagPSH, nil, frames[i], n)
			p.cn.next[toBroker] += uint32(n)
		}
	}
	for _, p := range ps {
		g.ack(p.cn, toClient)
	}
	t.Topics, t.ClientIDs = 1, 1
	return g.close()
}

// g: one request of one topic with as many partition entries as fit in
// 100 MB, each 8 bytes (partition, null records), then a canary on
// another connection.
func writeWidePartitions(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	p := g.newProducer(client1, broker1, 40000, 7, "wide")
	h := p.next("wide", 0)
	out := appendRequest(nil, h.clientID, h.corr, h.request(nil))
	// v7 ends: partition count 1, partition 0, null records (-1).
	tail := []byte{0, 0, 0, 1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}
	if len(out) < len(tail) || string(out[len(out)-len(tail):]) != string(tail) {
		return fmt.Errorf("produce v7 template does not end as expected: % x", out[max(0, len(out)-12):])
	}
	prefix := out[:len(out)-len(tail)]
	count := (scaled(100_000_000, scale) - int64(len(prefix)) - 4) / 8
	count = max(1, min(count, 1<<31-1))
	prefix = binary.BigEndian.AppendUint32(prefix, uint32(count))
	binary.BigEndian.PutUint32(prefix, uint32(int64(len(prefix))-4+8*count))
	var next int64
	entries := &genSrc{n: 8 * count, next: func(dst []byte) []byte {
		for k := 0; k < 4096 && next < count; k++ {
			dst = binary.BigEndian.AppendUint32(dst, uint32(next))
			dst = append(dst, 0xff, 0xff, 0xff, 0xff)
			next++
		}
		return dst
	}}
	g.send(p.cn, toBroker, chain(&bytesSrc{b: prefix}, entries), true)
	t.Requests++
	t.Unanswered++
	var uniq uint64
	q := g.newProducer(client1, broker1, 40001, 7, "wide")
	g.canary(q, "narrow", 0, &uniq)
	g.fin(q.cn)
	t.Topics, t.ClientIDs = 2, 1
	return g.close()
}

// h: a raw snappy batch and a xerial one, each of zeros, unanswered (so
// that record matching wants their records), then a canary.
func writeSnappyBomb(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	n := scaled(1<<30, scale)
	p := g.newProducer(client1, broker1, 40000, 7, "snappy-bomb")
	for _, mk := range []func() source{
		func() source { return snappyZeros(n) },
		func() source { return xerialZeros(n) },
	} {
		h := notIdempotent(1, g.now/int64(time.Millisecond))
		h.attrs = codecSnappy
		frame, err := produceFrame(p.next("bomb", 0), h.stream(mk, g.scratch))
		if err != nil {
			return err
		}
		g.send(p.cn, toBroker, frame, true)
		t.Requests++
		t.Batches++
		t.Unanswered++
		t.DecompressedBytes += n
	}
	var uniq uint64
	q := g.newProducer(client1, broker1, 40001, 7, "snappy-bomb")
	g.canary(q, "after-bomb", 0, &uniq)
	t.Topics, t.ClientIDs = 2, 1
	return g.close()
}

// gzipRecordsBytes bounds the uncompressed records of each GzipRecords
// batch: the 16 MiB a batch is decompressed to at most.
const gzipRecordsBytes = 16<<20 - 64

// i: 1 MiB uncompressed batches, unanswered, then gzip batches of 4-byte
// records, unanswered. Every record's value is distinct, so no record
// finding is true.
func writeGzipRecords(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	p := g.newProducer(client1, broker1, 40000, 7, "gzip-records")
	fill := g.pattern(4096)
	send := func(batch source) error {
		frame, err := produceFrame(p.next("gzip-records", 0), batch)
		if err != nil {
			return err
		}
		g.send(p.cn, toBroker, frame, true)
		t.Requests++
		t.Batches++
		t.Unanswered++
		return nil
	}
	pendingCount := int32(1000) // 1000 records of 1 KiB - ~1 MiB
	for i := range scaled(64, scale) {
		h := notIdempotent(pendingCount, g.now/int64(time.Millisecond))
		if err := send(h.stream(countedRecords(pendingCount, 1024, uint64(i+1)<<40, fill), g.scratch)); err != nil {
			return err
		}
	}
	var count int32
	for n := int64(0); ; count++ {
		n += recordLen(count, 4)
		if n > gzipRecordsBytes {
			break
		}
	}
	gz, err := newGzipper(gzip.BestSpeed) // ~3 MB a batch
	if err != nil {
		return err
	}
	for i := range scaled(40, scale) {
		// Values 4 bytes: the low 32 bits of a counter, distinct over
		// every batch (40 x 1.3 M records < 2^32).
		comp, err := gz.compress(countedRecords(count, 4, uint64(i)*uint64(count), nil)())
		if err != nil {
			return err
		}
		h := notIdempotent(count, g.now/int64(time.Millisecond))
		h.attrs = codecGzip
		if err := send(h.stream(func() source { return &bytesSrc{b: comp} }, g.scratch)); err != nil {
			return err
		}
		t.DecompressedBytes += recordsSize(count, 4)
	}
	t.Topics, t.ClientIDs = 1, 1
	return g.close()
}

// j, k: a canary, then on another connection one packet of n zero bytes,
// then an exchange after it on that connection.
func writeHuge(w io.Writer, f fileFormat, n int64, t *Truth) error {
	g := newGen(w, f, t)
	var uniq uint64
	p := g.newProducer(client1, broker1, 40000, 7, "huge")
	g.canary(p, "before-huge", 0, &uniq)
	q := g.newProducer(client1, broker1, 40001, 7, "huge")
	g.hugeSegment(q.cn, toBroker, n)
	g.exchange(q, "after-huge", 0, g.smallBatch(2, 100, &uniq), 2)
	g.fin(p.cn)
	g.fin(q.cn)
	t.Topics, t.ClientIDs = 2, 1
	return g.close()
}

func writeHugeSnaplen(w io.Writer, scale float64, t *Truth) error {
	return writeHuge(w, fileFormat{link: linkEthernet, snap: 1<<32 - 1}, scaled(2<<30, scale), t)
}

func writeHugePacket(w io.Writer, scale float64, t *Truth) error {
	return writeHuge(w, ethernet, scaled(256<<20, scale), t)
}

// zstdRLEBytes is what each ZstdRLE batch expands to.
const zstdRLEBytes = 16 << 20

// l: answered batches each of 16 MiB of zeros as zstd RLE blocks.
func writeZstdRLE(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	p := g.newProducer(client1, broker1, 40000, 7, "zstd-rle")
	frame := zstdZeros(nil, nil, zstdRLEBytes)
	for i := int64(0); i < scaled(4000, scale) && g.err == nil; i++ {
		h := notIdempotent(100, g.now/int64(time.Millisecond)+i)
		h.attrs = codecZstd
		g.exchange(p, "zstd-rle", 0, h.batch(frame), 100)
		t.DecompressedBytes += zstdRLEBytes
	}
	g.fin(p.cn)
	t.Topics, t.ClientIDs = 1, 1
	return g.close()
}

// fileBombBytes is what a file bomb expands to at scale 1.
const fileBombBytes = 16 << 30

// bombHeader is a pcap file header; the zeros after it read as empty
// packet records of time 0.
func bombHeader() []byte {
	var h [24]byte
	binary.LittleEndian.PutUint32(h[0:], 0xa1b2c3d4)
	binary.LittleEndian.PutUint16(h[4:], 2)
	binary.LittleEndian.PutUint16(h[6:], 4)
	binary.LittleEndian.PutUint32(h[16:], 262144)
	binary.LittleEndian.PutUint32(h[20:], linkEthernet)
	return h[:]
}

// writeBomb writes first and then unit count times, and sets the truth
// for a pcap of zeros records expanding to zeros bytes after its header.
func writeBomb(w io.Writer, first, unit []byte, count, zeros int64, t *Truth) error {
	out := &countWriter{w: w}
	bw := bufio.NewWriterSize(out, bufSize)
	_, err := bw.Write(first)
	for range count {
		if err != nil {
			break
		}
		_, err = bw.Write(unit)
	}
	if err == nil {
		err = bw.Flush()
	}
	t.Bytes = out.n
	t.Expanded = 24 + zeros
	t.Packets = zeros / 16
	if err != nil {
		return fmt.Errorf("write at byte %d: %w", out.n, err)
	}
	return nil
}

// m (gzip): gzip members one after the other: the header's, then members
// of 16 MiB of zeros each.
func writeGzipFileBomb(w io.Writer, scale float64, t *Truth) error {
	const unitZeros = 16 << 20
	zeros := scaled(fileBombBytes, scale) &^ (unitZeros - 1)
	zeros = max(zeros, unitZeros)
	gz, err := newGzipper(gzip.BestCompression)
	if err != nil {
		return err
	}
	first, err := gz.compress(&bytesSrc{b: bombHeader()})
	if err != nil {
		return err
	}
	first = append([]byte(nil), first...)
	unit, err := gz.compress(&zeroSrc{n: unitZeros})
	if err != nil {
		return err
	}
	return writeBomb(w, first, unit, zeros/unitZeros, zeros, t)
}

// m (zstd): zstd frames one after the other: the header's, then frames of
// 1 GiB of zeros as RLE blocks (32 KiB each).
func writeZstdFileBomb(w io.Writer, scale float64, t *Truth) error {
	const unitZeros = 1 << 30
	zeros := scaled(fileBombBytes, scale) &^ 15
	first := zstdZeros(nil, bombHeader(), zeros%unitZeros)
	unit := zstdZeros(nil, nil, unitZeros)
	return writeBomb(w, first, unit, zeros/unitZeros, zeros, t)
}
