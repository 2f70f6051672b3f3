package fleet

import (
	"container/heap"
	"math"
	"slices"
	"time"
)

// Merging the hosts. Each host's records come in its own capture order,
// but the records of many hosts, spread over partitions fetched each at
// its own pace, come interleaved as they were fetched. A Merger holds them
// and hands them on in capture-time order: a record is released once
// every stream (a run of a host, on one partition) has shown a record as
// late or later (its watermark), or once the newest watermark is Lateness
// past it, so that a stream that lags or went quiet holds the others back
// by Lateness at most. A record that comes after its time was released is
// late: handed on at once, counted, and by how much it was late. How far
// each host's watermark lagged behind the newest is kept, for the summary.

// Defaults of MergeOptions.
const (
	DefaultLateness = 2 * time.Second
	DefaultMaxHeld  = 1 << 16
)

// MergeOptions configure a Merger.
type MergeOptions struct {
	// Lateness bounds how long (capture time) a record is held for the
	// slower streams (0: DefaultLateness).
	Lateness time.Duration
	// MaxHeld bounds the records held; beyond it the oldest is released
	// early, counted in HostStats.Forced (0: DefaultMaxHeld).
	MaxHeld int
}

// HostStats is what a Merger saw of one host.
type HostStats struct {
	Host string
	// Attempts and ConnEnds count its records released.
	Attempts, ConnEnds int64
	// Late counts its records that came after their time was released,
	// MaxLate by how much the latest was.
	Late    int64
	MaxLate time.Duration
	// MaxLag is how far its watermark was behind the newest host's at
	// most, when a record was released.
	MaxLag time.Duration
	// Forced counts its records released early by MaxHeld.
	Forced int64
}

type heldEvent struct {
	ev    Event
	at    int64
	order uint64
	gen   uint32
	part  int32
}

type eventHeap []heldEvent

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].order < h[j].order
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(heldEvent)) }
func (h *eventHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = heldEvent{}
	*h = old[:len(old)-1]
	return x
}

// watermark is one stream's: a host's run on one partition.
type watermark struct {
	stream streamKey
	part   int32
	at     int64
}

type wmKey struct {
	stream streamKey
	part   int32
}

// Merger merges the records of many hosts by capture time, with bounded
// lateness. It is not safe for concurrent use.
type Merger struct {
	lateness int64
	maxHeld  int
	h        eventHeap
	order    uint64
	wmIdx    map[wmKey]int32
	wm       []watermark
	// released is the capture time released so far, Unix ns.
	released int64
	newest   int64
	// gens: a partition's generation, bumped when it is dropped (Drop);
	// held records of an older one are dropped when popped.
	gens  map[int32]uint32
	hosts map[string]*HostStats
}

// NewMerger returns a Merger with o.
func NewMerger(o MergeOptions) *Merger {
	if o.Lateness <= 0 {
		o.Lateness = DefaultLateness
	}
	if o.MaxHeld <= 0 {
		o.MaxHeld = DefaultMaxHeld
	}
	return &Merger{lateness: int64(o.Lateness), maxHeld: o.MaxHeld, wmIdx: make(map[wmKey]int32),
		released: math.MinInt64, newest: math.MinInt64, gens: make(map[int32]uint32), hosts: make(map[string]*HostStats)}
}

func (m *Merger) host(name string) *HostStats {
	hs, ok := m.hosts[name]
	if !ok {
		hs = &HostStats{Host: name}
		m.hosts[name] = hs
	}
	return hs
}

// maxStreams bounds the watermarks kept; beyond it they are all forgotten
// (and re-learned from the next records).
const maxStreams = 1 << 14

// Add takes one record read from partition part.
func (m *Merger) Add(ev Event, part int32) {
	at := ev.At.UnixNano()
	k := wmKey{streamKey{ev.Host, ev.Run}, part}
	i, ok := m.wmIdx[k]
	if !ok {
		if len(m.wm) >= maxStreams {
			clear(m.wmIdx)
			m.wm = m.wm[:0]
		}
		i = int32(len(m.wm))
		m.wmIdx[k] = i
		m.wm = append(m.wm, watermark{stream: k.stream, part: part, at: at})
	}
	w := &m.wm[i]
	w.at = max(w.at, at)
	m.newest = max(m.newest, at)
	if at < m.released {
		hs := m.host(ev.Host)
		hs.Late++
		hs.MaxLate = max(hs.MaxLate, time.Duration(m.released-at))
	}
	m.order++
	heap.Push(&m.h, heldEvent{ev: ev, at: at, order: m.order, gen: m.gens[part], part: part})
}

// horizon is the capture time up to which records may be released.
func (m *Merger) horizon() int64 {
	low := int64(math.MaxInt64)
	for _, w := range m.wm {
		low = min(low, w.at)
	}
	if len(m.wm) == 0 {
		return m.released
	}
	return max(low, m.newest-m.lateness, m.released)
}

// Release appends to out the records that may go, in capture-time order,
// and returns it; all, when all is set (the input is idle or ended).
func (m *Merger) Release(out []Event, all bool) []Event {
	hz := m.horizon()
	if all {
		hz = math.MaxInt64
	}
	if m.h.Len() > 0 && hz > m.released {
		m.lags()
	}
	for m.h.Len() > 0 {
		top := &m.h[0]
		forced := m.h.Len() > m.maxHeld
		if top.at > hz && !forced {
			break
		}
		e := heap.Pop(&m.h).(heldEvent)
		if e.gen != m.gens[e.part] {
			continue
		}
		hs := m.host(e.ev.Host)
		if forced && e.at > hz {
			hs.Forced++
		}
		switch e.ev.Kind {
		case KindAttempt:
			hs.Attempts++
		case KindConnEnd:
			hs.ConnEnds++
		}
		m.released = max(m.released, e.at)
		out = append(out, e.ev)
	}
	if !all && hz != math.MaxInt64 {
		m.released = max(m.released, hz)
	}
	return out
}

// lags notes how far each host's watermark is behind the newest.
func (m *Merger) lags() {
	for _, w := range m.wm {
		if lag := time.Duration(m.newest - w.at); lag > 0 {
			hs := m.host(w.stream.host)
			hs.MaxLag = max(hs.MaxLag, lag)
		}
	}
}

// Drop forgets the held records and the watermarks of partition part (its
// partition was revoked: its next owner reads them).
func (m *Merger) Drop(part int32) {
	m.gens[part]++
	kept := m.wm[:0]
	for _, w := range m.wm {
		if w.part != part {
			kept = append(kept, w)
		}
	}
	m.wm = kept
	clear(m.wmIdx)
	for i, w := range m.wm {
		m.wmIdx[wmKey{w.stream, w.part}] = int32(i)
	}
}

// Held is how many records the Merger holds.
func (m *Merger) Held() int { return m.h.Len() }

// Hosts returns what the Merger saw of each host, by name.
func (m *Merger) Hosts() []HostStats {
	out := make([]HostStats, 0, len(m.hosts))
	for _, hs := range m.hosts {
		out = append(out, *hs)
	}
	slices.SortFunc(out, func(a, b HostStats) int {
		switch {
		case a.Host < b.Host:
			return -1
		case a.Host > b.Host:
			return 1
		}
		return 0
	})
	return out
}
