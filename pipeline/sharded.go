package pipeline

import (
	"cmp"
	"net/netip"
	"slices"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
)

// Sharded analysis (Options.Workers N, N > 1): the connections of the capture are
// spread over N workers, each with its own Assembler and Decoder, and the
// findings are exactly those of one worker, in the same order.
//
//   - The reader (the calling goroutine) reads the merged capture. It
//     numbers the packets (seq), routes each by the hash of its TCP
//     connection's endpoints (capture.FlowHasher; non-TCP packets go to
//     worker 0, which counts them) and copies it into that worker's batch. Where one Assembler
//     would do its time-driven work (idle timeouts, holes given up), at the
//     same packets by the same capture.FlushGate, it puts a flush in every
//     worker's batch; the end of the input likewise.
//   - The batches are cut in epochs: every epoch sends one batch (maybe
//     empty) to every worker, so that each worker's output for an epoch
//     covers exactly the packets of that epoch.
//   - A worker hands every Decoder event (a decode.Event for the state
//     the connections share: a connection taken as Kafka, a topic named by
//     ID, an error message; an exchange, a fetch, a transaction request)
//     on, tagged with the position of the packet or flush that caused it.
//   - The merger takes each epoch's outputs of all workers and replays
//     their events in capture order: the decode.Events into one
//     decode.Shared (which numbers the connections, names topics by ID and
//     keeps the first error messages as a single Decoder would), the rest
//     into the one Detector. It runs on the reader's goroutine, between
//     epochs, so that N workers and the reader use N+1 goroutines.
//
// Events of a flush or of the end of input come from every worker; one
// Assembler closes those connections in the order of a Go map, that is in
// no particular order; the merger takes worker 0's first, then worker 1's.
//
// One difference remains: the bound on out-of-order data held waiting for
// holes to be filled (AssemblerOptions.MaxBufferedPagesTotal, ~30 MB) is
// split between the workers, so a capture that reaches it (a hole with
// tens of megabytes queued behind it) may give up other holes.

// Sizes of the work handed to the workers.
const (
	// epochBytes and epochPackets end an epoch: packet bytes and packets
	// read, over all workers.
	epochBytes   = 256 << 10
	epochPackets = 2048
	// shardBatches is the number of batches each worker has, so the
	// number of epochs the reader can be ahead of the merger.
	shardBatches = 4
	// batchBytes is the room a batch starts with for packet bytes: an
	// epoch's worth and a large packet.
	batchBytes = epochBytes + 64<<10
)

// itemKind is what a shardItem asks a worker to do.
type itemKind uint8

const (
	itemPacket itemKind = iota // Assembler.Add
	itemFlush                  // Assembler.Flush, before packet seq
	itemEnd                    // end of input, after the last packet
)

// shardItem is one step of a worker, at position seq of the capture.
type shardItem struct {
	seq    uint64
	ts     time.Time // of the packet, or the flush
	length int       // the packet's CaptureInfo.Length
	iface  int       // and InterfaceIndex
	off, n int       // its bytes in shardBatch.data
	link   layers.LinkType
	kind   itemKind
}

// shardBatch is a worker's part of one epoch; data holds copies of the
// packets. Batches are reused: the reader fills them, the worker empties
// them and hands them back.
type shardBatch struct {
	items []shardItem
	data  []byte
}

// eventKind says what a shardEvent carries.
type eventKind uint8

const (
	eventShared   eventKind = iota // shared: for the decode.Shared
	eventExchange                  // x: a complete exchange
	eventFetch                     // fetch: a FetchResponse's batches
	eventInitPID                   // initPID: an InitProducerId exchange
	eventEndTxn                    // endTxn: an EndTxn exchange
	eventConnEnd                   // end: how a connection ended
)

