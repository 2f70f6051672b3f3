package html

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/profile"
	"github.com/kdupcap/kdupcap/report"
)

// Default bounds of a page: the findings drawn in full, the rows of the
// findings table, the re-send marks on the timeline, the producers and
// the records of a finding shown. What is past them is counted and said.
const (
	DefaultMaxFull      = 600
	DefaultMaxRows      = 3000
	DefaultMaxMarks     = 10000
	DefaultMaxProducers = 100
	// DefaultMaxFullBytes bounds the text of the findings drawn in full
	// (an estimate: their drawing and the strings of their tables).
	DefaultMaxFullBytes = 2 << 20
	maxRecordsShown     = 20
	recordBytesShown    = 64
)

// Options says what the page shows and how much of it.
type Options struct {
	// Verdicts, when not empty, are the verdicts of the findings listed;
	// the headline, the counts and the timeline's marks take every finding.
	Verdicts []detect.Verdict
	// Title heads the page; "kdupcap report" when empty.
	Title string
	// MaxFull, MaxRows, MaxMarks, MaxProducers and MaxFullBytes bound the
	// page; each 0 takes its Default.
	MaxFull, MaxRows, MaxMarks, MaxProducers, MaxFullBytes int
	// Evicted counts the findings of the run not handed to the Writer (a
	// Store's evictions); the page says so.
	Evicted int
}

// Writer is the HTML report.Writer (and report.ProducerWriter): it keeps
// what it draws of each finding, bounded by its Options, and writes the
// page at Summary. It is not safe for concurrent use.
type Writer struct {
	w    io.Writer
	opts Options
	head *report.Headline
	// tl is the run's latency over capture time (Timeline); nil until
	// handed.
	tl *profile.Timeline

	seen     int
	rows     []findingRow
	full     []findingFull
	marks    []mark
	marksOut int // re-sends not marked (past MaxMarks)
	rowsOut  int // findings listed but not in the table (past MaxRows)
	fullOut  int // listed findings not drawn in full (past MaxFull)
	fullSize int // estimated bytes of the findings drawn in full
	hidden   int // findings --verdict did not list
	first    time.Time
	last     time.Time

	producers    []producerView
	producersOut int
	done         bool
}

// New returns a Writer of one page to w.
func New(w io.Writer, o Options) *Writer {
	if o.Title == "" {
		o.Title = "kdupcap report"
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MaxFull, DefaultMaxFull)
	def(&o.MaxRows, DefaultMaxRows)
	def(&o.MaxMarks, DefaultMaxMarks)
	def(&o.MaxProducers, DefaultMaxProducers)
	def(&o.MaxFullBytes, DefaultMaxFullBytes)
	return &Writer{w: w, opts: o, head: report.NewHeadline()}
}

// findingRow is a finding's row in the findings table.
type findingRow struct {
	Num       int
	Verdict   string
	Harmful   bool
	Kind      string
	Topic     string
	Partition int32
	Producer  string
	Broker    string
	Attempts  int
	Records   int32
	Time      string
	Full      bool // drawn in full: the row links to it
}

// findingFull is a finding drawn in full.
type findingFull struct {
	findingRow
	Reason     string
	Offsets    string
	Scope      string
	Match      string
	Omitted    int // attempts not kept by detect
	Lanes      svgText
	Rows       []attemptRow // its attempts
	RecordRows []recordRow  // its records shown
	RecsOut    int
}

// size estimates the bytes ff takes in the page: its texts and the
// markup around each row.
func (ff *findingFull) size() int {
	n := 1200 + len(ff.Reason) + len(ff.Offsets) + len(ff.Producer) + len(ff.Topic) + len(ff.Lanes)
	for _, a := range ff.Rows {
		n += 120 + len(a.Time) + len(a.Cause) + len(a.Answer) + len(a.Offset) + len(a.Latency)
	}
	for _, r := range ff.RecordRows {
		n += 80 + len(r.Offset) + len(r.Key) + len(r.Value)
	}
	return n
}

type attemptRow struct {
	N           int
	Conn        uint64
	Correlation int32
	Time        string
	Cause       string
	Answer      string
	Offset      string
	Latency     string
	TimeoutMs   int32
}

type recordRow struct {
	OffsetDelta int32
	Offset      string
	Key, Value  string
	Copies      int
}

// mark is a re-send on the timeline.
type mark struct {
	t       time.Time
	verdict int // index in detect.Verdicts
	num     int
}

