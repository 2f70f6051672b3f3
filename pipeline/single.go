package pipeline

import (
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
)

// single is the run of one Assembler and one Decoder: capture -> decode ->
// detect, on one goroutine, or with decode and detect on a second one
// (split).
type single struct {
	asm *capture.Assembler
	dec *decode.Decoder
	det *detect.Detector
	// split, when set, runs dec and det on a goroutine of their own.
	split *split
	// links are the link types of the packets read (for --write-dups).
	links []layers.LinkType
}

// stages is what a run is made of, for single and sharded alike.
type stages struct {
	det detect.Options
	dec decode.Options
	asm capture.AssemblerOptions
	// observe, if set, sees every produce exchange detect takes as a
	// request of its own (detect.Options.Observe).
	observe func(*decode.Exchange)
	// ignore, if set, keeps connections it answers true for out of the
	// run (kdupcap's own emission traffic).
	ignore func(a, b netip.AddrPort) bool
	// wrap, if set, stands between reassembly and decode: TLS decryption.
	wrap func(capture.NewStreamFunc) capture.NewStreamFunc
	// attempts, if set, sees every exchange and connection end before
	// detect (attempts.go).
	attempts AttemptSink
}

// streamsOf hands dec a stream per connection; a nil *decode.Conn (not
// Kafka) must become a nil interface, or capture would call methods on it.
func streamsOf(dec *decode.Decoder) capture.NewStreamFunc {
	return func(a, b netip.AddrPort, ts time.Time) capture.Stream {
		if c := dec.NewStream(a, b, ts); c != nil {
			return c
		}
		return nil
	}
}

func newSingle(st stages) *single {
	p := &single{}
	st.det.Observe = st.observe
	p.det = detect.New(st.det)
	p.dec = decode.New(sinkOf(st, p.det), st.dec)
	decoded := streamsOf(p.dec)
	newStream := func(a, b netip.AddrPort, ts time.Time) capture.Stream {
		if p.split != nil {
			return p.split.streams(a, b, ts)
		}
		return decoded(a, b, ts)
	}
	if st.wrap != nil {
		newStream = st.wrap(newStream)
	}
	ignore := st.ignore
	p.asm = capture.NewAssembler(func(a, b netip.AddrPort, ts time.Time) capture.Stream {
		if ignore == nil {
			return newStream(a, b, ts)
		}
		if ignore(a, b) {
			return nil
		}
		return &ownCheck{a: a, b: b, ts: ts, ignore: ignore, newStream: newStream}
	}, st.asm)
	return p
}

// startSplit runs decode and detect on a goroutine of their own from now
// on, before the first packet (split). Only an Analysis does, whose
// stages keep no connection out (stages.ignore is a Live run's).
func (p *single) startSplit() {
	if p.split == nil {
		p.split = newSplit(p.dec, p.det)
	}
}

// add hands one packet to the run.
func (p *single) add(pkt capture.Packet) {
	if p.split != nil {
		p.split.pkt = pkt
	}
	p.asm.Add(pkt)
	if !slices.Contains(p.links, pkt.LinkType) {
		p.links = append(p.links, pkt.LinkType)
	}
}

// finish closes every connection and returns all findings, sorted.
func (p *single) finish() []detect.Finding {
	if p.split != nil {
		p.split.endOfInput()
		p.asm.Close()
		p.split.finish()
		return p.det.Flush()
	}
	p.dec.EndOfInput()
	p.asm.Close()
	return p.det.Flush()
}

// stats are the Detector's counts: with a split, as of the last batch the
// decoding goroutine finished once asked (for a progress bar).
func (p *single) stats() detect.Stats {
	if p.split != nil && !p.split.inline {
		return p.split.stats()
	}
	return p.det.Stats()
}