// shardEvent is one thing a worker's Decoder did, at key: 2*seq for the
// flush before packet seq (or the end of input, seq being the packet
// count), 2*seq+1 for packet seq.
type shardEvent struct {
	key    uint64
	kind   eventKind
	x      *decode.Exchange
	shared decode.Event
	// fetch, initPID, endTxn: what a worker's Decoder gave its Sink's
	// optional methods (decode.FetchSink, decode.TxnSink, decode.EndSink).
	fetch   *decode.Fetch
	initPID *decode.InitProducerID
	endTxn  *decode.EndTxn
	conn    *decode.ConnInfo
	end     decode.ConnEnd
}

// shardSink is a worker Decoder's Sink: it files what the Decoder gives it
// as events of the epoch, for the merger to replay in capture order. The
// batches' bytes kept for record prints are detached, to be fingerprinted
// by the merger (with printer, its own) if the Detector asks.
type shardSink struct {
	w       *shardWorker
	printer *decode.Printer
	// every: the Detector fingerprints every batch (--app-duplicates), so
	// the worker does it, in parallel, rather than the merger.
	every bool
}

func (s shardSink) Produce(x *decode.Exchange) {
	for i := range x.Batches {
		b := &x.Batches[i]
		if s.every {
			b.KeepPrints()
			continue
		}
		b.Detach(s.printer)
	}
	s.w.events = append(s.w.events, shardEvent{key: s.w.key, kind: eventExchange, x: x})
}

func (s shardSink) Shared(e decode.Event) {
	s.w.events = append(s.w.events, shardEvent{key: s.w.key, kind: eventShared, shared: e})
}

func (s shardSink) Fetch(f *decode.Fetch) {
	s.w.events = append(s.w.events, shardEvent{key: s.w.key, kind: eventFetch, fetch: f})
}

func (s shardSink) InitProducerID(x *decode.InitProducerID) {
	s.w.events = append(s.w.events, shardEvent{key: s.w.key, kind: eventInitPID, initPID: x})
}

func (s shardSink) ConnEnd(c *decode.ConnInfo, e decode.ConnEnd) {
	s.w.events = append(s.w.events, shardEvent{key: s.w.key, kind: eventConnEnd, conn: c, end: e})
}

func (s shardSink) EndTxn(x *decode.EndTxn) {
	s.w.events = append(s.w.events, shardEvent{key: s.w.key, kind: eventEndTxn, endTxn: x})
}

// shardWorker reassembles and decodes the connections routed to it.
type shardWorker struct {
	asm *capture.Assembler
	dec *decode.Decoder

	key    uint64       // of the item being worked on
	events []shardEvent // of the epoch being worked on

	in      chan *shardBatch
	free    chan *shardBatch
	out     chan []shardEvent
	recycle chan []shardEvent // event slices the merger is done with
}

// sharded is the run of an analysis with workers: the stages of single,
// the Assembler and Decoder once per worker.
type sharded struct {
	asmOpts capture.AssemblerOptions
	workers []*shardWorker
	det     *detect.Detector
	sink    detectSink // det, or a tap in front of it (attempts.go)
	// shared is what the workers' Decoders share, built from their
	// events in capture order.
	shared *decode.Shared
	// printer fingerprints the records of the batches the Detector asks
	// for, on the merger's goroutine; it decodes nothing.
	printer *decode.Printer
	// links are the link types of the packets read (for --write-dups).
	links []layers.LinkType
	// The outputs of the epoch being merged, per worker: received (have),
	// and how far replayed.
	outs [][]shardEvent
	have []bool
	pos  []int
}

