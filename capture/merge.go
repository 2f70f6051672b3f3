package capture

import (
	"container/heap"
	"errors"
	"io"
	"slices"
	"time"
)

// MergeOptions configures Merge.
type MergeOptions struct {
	// ClockSkew[i] is added to every timestamp of srcs[i], in the order the
	// merge uses and in the packets it hands out: a capture host whose
	// clock ran 250ms late gets +250ms. Missing entries (a shorter or nil
	// slice) are zero.
	ClockSkew []time.Duration
	// OnSecrets, if set, is handed the TLS key log of every pcapng
	// Decryption Secrets Block with the name of its source, before any
	// packet read after the block is handed out (Source.Secrets).
	OnSecrets func(source string, keylog []byte)
	// ReadAheadPlain reads a pcap that is not compressed ahead too, on a
	// goroutine of its own, as compressed sources are: for a caller that
	// decodes on another goroutine, where this one is the busier
	// (pcapahead.go).
	ReadAheadPlain bool
}

// Layout says how the time spans of merged sources relate.
type Layout int

const (
	// Consecutive sources each start at or after the end of the one before
	// (in time, not in argument order): a capture rotated into several
	// files (tcpdump -C), or a single source.
	Consecutive Layout = iota
	// Overlapping sources were captured at the same time, typically one per
	// host; the merge interleaves their packets.
	Overlapping
)

func (l Layout) String() string {
	if l == Overlapping {
		return "overlapping"
	}
	return "consecutive"
}

// Span is what a merge has read of one source so far, skew applied.
type Span struct {
	Name        string
	First, Last time.Time // earliest and latest; zero until the source gave a packet
	Packets     int64
}

// Merged reads several sources as one, in timestamp order: a streaming
// k-way merge, as mergecap does, keeping one packet per source and a heap
// of them, so each packet costs O(log k) and no allocation.
//
// Packets with equal timestamps come in the order of srcs (stable), and
// each source's own packets stay in the order of its file even when their
// timestamps go backwards. A rotated capture (consecutive files) therefore
// merges into the same order as reading the files one after the other, and
// the merge need not be told which kind of set it reads; Layout says.
//
// # Ownership
//
// A packet's Data belongs to the source it came from and stays valid until
// the next call to Merged.Next: the merge advances a source only on the call
// after it handed out that source's packet.
//
// # Errors
//
// An error of one source (truncated, corrupt) is returned by Next as that
// source's *InputError, naming the file and the byte offset reached; the
// source is then dropped and the next call goes on with the others.
// Packets read from it before the error stay valid results. Next returns
// io.EOF once every source has ended or failed.
//
// Merged is not safe for concurrent use.
type Merged struct {
	srcs   []*Source
	skew   []time.Duration
	heads  []*Packet // heads[i]: the next packet of srcs[i] (its Source's), nil at its end
	h      mergeHeap // sources with a head packet, earliest first
	spans  []Span
	prime  int  // sources primed so far (their first packet read)
	primed bool // every source primed and the heap built
	out    bool // h[0]'s packet has been handed out; advance it first
	// onSecrets is MergeOptions.OnSecrets, plain ReadAheadPlain.
	onSecrets func(source string, keylog []byte)
	plain     bool
	// ahead[i]: source i is decompressed ahead (Source.readAhead), as at
	// most maxReadAhead are at once.
	ahead  []bool
	aheadN int
	bufs   bufPool // their chunks
	// ended[i]: source i was ended early (EndSources); nil until one is.
	ended []bool
}

// maxReadAhead is how many compressed sources a merge decompresses ahead at
// once: those being read after priming, first come. With two cores, more
// would not decompress faster, and each holds up to 3.75 MiB of chunks (6
// of 640 KiB); rotated files are read one after the other, so one at a time is the
// usual.
const maxReadAhead = 2

// Merge returns a merge of srcs (any number, none included), in the order of
// their timestamps plus the skew of opts. The Merged owns the sources from
// then on: Close closes every one. No source is read before the first Next;
// all are then open together, so a rotated set of many files holds one file
// descriptor and read buffer per file. A compressed source read past its
// first packet is decompressed ahead on a goroutine of its own, at most
// maxReadAhead at once, with chunks a source read to its end hands on to
// the next.
func Merge(srcs []*Source, opts MergeOptions) *Merged {
	m := &Merged{
		srcs:  srcs,
		skew:  make([]time.Duration, len(srcs)),
		heads: make([]*Packet, len(srcs)),
		h:     make(mergeHeap, 0, len(srcs)),
		spans: make([]Span, len(srcs)),
		ahead: make([]bool, len(srcs)),

		onSecrets: opts.OnSecrets,
		plain:     opts.ReadAheadPlain,
	}
	copy(m.skew, opts.ClockSkew)
	for i, s := range srcs {
		m.spans[i].Name = s.name
	}
	return m
}

// Next returns the earliest packet not yet returned, io.EOF after the last,
// or an *InputError of one source (see Merged). Its CI.Timestamp has the
// source's skew added.
func (m *Merged) Next() (Packet, error) {
	for m.prime < len(m.srcs) {
		i := m.prime
		m.prime++
		var err error
		if m.ended == nil || !m.ended[i] {
			err = m.read(i)
		}
		if m.prime == len(m.srcs) {
			heap.Init(&m.h)
			m.primed = true
		}
		if err != nil {
			return Packet{}, err
		}
	}
	if m.out {
		m.out = false
		i := m.h[0].src
		if err := m.read(i); err != nil {
			return Packet{}, err
		}
	}
	if len(m.h) == 0 {
		return Packet{}, io.EOF
	}
	m.out = true
	return *m.heads[m.h[0].src], nil
}