// The split run. The reading goroutine reads, reassembles (and decrypts)
// and hands each connection's bytes, gaps and ends, in order, in batches,
// to a second goroutine that decodes and detects: a Conn's methods are
// called there in the order capture called them here, with the same bytes
// and times, so the findings and every count are those of the run on one
// goroutine. Bytes that are a segment's payload as read ahead (the tail of
// the packet being added, in a chunk read ahead: capture.Packet.Hold) are
// handed on in place, the batch holding their chunk until it is done; the
// others (reassembled from several segments, decrypted) are copied into
// the batch. Some batches are in flight (splitBatches), each ending at
// splitBytes of bytes or splitEvents events, or where the packets' chunk
// changes: the reader is at most that far ahead (4 MiB), the memory
// bounded, and far enough for the bursts of decoding at a large request's
// end (4 batches were not: 0.32 s against 0.26 s with 12 on a real 1 GiB
// loopback capture, 0.63 against 0.56 s on its 1500-MTU re-cut). A batch
// holds one chunk, so there are as many as the chunks leave room for
// (capture.AheadHolds), each of up to a chunk's bytes
// (capture.AheadChunkBytes, 512 KiB: half the hand-offs of 256 KiB, see
// capture's pcapahead.go).
//
// Capture must know at once when a Conn refuses its connection's bytes
// (Data returns false: sniffed, and not Kafka). A Conn on a Kafka port
// never does, nor one sniffed and found to be Kafka (Conn.Settled); for
// the others the reader drains the batches in flight (the decoding
// goroutine is then idle and the Decoder the reader's) and calls Data
// itself. A capture of much other traffic would drain at every segment:
// after maxDrains drains the reader keeps the Decoder and the run goes on
// on one goroutine (inline).
//
// The split costs about 13 ms more than one goroutine at its start (the
// chunks read ahead and the batches, 2300 more pages first touched, dear on
// a VM): on a real capture's first 37 MB 0.130 s against 0.115 s, its first
// 108 MB 0.165 against 0.151 s, 250 MB 0.183 against 0.187 s, 500 MB
// 0.216 against 0.252 s, 1 GiB 0.263 against 0.341 s (medians of 11-15
// interleaved rounds). Below splitMinBytes of input files the default runs
// on one goroutine; standard input from a pipe, of unknown size, is split
// (redirected from a file, it counts its size).
//
// A pcapng's packets were not read ahead into chunks before its blocks
// were parsed in place (capture's pcapng.go): every byte was copied into
// the batches, and the split lost to one goroutine (0.452 s against 0.374
// s on a real 1 GiB capture as pcapng), so the default split pcaps only.
// Now a pcapng splits as a pcap does: 0.296 s against 0.398 s on one
// goroutine (11 interleaved rounds; as pcap, 0.261 s).
const (
	splitMinBytes = 256 << 20
	splitBatches  = capture.AheadHolds
	splitBytes    = capture.AheadChunkBytes
	splitEvents   = 2048
	maxDrains     = 1024
)

// splitKind is what a splitEvent asks of a Conn.
type splitKind uint8

const (
	splitOpen splitKind = iota
	splitData
	splitGap
	splitEnd
	splitEvict
	splitClose
	splitEndOfInput // Decoder.EndOfInput
)

// splitEvent is one call to make on the decoding goroutine: data is ref,
// in place in a held chunk, or batch.data[off:off+n]; n is a gap's size.
type splitEvent struct {
	conn       *splitConn
	ts         time.Time
	ref        []byte
	off, n     int
	kind       splitKind
	fromA, rst bool
}

// splitBatch is a batch of events, the bytes copied for them, and the
// chunk its other bytes lie in, held until the batch is done (the zero
// Hold when none); bytes counts both.
type splitBatch struct {
	events []splitEvent
	data   []byte
	hold   capture.Hold
	bytes  int
}

// split hands a single run's decoding to a goroutine of its own.
type split struct {
	dec  *decode.Decoder
	det  *detect.Detector
	cur  *splitBatch
	free chan *splitBatch
	full chan *splitBatch
	done chan struct{}
	// inline: the goroutine is done or idle for good, and dec and det are
	// the reader's; drains counts the drains before, up to maxDrains, that
	// had something to wait for (a batch handed on since the last).
	inline    bool
	drains    int
	maxDrains int
	// handed counts the batches handed to the goroutine; idleAt is what
	// it was at the last drain.
	handed, idleAt int
	// want asks the goroutine for the Detector's counts; last is what it
	// gave.
	want atomic.Bool
	last atomic.Pointer[detect.Stats]
	// pkt is the packet being added.
	pkt capture.Packet
}

func newSplit(dec *decode.Decoder, det *detect.Detector) *split {
	sp := &split{dec: dec, det: det, maxDrains: maxDrains,
		free: make(chan *splitBatch, splitBatches), full: make(chan *splitBatch, splitBatches), done: make(chan struct{})}
	for range splitBatches {
		sp.free <- &splitBatch{} // grown as filled, then reused
	}
	sp.cur = <-sp.free
	go sp.run()
	return sp
}