// newSharded returns the run of st over n workers. Only an analysis's
// stages are honoured (not ignore, nor an Evidence ring).
func newSharded(st stages, n int) *sharded {
	asmOpts := st.asm
	asmOpts.ExternalFlush = true
	// The workers share the out-of-order data one Assembler may hold, so
	// that memory stays as bounded as with one.
	asmOpts.MaxBufferedPagesTotal = max(capture.DefaultMaxBufferedPagesTotal/n, capture.DefaultMaxBufferedPagesPerConnection)
	st.det.Observe = st.observe
	sp := &sharded{
		asmOpts: asmOpts,
		det:     detect.New(st.det),
		shared:  decode.NewShared(),
		printer: decode.NewPrinter(st.dec),
	}
	sp.shared.NameClusters(st.dec.Clusters)
	sp.sink = sinkOf(st, sp.det)
	for range n {
		w := &shardWorker{
			in:      make(chan *shardBatch, shardBatches),
			free:    make(chan *shardBatch, shardBatches),
			out:     make(chan []shardEvent, shardBatches),
			recycle: make(chan []shardEvent, shardBatches+2),
		}
		for range shardBatches {
			w.free <- &shardBatch{data: make([]byte, 0, batchBytes), items: make([]shardItem, 0, 256)}
		}
		w.dec = decode.New(shardSink{w: w, printer: sp.printer, every: st.det.AllRecords}, st.dec)
		newStream := streamsOf(w.dec)
		if st.wrap != nil {
			newStream = st.wrap(newStream)
		}
		w.asm = capture.NewAssembler(newStream, sp.asmOpts)
		sp.workers = append(sp.workers, w)
	}
	sp.outs, sp.have, sp.pos = make([][]shardEvent, n), make([]bool, n), make([]int, n)
	return sp
}

// read is the reader and the merger, on the calling goroutine: it hands
// every packet of m to its worker, with the flushes, in epochs, merges the
// epochs the workers are done with between two, and returns m's errors
// and whether stop ended the reading (eachPacket).
// The reader stays at most shardBatches epochs ahead of the merger; one
// goroutine doing both leaves the other cores to the workers.
func (sp *sharded) read(m *capture.Merged, onRead func(Read), in Inputs) ([]error, readEnd) {
	for _, w := range sp.workers {
		go w.run()
	}
	var (
		n           = uint64(len(sp.workers))
		gate        = capture.NewFlushGate(sp.asmOpts)
		hasher      = capture.NewFlowHasher()
		cur         = make([]*shardBatch, n)
		seq         uint64
		bytes, pkts int
		inFlight    int // epochs sent and not merged
	)
	take := func() {
		// Never waits: fewer than shardBatches epochs are in flight, and
		// a worker frees a batch before handing its output on.
		for i, w := range sp.workers {
			cur[i] = <-w.free
		}
	}
	send := func() {
		for i, w := range sp.workers {
			w.in <- cur[i]
		}
		inFlight++
		for inFlight > 0 && sp.mergeEpoch(inFlight == shardBatches) {
			inFlight--
		}
	}
	take()
	errs, end := eachPacket(m, onRead, in, func(pkt capture.Packet) {
		if ts := pkt.CI.Timestamp; gate.Due(ts) {
			for _, b := range cur {
				b.items = append(b.items, shardItem{seq: seq, kind: itemFlush, ts: ts})
			}
		}
		if !slices.Contains(sp.links, pkt.LinkType) {
			sp.links = append(sp.links, pkt.LinkType)
		}
		w := uint64(0)
		if h, ok := hasher.Hash(pkt.LinkType, pkt.Data); ok {
			w = (h >> 32) * n >> 32
		}
		b := cur[w]
		b.items = append(b.items, shardItem{seq: seq, kind: itemPacket, link: pkt.LinkType, ts: pkt.CI.Timestamp,
			length: pkt.CI.Length, iface: pkt.CI.InterfaceIndex, off: len(b.data), n: len(pkt.Data)})
		b.data = append(b.data, pkt.Data...)
		seq++
		bytes += len(pkt.Data)
		pkts++
		if bytes >= epochBytes || pkts >= epochPackets {
			send()
			take()
			bytes, pkts = 0, 0
		}
	})
	for _, b := range cur {
		b.items = append(b.items, shardItem{seq: seq, kind: itemEnd})
	}
	send()
	for _, w := range sp.workers {
		close(w.in)
	}
	for ; inFlight > 0; inFlight-- {
		sp.mergeEpoch(true)
	}
	return errs, end
}