func verdictIndex(v detect.Verdict) int {
	vs := detect.Verdicts()
	if i := slices.Index(vs[:], v); i >= 0 {
		return i
	}
	return len(vs) - 1
}

// Finding takes f: counts it for the headline, adds its answered attempts
// to the timeline and its re-sends to the marks, and keeps its row and
// drawing within the bounds. It keeps no reference into f.
func (w *Writer) Finding(f detect.Finding) error { return w.finding(f, w.seen+1) }

// finding is Finding with f numbered num on the page (a Store's findings
// keep the number of their first report).
func (w *Writer) finding(f detect.Finding, num int) error {
	w.seen++
	w.head.Finding(&f)
	vi := verdictIndex(f.Verdict)
	for i := range f.Attempts {
		a := &f.Attempts[i]
		w.span(a.Time)
		if a.Response != nil {
			w.span(a.Response.Time)
		}
		if i == 0 {
			continue
		}
		if len(w.marks) < w.opts.MaxMarks {
			w.marks = append(w.marks, mark{t: a.Time, verdict: vi, num: num})
		} else {
			w.marksOut++
		}
	}
	if len(w.opts.Verdicts) > 0 && !slices.Contains(w.opts.Verdicts, f.Verdict) {
		w.hidden++
		return nil
	}
	row := rowOf(&f, num)
	row.Full = len(w.full) < w.opts.MaxFull && w.fullSize < w.opts.MaxFullBytes
	if row.Full {
		ff := fullOf(&f, row)
		w.fullSize += ff.size()
		w.full = append(w.full, ff)
	} else {
		w.fullOut++
	}
	if len(w.rows) < w.opts.MaxRows {
		w.rows = append(w.rows, row)
	} else {
		w.rowsOut++
	}
	return nil
}

func (w *Writer) span(t time.Time) {
	if t.IsZero() {
		return
	}
	if w.first.IsZero() || t.Before(w.first) {
		w.first = t
	}
	if t.After(w.last) {
		w.last = t
	}
}

// producerText names a producer as the table does: its IP, client.id
// (report.ClientIDText) and producer ID when it has one.
func producerText(ip netip.Addr, clientID *string, pid int64) string {
	s := ip.String() + " client.id " + report.ClientIDText(clientID)
	if pid >= 0 {
		s += " producer id " + strconv.FormatInt(pid, 10)
	}
	return s
}

func rowOf(f *detect.Finding, num int) findingRow {
	r := findingRow{Num: num, Verdict: string(f.Verdict), Harmful: report.Harmful(f), Kind: string(report.KindOf(f)),
		Topic: report.Printable(report.TopicName(f)), Partition: f.Partition,
		Producer: producerText(f.Client.Addr(), f.ClientID, f.ProducerID),
		Broker:   f.Broker.String(), Attempts: len(f.Attempts) + f.AttemptsOmitted, Records: f.NumRecords}
	if len(f.Attempts) > 0 {
		r.Time = timeText(f.Attempts[0].Time)
	}
	return r
}