// streams is the run's NewStreamFunc: a splitConn for every connection
// the Decoder takes.
func (sp *split) streams(a, b netip.AddrPort, ts time.Time) capture.Stream {
	if !sp.dec.Takes(a, b) {
		return nil
	}
	c := &splitConn{sp: sp, a: a, b: b, settled: sp.dec.Sure(a, b)}
	if sp.inline {
		c.s = sp.dec.NewStream(a, b, ts)
		return c
	}
	sp.add(splitEvent{conn: c, kind: splitOpen, ts: ts})
	return c
}

// add files e in the current batch, handing the batch on when full.
func (sp *split) add(e splitEvent) {
	b := sp.cur
	b.events = append(b.events, e)
	if len(b.events) >= splitEvents || b.bytes >= splitBytes {
		sp.send()
	}
}

// send hands the current batch on and takes an empty one.
func (sp *split) send() {
	sp.handed++
	sp.full <- sp.cur
	sp.cur = <-sp.free
}

// inPlace reports whether data, handed to a Conn, can be handed on in
// place: it is the tail of the packet being added (its TCP payload), held
// by the current batch, which takes a hold on the packet's chunk first
// (after handing on a batch that holds another).
func (sp *split) inPlace(data []byte) bool {
	p := &sp.pkt
	n := len(data)
	if n == 0 || n > len(p.Data) || &data[0] != &p.Data[len(p.Data)-n] {
		return false
	}
	if sp.cur.hold.Holds(*p) {
		return true
	}
	h, ok := p.Hold() // on the chunk being parsed: no more chunks held
	if !ok {
		return false // copied: the batch goes on
	}
	if sp.cur.hold != (capture.Hold{}) {
		sp.send()
	}
	sp.cur.hold = h
	return true
}

// drain waits until the goroutine has done every event handed on: it is
// then idle, waiting for a batch, and the Decoder is the reader's until
// the next batch goes.
func (sp *split) drain() {
	if len(sp.cur.events) == 0 && sp.handed == sp.idleAt {
		return // nothing handed on since the last drain: idle, not counted
	}
	if len(sp.cur.events) > 0 {
		sp.handed++
		sp.full <- sp.cur
	} else {
		sp.free <- sp.cur
	}
	var all [splitBatches]*splitBatch
	for i := range all {
		all[i] = <-sp.free
	}
	for _, b := range all[1:] {
		sp.free <- b
	}
	sp.cur = all[0]
	sp.idleAt = sp.handed
	sp.drains++
	if sp.drains >= sp.maxDrains {
		sp.stop()
	}
}

// stop ends the goroutine, idle after a drain, and keeps the Decoder on
// the reader's goroutine.
func (sp *split) stop() {
	close(sp.full)
	<-sp.done
	sp.inline = true
}

func (sp *split) endOfInput() {
	if sp.inline {
		sp.dec.EndOfInput()
		return
	}
	sp.add(splitEvent{kind: splitEndOfInput})
}

// finish hands on what is left and waits for the goroutine to be done.
func (sp *split) finish() {
	if sp.inline {
		return
	}
	sp.drain()
	if !sp.inline {
		sp.stop()
	}
}

// stats asks the goroutine for the Detector's counts and returns the last
// it gave (zero counts at first).
func (sp *split) stats() detect.Stats {
	sp.want.Store(true)
	if s := sp.last.Load(); s != nil {
		return *s
	}
	return detect.Stats{}
}

// run is the decoding goroutine.
func (sp *split) run() {
	defer close(sp.done)
	for b := range sp.full {
		for i := range b.events {
			e := &b.events[i]
			if e.kind == splitEndOfInput {
				sp.dec.EndOfInput()
				continue
			}
			if e.kind == splitOpen {
				c := e.conn
				c.s = sp.dec.NewStream(c.a, c.b, e.ts)
				continue
			}
			e.conn.do(e, b.data)
		}
		clear(b.events) // the connections they name may end, the bytes be read again
		b.events, b.data, b.bytes = b.events[:0], b.data[:0], 0
		b.hold.Release() // the zero Hold releases nothing
		b.hold = capture.Hold{}
		if sp.want.Swap(false) {
			st := sp.det.Stats()
			sp.last.Store(&st)
		}
		sp.free <- b
	}
}