// run is a worker's goroutine: one output per batch, in order.
func (w *shardWorker) run() {
	defer close(w.out)
	for b := range w.in {
		select {
		case w.events = <-w.recycle:
		default:
		}
		for i := range b.items {
			it := &b.items[i]
			switch it.kind {
			case itemPacket:
				w.key = 2*it.seq + 1
				w.asm.Add(capture.Packet{
					Data:     b.data[it.off : it.off+it.n],
					CI:       gopacket.CaptureInfo{Timestamp: it.ts, CaptureLength: it.n, Length: it.length, InterfaceIndex: it.iface},
					LinkType: it.link,
				})
			case itemFlush:
				w.key = 2 * it.seq
				w.asm.Flush(it.ts)
			case itemEnd:
				w.key = 2 * it.seq
				w.dec.EndOfInput()
				w.asm.Close()
			}
		}
		b.items, b.data = b.items[:0], b.data[:0]
		w.free <- b
		w.out <- w.events
		w.events = nil
	}
}

// mergeEpoch replays the workers' events of the oldest epoch not merged,
// in capture order, and reports whether it did; unless wait, only if every
// worker is done with it.
func (sp *sharded) mergeEpoch(wait bool) bool {
	outs, have := sp.outs, sp.have
	for i, w := range sp.workers {
		if have[i] {
			continue
		}
		if wait {
			outs[i], have[i] = <-w.out, true
			continue
		}
		select {
		case outs[i] = <-w.out:
			have[i] = true
		default:
			return false
		}
	}
	pos := sp.pos
	clear(pos)
	for {
		best, key := -1, uint64(0)
		for i, evs := range outs {
			if p := pos[i]; p < len(evs) && (best < 0 || evs[p].key < key) {
				best, key = i, evs[p].key
			}
		}
		if best < 0 {
			break
		}
		// Replay best's run of events up to the next worker's: before
		// its next key, or at it if best comes first.
		evs := outs[best]
		next, nextW := uint64(1<<64-1), len(outs)
		for i, o := range outs {
			if i != best && pos[i] < len(o) && o[pos[i]].key < next {
				next, nextW = o[pos[i]].key, i
			}
		}
		p := pos[best]
		for ; p < len(evs) && (evs[p].key < next || evs[p].key == next && best < nextW); p++ {
			sp.replay(&evs[p])
		}
		pos[best] = p
	}
	for i, w := range sp.workers {
		clear(outs[i])
		select {
		case w.recycle <- outs[i][:0]:
		default:
		}
		outs[i], have[i] = nil, false
	}
	return true
}

// replay does what one Decoder would have done for e.
func (sp *sharded) replay(e *shardEvent) {
	switch e.kind {
	case eventShared:
		sp.shared.Apply(e.shared)
	case eventExchange:
		sp.shared.Resolve(e.x)
		sp.sink.Produce(e.x)
	case eventFetch:
		sp.shared.ResolveFetch(e.fetch)
		sp.det.Fetch(e.fetch)
	case eventInitPID:
		sp.sink.InitProducerID(e.initPID)
	case eventEndTxn:
		sp.sink.EndTxn(e.endTxn)
	case eventConnEnd:
		sp.sink.ConnEnd(e.conn, e.end)
	}
}

// finish returns all findings, sorted; the workers have ended.
func (sp *sharded) finish() []detect.Finding {
	return sp.det.Flush()
}

// saslSpans is decode.Decoder.SASLSpans over the workers: a connection is
// one worker's.
func (sp *sharded) saslSpans(a, b netip.AddrPort) []decode.SASLSpan {
	for _, w := range sp.workers {
		if s := w.dec.SASLSpans(a, b); s != nil {
			return s
		}
	}
	return nil
}

// stats sums the workers' counts and lists their connections in ID order.
func (sp *sharded) stats() (capture.Stats, decode.Stats, []decode.ConnSummary) {
	var (
		cs    capture.Stats
		ds    decode.Stats
		conns []decode.ConnSummary
	)
	for _, w := range sp.workers {
		cs.Add(w.asm.Stats())
		ds.Add(w.dec.Stats())
		conns = append(conns, w.dec.Connections()...)
	}
	slices.SortFunc(conns, func(a, b decode.ConnSummary) int {
		return cmp.Compare(a.Info.ID, b.Info.ID)
	})
	return cs, ds, conns
}
