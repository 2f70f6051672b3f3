package html

import (
	"bytes"
	"io"
	"reflect"
	"slices"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/report"
)

// Default bounds of a Store.
const (
	// DefaultStoreFindings is the most findings a Store keeps.
	DefaultStoreFindings = 5000
	// DefaultStoreBytes bounds the estimated memory of the findings a
	// Store keeps (a finding re-sent a hundred times weighs more).
	DefaultStoreBytes = 32 << 20
)

// StoreOptions configure a Store.
type StoreOptions struct {
	// Options are those of the pages written (Evicted is the Store's).
	Options
	// MaxFindings and MaxBytes bound the findings kept, by number and by
	// estimated bytes; each 0 takes its Default.
	MaxFindings, MaxBytes int
}

// Store is a report.Writer that keeps the latest report of each finding
// of a run that reports findings again when they are revised (a streaming
// detect.Detector: the reports of one finding share its Finding.ID), so
// that a page of the run so far can be written at any time: `kdupcap live
// --metrics` serves it at /report. It keeps at most MaxFindings findings
// of at most MaxBytes; past either, it forgets the finding reported
// longest ago (first or last: a revision is a report) and counts it. It
// is not safe for concurrent use.
type Store struct {
	opts    StoreOptions
	byID    map[uint64]*stored
	head    *stored // the ring of kept findings, least recently reported first
	n       int     // findings kept
	size    int     // their estimated bytes
	reports int     // findings first reported, the number of the last one
	evicted int
}

// stored is a finding kept, in the ring by its last report.
type stored struct {
	f          detect.Finding
	num        int // its number on the page: the run's Nth finding first reported
	size       int
	prev, next *stored
}

// NewStore returns an empty Store.
func NewStore(o StoreOptions) *Store {
	if o.MaxFindings <= 0 {
		o.MaxFindings = DefaultStoreFindings
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultStoreBytes
	}
	return &Store{opts: o, byID: make(map[uint64]*stored)}
}

// Finding keeps f in place of the earlier report of the same Finding.ID,
// if kept; a Finding of ID 0 (a detector that reports each finding once)
// is always a finding of its own. It keeps of f what a page shows and
// counts (its first records, their first bytes: see keepOf), copied: f
// stays the caller's. It then forgets the findings reported longest ago
// while past the bounds.
func (s *Store) Finding(f detect.Finding) error {
	k := keepOf(&f)
	sz := sizeOf(&k)
	e := s.byID[f.ID]
	if f.ID == 0 || e == nil {
		s.reports++
		e = &stored{num: s.reports}
		if f.ID != 0 {
			s.byID[f.ID] = e
		}
		s.n++
	} else {
		s.unlink(e)
		s.size -= e.size
	}
	e.f, e.size = k, sz
	s.size += sz
	s.link(e)
	for s.n > 1 && (s.n > s.opts.MaxFindings || s.size > s.opts.MaxBytes) {
		s.evict(s.head)
	}
	return nil
}

// Summary does nothing: a page takes the summary it is given.
func (s *Store) Summary(report.Summary) error { return nil }

// Len is the number of findings kept.
func (s *Store) Len() int { return s.n }

// Evicted is the number of findings forgotten to stay within the bounds.
func (s *Store) Evicted() int { return s.evicted }

// Page returns a Writer of one page to w, of the Store's Options, already
// handed the findings kept, in the order first reported, each numbered as
// the run's Nth finding first reported (so #fN names the same finding on
// every page of the run; a finding revised after it was forgotten comes
// back under a new number); the page says how many were forgotten. Hand
// it the producer profiles (and the timeline), then the summary of the run
// so far, whose Summary writes the page. The Writer holds copies: the
// Store may take more findings meanwhile.
func (s *Store) Page(w io.Writer) (*Writer, error) {
	o := s.opts.Options
	o.Evicted = s.evicted
	hw := New(w, o)
	kept := make([]*stored, 0, s.n)
	for e := s.head; e != nil; e = e.next {
		kept = append(kept, e)
		if e.next == s.head {
			break
		}
	}
	slices.SortFunc(kept, func(a, b *stored) int { return a.num - b.num })
	for _, e := range kept {
		if err := hw.finding(e.f, e.num); err != nil {
			return nil, err
		}
	}
	return hw, nil
}