func timeText(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000000") }

func fullOf(f *detect.Finding, row findingRow) findingFull {
	ff := findingFull{findingRow: row, Reason: f.Reason, Scope: string(f.Scope), Match: string(f.Match), Omitted: f.AttemptsOmitted}
	for i, o := range f.AppendedOffsets {
		if i > 0 {
			ff.Offsets += ", "
		}
		ff.Offsets += strconv.FormatInt(o, 10)
	}
	for i := range f.Attempts {
		a := &f.Attempts[i]
		ar := attemptRow{N: i + 1, Conn: a.ConnID, Correlation: a.CorrelationID, Time: timeText(a.Time), Cause: causeText(a), TimeoutMs: a.TimeoutMillis}
		if r := a.Response; r != nil {
			ar.Answer = r.Error
			ar.Offset = strconv.FormatInt(r.BaseOffset, 10)
			ar.Latency = report.MillisText(r.LatencyMillis) + " ms"
		} else {
			ar.Answer = "no answer: " + string(a.NoResponse)
		}
		ff.Rows = append(ff.Rows, ar)
	}
	ff.Lanes = drawLanes(f)
	for i := range f.Records {
		if i == maxRecordsShown {
			break
		}
		r := &f.Records[i]
		rr := recordRow{OffsetDelta: r.OffsetDelta, Offset: "unknown", Copies: len(r.Copies)}
		if len(f.AppendedOffsets) > 1 {
			rr.Offset = "one per appended offset"
		}
		if r.Offset >= 0 {
			rr.Offset = strconv.FormatInt(r.Offset, 10)
		}
		if r.Known {
			// At most recordBytesShown bytes of each, as the table shows them.
			rr.Key = report.PrintableBytes(r.Key[:min(len(r.Key), recordBytesShown)], r.KeyLen)
			rr.Value = report.PrintableBytes(r.Value[:min(len(r.Value), recordBytesShown)], r.ValueLen)
		} else {
			rr.Key, rr.Value = "(not read)", "(not read)"
		}
		ff.RecordRows = append(ff.RecordRows, rr)
	}
	ff.RecsOut = int(f.NumRecords) - len(ff.RecordRows)
	if len(f.Records) == 0 {
		ff.RecsOut = 0
	}
	return ff
}

func causeText(a *detect.Attempt) string {
	if a.Cause == "" {
		return "first send"
	}
	s := string(a.Cause)
	if a.CauseError != "" {
		s += " (" + a.CauseError + ")"
	}
	return s + ", +" + report.MillisText(a.GapMillis) + " ms"
}

// producerView is one producer's section.
type producerView struct {
	Name      string
	Software  string
	Settings  [][2]string
	Diagnosis string
	Fix       string
	Latency   svgText
	Histogram svgText
	Causes    []causeView
	Resent    int64
	Resends   int64
}

type causeView struct {
	Cause string
	Count int64
	Width float64 // percent of the most
}

// Timeline takes the run's produce latency per broker over capture time,
// of every answered exchange, which the timeline draws; it keeps tl.
// Without it the timeline shows the re-sends alone.
func (w *Writer) Timeline(tl *profile.Timeline) error {
	if tl == nil {
		return nil
	}
	w.tl = tl
	if !tl.Start().IsZero() {
		w.span(tl.Start())
		w.span(tl.End())
	}
	return nil
}

// Producers keeps each producer's settings, diagnosis, latency per broker
// and re-sends by cause, at most MaxProducers of them.
func (w *Writer) Producers(ps []profile.Producer) error {
	w.head.Producers(ps)
	for i := range ps {
		if len(w.producers) >= w.opts.MaxProducers {
			w.producersOut += len(ps) - i
			break
		}
		w.producers = append(w.producers, producerOf(&ps[i]))
	}
	return nil
}

func producerOf(p *profile.Producer) producerView {
	v := producerView{Name: producerText(p.ClientIP, p.ClientID, p.ProducerID), Software: report.Printable(profile.SoftwareText(p)),
		Diagnosis: p.Diagnosis, Fix: profile.Fix(p), Resent: p.Resent, Resends: p.Resends}
	if v.Software == "" && p.SoftwareGuess != "" {
		v.Software = "likely " + report.Printable(p.SoftwareGuess)
	}
	join := func(xs []string) string {
		s := ""
		for i, x := range xs {
			if i > 0 {
				s += ", "
			}
			s += x
		}
		return s
	}
	ints := func(n int, get func(int) int64) string {
		var xs []string
		for i := range n {
			xs = append(xs, strconv.FormatInt(get(i), 10))
		}
		return join(xs)
	}
	v.Settings = [][2]string{
		{"idempotent", strconv.FormatBool(p.Idempotent)},
		{"acks", ints(len(p.Acks), func(i int) int64 { return int64(p.Acks[i]) })},
		{"request timeout (ms)", ints(len(p.TimeoutsMillis), func(i int) int64 { return int64(p.TimeoutsMillis[i]) })},
		{"max in flight", strconv.Itoa(p.MaxInFlight)},
		{"compression", join(p.Codecs)},
		{"produce versions", ints(len(p.ProduceVersions), func(i int) int64 { return int64(p.ProduceVersions[i]) })},
		{"requests, sends, batches", fmt.Sprintf("%d, %d, %d", p.Requests, p.Sends, p.Batches)},
	}
	if len(p.TransactionalIDs) > 0 {
		v.Settings = append(v.Settings, [2]string{"transactional.id", report.Printable(join(p.TransactionalIDs))})
	}
	var most int64
	for _, c := range p.Causes {
		most = max(most, c.Count)
	}
	for _, c := range p.Causes {
		name := string(c.Cause)
		if c.Error != "" {
			name += " (" + c.Error + ")"
		}
		v.Causes = append(v.Causes, causeView{Cause: name, Count: c.Count, Width: 100 * float64(c.Count) / float64(max(most, 1))})
	}
	v.Latency = drawLatency(p.Latency)
	v.Histogram = drawHistograms(p.Latency)
	return v
}
