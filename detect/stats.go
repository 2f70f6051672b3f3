package detect

import (
	"cmp"
	"encoding/hex"
	"maps"
	"slices"
	"time"

	"github.com/kdupcap/kdupcap/decode"
)

// Stats counts what a Detector saw.
type Stats struct {
	Exchanges int64 // exchanges handed to Produce
	Batches   int64 // batches in them, resends included
	Records   int64 // sum of their NumRecords
	Resends   int64 // attempts after the first of a batch
	Findings  int64
	ByVerdict map[Verdict]int64
	// Evicted counts batches decided early because MaxBatches was reached;
	// a later resend of one of them is not grouped with it.
	Evicted int64
	// EvictedAge is the shortest time, in packet time, between an evicted
	// batch's last attempt and its eviction: a re-send later than that
	// after the attempt before it may have gone unmatched. 0 when none
	// was evicted.
	EvictedAge time.Duration
	// Expired counts batches forgotten because Window passed after their
	// last attempt.
	Expired int64
	// Streaming mode only: Settled counts findings reported because Settle
	// passed with no retry after an answer that allowed one; Revisions
	// counts reports of a finding after its first (Findings counts each
	// finding once, and ByVerdict by its latest verdict).
	Settled   int64
	Revisions int64
	// Record-level matching: RecordPrints counts the record prints filed,
	// RecordsEvicted those forgotten early because MaxRecords was reached
	// (a later copy of one is not matched), RecordFindings the
	// record-level findings (also counted in Findings and ByVerdict).
	RecordPrints   int64
	RecordsEvicted int64
	RecordFindings int64
	// RecordsNotKept counts the batches whose records (decode's
	// Options.Records) were not kept, the records held being at their
	// bound: their findings show no records.
	RecordsNotKept int64
	// ConnEndsForgotten counts the connection ends (decode.EndSink) not
	// kept because more were remembered at once than the bound: attempts
	// on those connections show no end.
	ConnEndsForgotten int64
	// RecordsAmbiguous counts the record prints not matched because their
	// own batch holds the same record content again: not distinctive.
	RecordsAmbiguous int64
	// Echoes counts the exchanges that were copies of a request seen on
	// another connection (a proxy's two legs, NAT, a capture given twice:
	// echo.go), folded into the first copy: not attempts, nor counted in
	// Batches, Records or Topics. EchoLegs names the first MaxEchoLegs
	// pairs of connections they came on.
	Echoes   int64
	EchoLegs []EchoLeg
	// Remembered is the number of batches remembered now.
	Remembered int
	// Topics holds the per-topic counts, sorted by Topic; beyond
	// MaxTopics distinct topics, the counts of every further one are
	// summed in one entry named OtherTopics, and TopicsOverflow counts
	// the batches it took.
	Topics         []TopicStats
	TopicsOverflow int64
}

// MaxTopics bounds the topics a Detector counts one by one, so that a
// capture of batches each to a new topic (junk, or an attack) costs
// bounded memory: a cluster has that many topics at most in a capture
// worth reading.
const MaxTopics = 10000

// OtherTopics is the Topic of the entry summing the topics beyond
// MaxTopics.
const OtherTopics = "(other topics)"

// TopicStats counts one topic.
type TopicStats struct {
	// Topic is the name, or the topic ID in UUID form when no name is known.
	Topic      string
	TopicID    [16]byte // zero unless requests named the topic by ID
	Batches    int64
	Records    int64
	Findings   int64
	Duplicated int64 // findings with verdict duplicated
}

// topicKey names a topic by ID when it has one, else by name.
type topicKey struct {
	name string
	id   [16]byte
}

// Stats returns a copy of the counts so far.
func (d *Detector) Stats() Stats {
	s := d.stats
	s.Remembered = d.remembered
	s.ByVerdict = maps.Clone(d.stats.ByVerdict)
	s.EchoLegs = slices.Clone(d.echo.legs)
	s.Topics = make([]TopicStats, 0, len(d.topics))
	for _, t := range d.topics {
		s.Topics = append(s.Topics, *t)
	}
	slices.SortFunc(s.Topics, func(a, b TopicStats) int {
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return slices.Compare(a.TopicID[:], b.TopicID[:])
	})
	// A topic written by name (before Produce v13) and by an ID a Metadata
	// response named is one topic: the entry by name sorts first (zero ID)
	// and takes in the one by ID.
	merged := s.Topics[:0]
	for _, t := range s.Topics {
		if n := len(merged); n > 0 && mergeable(&merged[n-1], &t) {
			m := &merged[n-1]
			m.TopicID = t.TopicID
			m.Batches += t.Batches
			m.Records += t.Records
			m.Findings += t.Findings
			m.Duplicated += t.Duplicated
			continue
		}
		merged = append(merged, t)
	}
	s.Topics = merged
	return s
}

// mergeable reports whether b, sorted right after a, counts the same topic:
// a by name only, b by an ID that was named a's name.
func mergeable(a, b *TopicStats) bool {
	return a.Topic == b.Topic && a.TopicID == [16]byte{} && b.TopicID != [16]byte{} &&
		b.Topic != TopicIDString(b.TopicID)
}

func (d *Detector) countBatch(bt *decode.Batch) {
	d.stats.Batches++
	d.stats.Records += int64(bt.NumRecords)
	t := d.topic(bt.Topic, bt.TopicID)
	if t.Topic == OtherTopics {
		d.stats.TopicsOverflow++
	}
	t.Batches++
	t.Records += int64(bt.NumRecords)
}

// topic returns the counts of a topic, adding them when new.
func (d *Detector) topic(name string, id [16]byte) *TopicStats {
	k := topicKey{name: name, id: id}
	if id != ([16]byte{}) {
		k.name = ""
	}
	t := d.topics[k]
	if t == nil && len(d.topics) >= MaxTopics {
		k = topicKey{name: OtherTopics}
		if t = d.topics[k]; t == nil {
			t = &TopicStats{Topic: OtherTopics}
			d.topics[k] = t
		}
		return t
	}
	if t == nil {
		t = &TopicStats{Topic: name, TopicID: id}
		if name == "" && id != ([16]byte{}) {
			t.Topic = TopicIDString(id)
		}
		d.topics[k] = t
	} else if name != "" && t.Topic != name {
		t.Topic = name // a Metadata response named the ID since
	}
	return t
}

// TopicIDString formats a topic ID (Produce v13) in UUID form: 8-4-4-4-12
// lower-case hex digits, as Kafka's tools print it.
func TopicIDString(id [16]byte) string {
	var b [36]byte
	hex.Encode(b[0:8], id[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], id[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], id[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], id[8:10])
	b[23] = '-'
	hex.Encode(b[24:], id[10:])
	return string(b[:])
}