// link puts e last in the ring (the most recently reported).
func (s *Store) link(e *stored) {
	if s.head == nil {
		e.prev, e.next = e, e
		s.head = e
		return
	}
	last := s.head.prev
	e.prev, e.next = last, s.head
	last.next = e
	s.head.prev = e
}

// unlink takes e out of the ring.
func (s *Store) unlink(e *stored) {
	if e.next == e {
		s.head = nil
	} else {
		e.prev.next, e.next.prev = e.next, e.prev
		if s.head == e {
			s.head = e.next
		}
	}
	e.prev, e.next = nil, nil
}

// evict forgets e.
func (s *Store) evict(e *stored) {
	s.unlink(e)
	if e.f.ID != 0 {
		delete(s.byID, e.f.ID)
	}
	s.n--
	s.size -= e.size
	s.evicted++
}

// keepOf is what the Store keeps of f: f with its records copied, the
// first maxRecordsShown of them with at most recordBytesShown bytes of
// their key and value (the lengths kept) and no headers, as the page
// shows them. A record-level finding keeps the copies of its other
// records too (their offsets count the records held twice); a batch
// finding counts its records by NumRecords and keeps no other.
func keepOf(f *detect.Finding) detect.Finding {
	k := *f
	if len(f.Records) == 0 {
		return k
	}
	n := min(len(f.Records), maxRecordsShown)
	record := report.KindOf(f) != detect.KindBatch
	if record {
		n = len(f.Records)
	}
	k.Records = make([]detect.Record, n)
	for i := range n {
		r := &f.Records[i]
		if i >= maxRecordsShown {
			k.Records[i] = detect.Record{Offset: r.Offset, OffsetDelta: r.OffsetDelta, TimestampMillis: r.TimestampMillis,
				KeyLen: r.KeyLen, ValueLen: r.ValueLen, Hash: r.Hash, Copies: slices.Clone(r.Copies)}
			continue
		}
		c := *r
		c.Key, c.Value, c.Headers, c.Copies = clip(r.Key), clip(r.Value), nil, slices.Clone(r.Copies)
		k.Records[i] = c
	}
	return k
}

// clip copies the first recordBytesShown bytes of b; nil stays nil.
func clip(b []byte) []byte {
	if b == nil {
		return nil
	}
	return bytes.Clone(b[:min(len(b), recordBytesShown)])
}

// Sizes of what a kept finding holds, for sizeOf.
var (
	findingBytes = int(reflect.TypeFor[detect.Finding]().Size())
	attemptBytes = int(reflect.TypeFor[detect.Attempt]().Size()) +
		int(reflect.TypeFor[detect.Response]().Size()) + int(reflect.TypeFor[detect.AttemptBatch]().Size())
	recordBytes = int(reflect.TypeFor[detect.Record]().Size())
	copyBytes   = int(reflect.TypeFor[detect.RecordCopy]().Size())
	fetchBytes  = int(reflect.TypeFor[detect.WireExchange]().Size())
)

// sizeOf estimates the bytes f holds: its struct, attempts, records and
// the strings and offsets it names.
func sizeOf(f *detect.Finding) int {
	n := findingBytes + len(f.Reason) + len(f.Topic) + len(f.Cluster) + len(f.AppendedOffsets)*8 +
		len(f.FetchedOffsets)*8 + len(f.Fetches)*fetchBytes + len(f.Attempts)*attemptBytes
	if f.ClientID != nil {
		n += len(*f.ClientID)
	}
	for i := range f.Records {
		r := &f.Records[i]
		n += recordBytes + len(r.Key) + len(r.Value) + len(r.Copies)*copyBytes
	}
	return n
}
