package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/profile"
)

// Writer writes findings, then one summary, in one format.
type Writer interface {
	// Finding writes one finding; findings come in the order to print.
	Finding(f detect.Finding) error
	// Summary writes the run's counts, last.
	Summary(s Summary) error
}

// Verdicts in the order they are printed.
var verdicts = detect.Verdicts()

// timeLayout is RFC 3339 with exactly nine fraction digits.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func formatCRC(crc uint32) string {
	var b [10]byte
	b[0], b[1] = '0', 'x'
	const digits = "0123456789abcdef"
	for i := range 8 {
		b[9-i] = digits[crc>>(4*i)&0xf]
	}
	return string(b[:])
}

// TopicName is the topic of f as every output names it: its name, or its
// ID in UUID form when no name is known.
func TopicName(f *detect.Finding) string {
	if f.Topic == "" && f.TopicID != ([16]byte{}) {
		return detect.TopicIDString(f.TopicID)
	}
	return f.Topic
}

func itoa[T ~int8 | ~int16 | ~int32 | ~int64 | ~int](n T) string {
	return strconv.FormatInt(int64(n), 10)
}

// MillisText is a duration in milliseconds as the outputs show one: three
// decimals, "12.345".
func MillisText(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// Harmful reports whether f's records may be in the log more than once:
// its verdict is duplicated, or unconfirmed for a re-send the broker does
// not deduplicate (a producer that is not idempotent, records sent again
// under another epoch or producer ID, or produced twice by the
// application). Every other finding is harmless: deduplicated, single,
// rejected, and an idempotent producer's unconfirmed re-send of the same
// batch, which the broker deduplicates.
func Harmful(f *detect.Finding) bool {
	switch f.Verdict {
	case detect.Duplicated:
		return true
	case detect.Unconfirmed:
		return !f.Idempotent || f.ProducerChange != "" || KindOf(f) == detect.KindRecordDuplicate
	}
	return false
}

// recordsHeld counts the records of a duplicated finding the log holds
// more than once, and their copies beyond the first: a batch appended at k
// offsets holds its N records k times (N records, N*(k-1) extra copies); a
// record-level finding counts each record by the distinct offsets of its
// copies, and the records it does not list (RecordsOmitted) by the first
// record's (AppendedOffsets: they share its attempts). A verdict of
// duplicated with fewer than two offsets known counts two copies.
func recordsHeld(f *detect.Finding) (records, extra int64) {
	k := max(int64(len(f.AppendedOffsets)), 2)
	if KindOf(f) == detect.KindBatch {
		n := int64(f.NumRecords)
		return n, n * (k - 1)
	}
	var offs []int64
	for i := range f.Records {
		offs = offs[:0]
		for _, c := range f.Records[i].Copies {
			if c.Offset >= 0 && !slices.Contains(offs, c.Offset) {
				offs = append(offs, c.Offset)
			}
		}
		kr := int64(len(offs))
		if kr < 2 {
			kr = k
		}
		records++
		extra += kr - 1
	}
	if rest := int64(f.NumRecords) - int64(len(f.Records)); rest > 0 {
		records += rest
		extra += rest * (k - 1)
	}
	return records, extra
}

// recordCount is what one finding adds to the counts of records.
type recordCount struct {
	Duplicated, Extra, Possibly int64 // records
	// DupFindings and PossibleFindings: 1 when the finding is duplicated,
	// or harmful and unconfirmed.
	DupFindings, PossibleFindings int64
}

func (c *recordCount) add(o recordCount, sign int64) {
	c.Duplicated += sign * o.Duplicated
	c.Extra += sign * o.Extra
	c.Possibly += sign * o.Possibly
	c.DupFindings += sign * o.DupFindings
	c.PossibleFindings += sign * o.PossibleFindings
}

func countOf(f *detect.Finding) recordCount {
	var c recordCount
	switch {
	case f.Verdict == detect.Duplicated:
		c.Duplicated, c.Extra = recordsHeld(f)
		c.DupFindings = 1
	case Harmful(f):
		c.Possibly = int64(f.NumRecords)
		c.PossibleFindings = 1
	}
	return c
}

// producerCount is the counts of records of one producer's findings.
type producerCount struct {
	recordCount
	key        profile.ProducerKey
	idempotent bool
	// AppTwice counts the duplicated records the application produced
	// twice (record_duplicate), which no client setting prevents.
	appTwice int64
	// renumbered counts the harmful findings of records sent again under
	// another epoch or producer ID.
	renumbered int64
	order      int // first seen
}

// findingShare is what a finding added, kept while a later report of it
// (a revision: the same ID) may replace it.
type findingShare struct {
	c          recordCount
	topic      string
	producer   profile.ProducerKey
	appTwice   int64
	renumbered int64
}

// Bounds on the counts kept per topic and per producer, and on the
// findings of a live run whose revisions replace their earlier report.
const (
	maxCountedTopics    = detect.MaxTopics
	maxCountedProducers = profile.DefaultMaxProducers
	maxRevisable        = 1 << 16
)

// otherProducers is the key of the producers beyond maxCountedProducers.
var otherProducers = profile.ProducerKey{ProducerID: -2}

// tally counts the records the findings handed to a writer say the log
// holds more than once, in all, per topic and per producer. A finding
// reported again (a live run's revision, with the ID of the first) replaces
// its earlier report's share while it is among the last maxRevisable
// findings with an ID.
type tally struct {
	total      recordCount
	byTopic    map[string]*recordCount
	byProducer map[profile.ProducerKey]*producerCount
	shares     map[uint64]findingShare
	ring       []uint64 // IDs in shares, oldest at next
	next       int
}

func (t *tally) add(f *detect.Finding) {
	sh := findingShare{c: countOf(f), topic: TopicName(f), producer: profile.KeyOf(f.Client.Addr(), f.ClientID, f.ProducerID)}
	if KindOf(f) == detect.KindRecordDuplicate {
		sh.appTwice = sh.c.Duplicated
	}
	if f.ProducerChange != "" && sh.c != (recordCount{}) {
		sh.renumbered = 1
	}
	if f.ID != 0 {
		if old, ok := t.shares[f.ID]; ok {
			t.apply(old, -1, f)
		} else {
			t.remember(f.ID)
		}
		t.shares[f.ID] = sh
	}
	t.apply(sh, 1, f)
}

// remember keeps id among the revisable findings, forgetting the oldest
// beyond maxRevisable.
func (t *tally) remember(id uint64) {
	if t.shares == nil {
		t.shares = make(map[uint64]findingShare)
	}
	if len(t.ring) < maxRevisable {
		t.ring = append(t.ring, id)
		return
	}
	delete(t.shares, t.ring[t.next])
	t.ring[t.next] = id
	t.next = (t.next + 1) % maxRevisable
}

func (t *tally) apply(sh findingShare, sign int64, f *detect.Finding) {
	t.total.add(sh.c, sign)
	if sh.c == (recordCount{}) {
		return
	}
	if t.byTopic == nil {
		t.byTopic = make(map[string]*recordCount)
		t.byProducer = make(map[profile.ProducerKey]*producerCount)
	}
	tc := t.byTopic[sh.topic]
	if tc == nil {
		name := sh.topic
		if len(t.byTopic) >= maxCountedTopics {
			name = detect.OtherTopics
		}
		if tc = t.byTopic[name]; tc == nil {
			tc = &recordCount{}
			t.byTopic[name] = tc
		}
	}
	tc.add(sh.c, sign)
	pc := t.byProducer[sh.producer]
	if pc == nil {
		key := sh.producer
		if len(t.byProducer) >= maxCountedProducers {
			key = otherProducers
		}
		if pc = t.byProducer[key]; pc == nil {
			pc = &producerCount{key: key, idempotent: f.Idempotent, order: len(t.byProducer)}
			t.byProducer[key] = pc
		}
	}
	pc.add(sh.c, sign)
	pc.appTwice += sign * sh.appTwice
	pc.renumbered += sign * sh.renumbered
}

// topic is the counts of one topic.
func (t *tally) topic(name string) recordCount {
	if c := t.byTopic[name]; c != nil {
		return *c
	}
	return recordCount{}
}

// Options says what the table and JSON writers print (NewTableWith,
// NewJSONWith); the zero value prints what NewTable and NewJSON do.
type Options struct {
	// Verdicts, when not empty, are the verdicts of the findings printed;
	// the summary and the headline still count every finding.
	Verdicts []detect.Verdict
	// All prints every finding of the table in full; by default a
	// harmless one (Harmful false) is one line. JSON prints every finding
	// in full either way.
	All bool
	// Width is the most columns a line of the table may take (a
	// terminal's: OutputWidth); 0, no limit. JSON ignores it.
	Width int
}

// shows reports whether f is printed.
func (o *Options) shows(f *detect.Finding) bool {
	return len(o.Verdicts) == 0 || slices.Contains(o.Verdicts, f.Verdict)
}

// ParseVerdicts reads a comma-separated list of verdicts ("duplicated,
// unconfirmed"), each once at most; an unknown one is an error naming it
// and the verdicts there are.
func ParseVerdicts(s string) ([]detect.Verdict, error) {
	var out []detect.Verdict
	for _, f := range strings.Split(s, ",") {
		v := detect.Verdict(strings.ToLower(strings.TrimSpace(f)))
		if v == "" {
			continue
		}
		if !slices.Contains(verdicts[:], v) {
			return nil, fmt.Errorf("%q is no verdict: want a comma-separated list of %s", f, verdictNames())
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no verdict given: want a comma-separated list of %s", verdictNames())
	}
	return out, nil
}

// verdictNames is "duplicated, deduplicated, single, unconfirmed, rejected".
func verdictNames() string {
	names := make([]string, len(verdicts))
	for i, v := range verdicts {
		names[i] = string(v)
	}
	return strings.Join(names, ", ")
}

// topicRecords is the counts of records of the topic of rows[i]; the row
// of detect.OtherTopics (the topics past the Detector's bound) takes in
// those of every topic no row names.
func topicRecords(rows []TopicCount, i int, c *tally) recordCount {
	rc := c.topic(rows[i].Topic)
	if rows[i].Topic != detect.OtherTopics {
		return rc
	}
	for name, tc := range c.byTopic {
		if name != detect.OtherTopics && !slices.ContainsFunc(rows, func(r TopicCount) bool { return r.Topic == name }) {
			rc.add(*tc, 1)
		}
	}
	return rc
}