// splitConn stands for a connection's decode.Conn on the reading
// goroutine; s is used where the Decoder is. settled: the Conn is known
// to take every byte (decode.Conn.Settled), as of the reader's last look.
type splitConn struct {
	sp      *split
	a, b    netip.AddrPort
	s       *decode.Conn
	settled bool
}

// do makes the call e asks for.
func (c *splitConn) do(e *splitEvent, data []byte) {
	switch e.kind {
	case splitData:
		if e.ref != nil {
			c.s.Data(e.fromA, e.ref, e.ts)
			return
		}
		c.s.Data(e.fromA, data[e.off:e.off+e.n], e.ts)
	case splitGap:
		c.s.Gap(e.fromA, e.n, e.ts)
	case splitEnd:
		c.s.End(e.fromA, e.rst, e.ts)
	case splitEvict:
		c.s.Evict(e.ts)
	case splitClose:
		c.s.Close(e.ts)
	}
}

// call hands e on, or makes it at once when the Decoder is the reader's.
func (c *splitConn) call(e splitEvent) {
	if c.sp.inline {
		c.do(&e, nil)
		return
	}
	c.sp.add(e)
}

func (c *splitConn) Data(fromA bool, data []byte, ts time.Time) bool {
	sp := c.sp
	if !c.settled || sp.inline {
		if !sp.inline {
			sp.drain() // the Decoder is the reader's until the next batch goes
		}
		ok := c.s.Data(fromA, data, ts)
		c.settled = c.s.Settled()
		return ok
	}
	inPlace := sp.inPlace(data) // may hand the batch on: sp.cur after it
	b := sp.cur
	b.bytes += len(data)
	if inPlace {
		sp.add(splitEvent{conn: c, kind: splitData, fromA: fromA, ref: data, ts: ts})
		return true
	}
	off := len(b.data)
	b.data = append(b.data, data...)
	sp.add(splitEvent{conn: c, kind: splitData, fromA: fromA, off: off, n: len(data), ts: ts})
	return true
}

func (c *splitConn) Gap(fromA bool, n int, ts time.Time) {
	c.call(splitEvent{conn: c, kind: splitGap, fromA: fromA, n: n, ts: ts})
}

func (c *splitConn) End(fromA bool, rst bool, ts time.Time) {
	c.call(splitEvent{conn: c, kind: splitEnd, fromA: fromA, rst: rst, ts: ts})
}

func (c *splitConn) Evict(ts time.Time) { c.call(splitEvent{conn: c, kind: splitEvict, ts: ts}) }

func (c *splitConn) Close(ts time.Time) { c.call(splitEvent{conn: c, kind: splitClose, ts: ts}) }

// ownCheck asks ignore again when a connection's first bytes come, and only
// then hands it to the decoder. The emitter learns the ends of a connection
// it dials once the handshake is done: its SYN may be read from the ring
// before that, but no byte is written on it before.
type ownCheck struct {
	a, b      netip.AddrPort
	ts        time.Time
	ignore    func(a, b netip.AddrPort) bool
	newStream capture.NewStreamFunc
	s         capture.Stream // set once decided and not ignored
	decided   bool
}

// stream decides, once, whether the connection is analyzed.
func (o *ownCheck) stream() capture.Stream {
	if !o.decided {
		o.decided = true
		if !o.ignore(o.a, o.b) {
			o.s = o.newStream(o.a, o.b, o.ts)
		}
	}
	return o.s
}

func (o *ownCheck) Data(fromA bool, data []byte, ts time.Time) bool {
	s := o.stream()
	return s != nil && s.Data(fromA, data, ts)
}

func (o *ownCheck) Gap(fromA bool, n int, ts time.Time) {
	if s := o.stream(); s != nil {
		s.Gap(fromA, n, ts)
	}
}

func (o *ownCheck) End(fromA bool, rst bool, ts time.Time) {
	if e, ok := o.s.(capture.Ender); ok {
		e.End(fromA, rst, ts)
	}
}

func (o *ownCheck) Close(ts time.Time) {
	// A connection closed before any byte was never the decoder's.
	if o.s != nil {
		o.s.Close(ts)
	}
}