// read reads the next packet of source i into heads[i] and sets its place
// in the heap: appended while priming, fixed at the top afterwards (where i
// is, having just been handed out), removed at the source's end or error.
func (m *Merged) read(i int) error {
	if m.primed && !m.ahead[i] && m.aheadN < maxReadAhead && m.srcs[i].readAhead(&m.bufs, m.plain) {
		m.ahead[i] = true
		m.aheadN++
	}
	src := m.srcs[i]
	err := src.next()
	if m.onSecrets != nil {
		for _, k := range src.newSecrets() {
			m.onSecrets(src.name, k)
		}
	}
	if err != nil {
		if m.ahead[i] {
			m.ahead[i] = false
			m.aheadN--
		}
		m.heads[i] = nil
		if m.primed {
			heap.Pop(&m.h)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	pkt := &src.pkt
	if m.skew[i] != 0 {
		pkt.CI.Timestamp = pkt.CI.Timestamp.Add(m.skew[i])
	}
	m.heads[i] = pkt
	ts := pkt.CI.Timestamp
	sp := &m.spans[i]
	if sp.Packets == 0 || ts.Before(sp.First) {
		sp.First = ts
	}
	if sp.Packets == 0 || ts.After(sp.Last) {
		sp.Last = ts
	}
	sp.Packets++
	if m.primed {
		m.h[0].ts = ts
		if len(m.h) > 1 { // a single source stays where it is
			heap.Fix(&m.h, 0)
		}
	} else {
		m.h = append(m.h, mergeItem{ts: ts, src: i})
	}
	return nil
}

// EndSources ends early every source whose name (as given to Open or
// NewSource) end reports true for: its packets not yet returned are
// dropped, as if it had reached its end there, and the merge goes on with
// the others. A run told to stop ends its files at once this way, while
// standard input, whose bytes are gone from the pipe once read, ends
// itself after those it took. The sources stay open until Close: the
// packets already returned may still be held (Packet.Hold).
func (m *Merged) EndSources(end func(*Source) bool) {
	for i, src := range m.srcs {
		if !end(src) || (m.ended != nil && m.ended[i]) {
			continue
		}
		if m.ended == nil {
			m.ended = make([]bool, len(m.srcs))
		}
		m.ended[i] = true
		if m.heads[i] == nil {
			continue // not primed yet, or at its end
		}
		m.heads[i] = nil
		if !m.primed {
			// Its head is in the heap being built.
			m.h = slices.DeleteFunc(m.h, func(it mergeItem) bool { return it.src == i })
			continue
		}
		at := slices.IndexFunc(m.h, func(it mergeItem) bool { return it.src == i })
		if at < 0 {
			continue // a head is always in the heap once primed
		}
		if at == 0 && m.out {
			m.out = false // its packet was handed out: not to be read on from
		}
		heap.Remove(&m.h, at)
	}
}

// Spans returns what has been read of each source so far, in the order of
// srcs; after io.EOF, each source's whole time span (skew applied).
func (m *Merged) Spans() []Span {
	return slices.Clone(m.spans)
}

// Layout says whether the sources' time spans, as read so far, overlap
// (files captured at the same time on several hosts) or follow each other
// (a rotated capture), whatever the order the sources were given in. A span
// that starts exactly where another ends does not overlap it. The merge
// orders packets the same way in both cases; Layout is for telling the user.
func (m *Merged) Layout() Layout {
	var spans []Span
	for _, sp := range m.spans {
		if sp.Packets > 0 {
			spans = append(spans, sp)
		}
	}
	slices.SortStableFunc(spans, func(a, b Span) int { return a.First.Compare(b.First) })
	var end time.Time
	for i, sp := range spans {
		if i > 0 && sp.First.Before(end) {
			return Overlapping
		}
		if i == 0 || sp.Last.After(end) {
			end = sp.Last
		}
	}
	return Consecutive
}

// InputBytes is the sum of Source.InputBytes over the merged sources,
// ended ones included: the progress of reading them all.
func (m *Merged) InputBytes() int64 {
	var n int64
	for _, s := range m.srcs {
		n += s.InputBytes()
	}
	return n
}

// CaptureBytes is the sum of the sources' Source.CaptureBytes.
func (m *Merged) CaptureBytes() int64 {
	var n int64
	for _, s := range m.srcs {
		n += s.CaptureBytes()
	}
	return n
}

// Close closes every source and returns the first error.
func (m *Merged) Close() error {
	var first error
	for _, s := range m.srcs {
		if err := s.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// mergeItem is a source in the heap, keyed by its head packet's timestamp.
type mergeItem struct {
	ts  time.Time
	src int
}

// mergeHeap orders sources by their head packet's timestamp, then by their
// index, which makes the merge stable. Only heap.Init, Fix, Pop and Remove
// are used, so no item is ever boxed.
type mergeHeap []mergeItem

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	if c := h[i].ts.Compare(h[j].ts); c != 0 {
		return c < 0
	}
	return h[i].src < h[j].src
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(mergeItem)) }
func (h *mergeHeap) Pop() any {
	old := *h
	*h = old[:len(old)-1]
	return nil // the caller knows which item left: no boxing
}
