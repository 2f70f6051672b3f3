package report

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/profile"
	"github.com/olekukonko/tablewriter/tw"
)

// NewTable returns a Writer of human tables: a headline (what the log
// holds more than once, where, from which producers, and the setting that
// fixes each), one block per finding (a few header lines,
// then a table of its attempts), the producers, then a summary block.
// Findings that harm nothing (Harmful false) are one line each. The
// headline counts every finding, so the findings and producers are held
// until Summary writes it all: up to maxHeldBytes of text, past which
// every finding is one line.
func NewTable(w io.Writer) Writer { return NewTableWith(w, Options{}) }

// NewTableWith is NewTable printing the findings o says: o.Verdicts only,
// every one in full with o.All, every line at most o.Width columns wide.
func NewTableWith(w io.Writer, o Options) Writer {
	return tableOut{newTableWriter(w, o, false)}
}

// newTableWriter returns a table writer; stream writes each block at once
// (the live lines writer's producers), else they are held until Summary.
func newTableWriter(w io.Writer, o Options, stream bool) *tableWriter {
	t := &tableWriter{w: w, opts: o, stream: stream, maxHeld: maxHeldBytes}
	t.tables.b = &t.buf
	t.tables.width = o.Width
	return t
}

// tableOut is the table Writer: a tableWriter that also notes, of the
// producers handed to it, what the headline says of them.
type tableOut struct{ *tableWriter }

// Producers notes each producer's software and fix for the headline, then
// writes the "Producers" section.
func (t tableOut) Producers(ps []profile.Producer) error {
	t.endFindings()
	t.producers = noteProducers(t.producers, ps)
	return t.tableWriter.Producers(ps)
}

type tableWriter struct {
	w      io.Writer
	opts   Options
	stream bool
	n      int // findings printed, in full or in one line
	seen   int // findings handed
	folded int // printed in one line
	// oneLine: the last finding printed was one line (no blank line
	// between two such).
	oneLine bool
	// overflow counts the findings printed in one line because the text
	// held reached maxHeldBytes; ended: the findings' closing notes are
	// written.
	overflow int
	maxHeld  int // maxHeldBytes (tests lower it)
	ended    bool
	buf      bytes.Buffer
	held     bytes.Buffer // what Summary writes after the headline
	tables   tables       // writing to buf
	counts   tally
	// producers is what the headline says of each producer profiled.
	producers map[profile.ProducerKey]producerNote
}

// maxHeldBytes bounds the text of findings printed in full that the table
// writer holds until Summary; past it, findings are one line each.
const maxHeldBytes = 64 << 20

func (t *tableWriter) Finding(f detect.Finding) error {
	t.seen++
	t.counts.add(&f)
	if !t.opts.shows(&f) {
		return nil
	}
	t.buf.Reset()
	full := t.opts.All || Harmful(&f)
	if full && t.held.Len() >= t.maxHeld {
		full = false
		t.overflow++
	}
	if t.n > 0 && (full || !t.oneLine) {
		t.buf.WriteByte('\n')
	}
	t.n++
	t.oneLine = !full
	if !full {
		t.folded++
		oneLineFinding(&t.buf, &f, t.seen)
		return t.flush("finding " + strconv.Itoa(t.seen))
	}
	return t.fullFinding(&f)
}

// fullFinding writes f's block: its header lines, its attempts and its
// records.
func (t *tableWriter) fullFinding(fp *detect.Finding) error {
	f := *fp
	b := &t.buf
	spans := scopeOf(&f) != detect.ScopeConnection
	where := fmt.Sprintf("(connection %d)", f.ConnID)
	if spans {
		where = "(connections " + strings.Join(connIDs(&f), ", ") + ": re-sent across connections)"
	}
	if hosts := AttemptHosts(&f); len(hosts) > 1 {
		where = "(connections " + strings.Join(connIDs(&f), ", ") + ": re-sent across hosts " + strings.Join(hosts, ", ") + ")"
	}
	kind := ""
	if k := KindOf(&f); k != detect.KindBatch {
		kind = " " + strings.ToUpper(string(k))
	}
	if f.Cluster != "" {
		where += "  cluster " + Printable(f.Cluster)
	}
	fmt.Fprintf(b, "#%d %s%s  %s/%d  %s -> %s  client.id %s  %s\n",
		t.seen, strings.ToUpper(string(f.Verdict)), kind, Printable(TopicName(&f)), f.Partition,
		f.Client, f.Broker, ClientIDText(f.ClientID), where)
	idem := "not idempotent"
	if f.Idempotent {
		idem = "idempotent"
	}
	if KindOf(&f) == detect.KindBatch {
		fmt.Fprintf(b, "   producer id %d epoch %d sequence %d (%s), %s, crc %s, magic %d, matched by %s, appended at %s\n",
			f.ProducerID, f.ProducerEpoch, f.FirstSequence, idem, plural(int64(f.NumRecords), "record"), formatCRC(f.BatchCRC),
			f.Magic, f.Match, offsetsText(f.AppendedOffsets))
	} else {
		how := "sent again in " + string(f.BatchRelation) + " batches"
		switch f.ProducerChange {
		case detect.ProducerChangeEpoch:
			how += " under a new producer epoch"
		case detect.ProducerChangeID:
			how += " under a new producer ID"
		}
		if KindOf(&f) == detect.KindRecordDuplicate {
			how = "produced again, each time answered with success (" + string(f.BatchRelation) + " batches)"
		}
		fmt.Fprintf(b, "   %s %s (%s), magic %d, matched by record content, first record appended at %s\n",
			plural(int64(f.NumRecords), "record"), how, idem, f.Magic, offsetsText(f.AppendedOffsets))
	}
	fmt.Fprintf(b, "   %s\n", f.Reason)
	if ev := proofText(&f); ev != "" {
		fmt.Fprintf(b, "   %s\n", ev)
	}

	// A finding across connections shows the connection of each attempt
	// first: correlation IDs are per connection.
	align := []tw.Align{right, left, left, left, right, right}
	header := []string{"CORR ID", "SENT (UTC)", "CAUSE", "RESPONSE", "BASE OFFSET", "LATENCY MS"}
	batches := KindOf(&f) != detect.KindBatch
	if batches {
		align = append(align, left)
		header = append(header, "BATCH")
	}
	if spans {
		align = append([]tw.Align{left}, align...)
		header = append([]string{"CONNECTION"}, header...)
	}
	tbl := t.tables.get(align...)
	tbl.Header(header)
	for i, a := range f.Attempts {
		row := []string{itoa(a.CorrelationID), formatTime(a.Time), causeText(&a), "", "-", "-"}
		if r := a.Response; r != nil {
			row[3] = r.Error + " (" + itoa(r.ErrorCode) + ")"
			if i+1 < len(f.Attempts) && f.Attempts[i+1].Cause == detect.CauseAnswerLost && a.End != nil {
				row[3] += "; " + a.End.String() + " " + MillisText(msSince(r.Time, a.End.Time)) + " ms later"
			}
			row[4] = itoa(r.BaseOffset)
			row[5] = MillisText(r.LatencyMillis)
		} else {
			why := string(a.NoResponse)
			if why == "" {
				why = string(detect.NoResponseNotCaptured)
			}
			if a.End != nil && a.End.By != "" {
				why += ": " + a.End.String() + " after " + MillisText(msSince(a.Time, a.End.Time)) + " ms"
			}
			row[3] = "no response (" + why + ")"
		}
		if batches {
			bt := "-"
			if a.Batch != nil {
				bt = fmt.Sprintf("crc %s, %s", formatCRC(a.Batch.CRC), plural(int64(a.Batch.NumRecords), "record"))
				if a.Batch.ProducerID >= 0 {
					bt += fmt.Sprintf(", producer id %d epoch %d sequence %d", a.Batch.ProducerID, a.Batch.ProducerEpoch, a.Batch.BaseSequence)
				}
			}
			row = append(row, bt)
		}
		if spans {
			conn, client, broker := attemptConn(&f, &a)
			c := fmt.Sprintf("%d: %s -> %s", conn, client, broker)
			if a.Host != "" {
				c += " on " + Printable(a.Host)
			}
			row = append([]string{c}, row...)
		}
		if err := tbl.Append(row); err != nil {
			return fmt.Errorf("report: finding %d: %w", t.seen, err)
		}
	}
	if err := tbl.Render(); err != nil {
		return fmt.Errorf("report: finding %d: %w", t.seen, err)
	}
	if batches {
		if err := writeRecordCopies(&t.tables, &f); err != nil {
			return fmt.Errorf("report: finding %d records: %w", t.seen, err)
		}
	} else if len(f.Records) > 0 {
		if err := writeRecords(&t.tables, &f); err != nil {
			return fmt.Errorf("report: finding %d records: %w", t.seen, err)
		}
	}
	return t.flush("finding " + strconv.Itoa(t.seen))
}

func (t *tableWriter) Summary(s Summary) error {
	t.endFindings()
	t.buf.Reset()
	b := &t.buf
	if err := summaryCounts(&t.tables, &s, t.seen); err != nil {
		return err
	}

	if len(s.KafkaConnections) > 0 {
		b.WriteString("\nKafka connections\n")
		// The SASL column only when a connection authenticated, so that
		// the table of a capture without SASL stays as it was.
		sasl := slices.ContainsFunc(s.KafkaConnections, func(c Connection) bool { return c.SASLMechanism != "" || c.SASLUser != "" || c.SASLFailed })
		align := []tw.Align{right, left, left, left, left, right}
		header := []any{"ID", "CLIENT", "BROKER", "DETECTED BY", "CLIENT IDS", "PRODUCE REQUESTS"}
		if sasl {
			align, header = append(align, left), append(header, "SASL USER")
		}
		tbl := t.tables.get(align...)
		tbl.Header(header...)
		for _, c := range s.KafkaConnections {
			quoted := make([]string, len(c.ClientIDs))
			for i, id := range c.ClientIDs {
				quoted[i] = Printable(id)
			}
			ids := foldList(quoted, t.opts.Width, 3)
			if ids == "" {
				ids = "-"
			}
			row := []string{strconv.FormatUint(c.ID, 10), c.Client.String(), c.Broker.String(),
				c.DetectedBy, ids, itoa(c.ProduceRequests)}
			if sasl {
				row = append(row, saslText(c))
			}
			if err := tbl.Append(row); err != nil {
				return fmt.Errorf("report: summary: %w", err)
			}
		}
		if err := tbl.Render(); err != nil {
			return fmt.Errorf("report: summary: %w", err)
		}
	}

	if err := t.tlsTable(b, s.TLS); err != nil {
		return err
	}

	if len(s.ByTopic) > 0 {
		b.WriteString("\nTopics\n")
		tbl := t.tables.get(left, right, right, right, right, right, right)
		tbl.Header("TOPIC", "BATCHES", "RECORDS", "FINDINGS", "DUPLICATED", "RECORDS DUPLICATED", "EXTRA COPIES")
		for i, tc := range s.ByTopic {
			rc := topicRecords(s.ByTopic, i, &t.counts)
			row := []string{Printable(tc.Topic), itoa(tc.Batches), itoa(tc.Records), itoa(tc.Findings), itoa(tc.Duplicated),
				itoa(rc.Duplicated), itoa(rc.Extra)}
			if err := tbl.Append(row); err != nil {
				return fmt.Errorf("report: summary: %w", err)
			}
		}
		if err := tbl.Render(); err != nil {
			return fmt.Errorf("report: summary: %w", err)
		}
	}

	if s.Interrupted != "" {
		fmt.Fprintf(b, "\nInterrupted by %s: the findings are those of the packets read before it.\n", s.Interrupted)
	}
	if s.InputLimit > 0 {
		fmt.Fprintf(b, "\nStopped at --max-input-bytes, %d bytes of capture read: the findings are those of the packets read before.\n", s.InputLimit)
	}
	if lines := fleetLines(&s); len(lines) > 0 {
		b.WriteString("\n" + strings.Join(lines, "\n") + "\n")
	}
	return t.writeAll(&s)
}

// summaryCounts writes the summary's heading and its table of counts, after
// n findings, to ts's buffer.
func summaryCounts(ts *tables, s *Summary, n int) error {
	b := ts.b
	statusText(b, s, n)
	b.WriteString("Summary\n")

	verdictCounts := make([]string, len(verdicts))
	for i, v := range verdicts {
		verdictCounts[i] = fmt.Sprintf("%s %d", v, s.ByVerdict[string(v)])
	}
	names := make([]string, len(s.Files))
	for i, f := range s.Files {
		names[i] = Printable(f)
	}
	files := foldList(names, ts.width, 3)
	if files == "" {
		files = "-"
	}
	counts := [][]string{
		{"files", files},
		{"packets", packetsText(s)},
		{"TCP connections", itoa(s.TCPConnections)},
		{"gaps", fmt.Sprintf("%d (%d bytes lost)", s.Gaps, s.GapBytes)},
	}
	if s.SnapCut > 0 {
		counts = append(counts, []string{"snap length", fmt.Sprintf(
			"capture cut at %d bytes per packet: %d bytes lost in %s; capture again with tcpdump -s 0",
			s.SnapLen, s.SnapCutBytes, plural(s.SnapCut, "packet"))})
	}
	counts = append(counts, [][]string{
		{"Kafka connections", itoa(int64(len(s.KafkaConnections)) + s.KafkaConnectionsOmitted)},
		{"Kafka frames", fmt.Sprintf("%d (malformed %d, resyncs %d)", s.Frames, s.Malformed, s.Resyncs)},
		{"produce requests", fmt.Sprintf("%d (responses %d)", s.ProduceRequests, s.ProduceResponses)},
		{"batches", itoa(s.Batches)},
		{"records", itoa(s.Records)},
	}...)
	if s.FetchResponses > 0 {
		counts = append(counts, []string{"fetch responses", fmt.Sprintf("%d (%d record batches in them: evidence of what the log holds)",
			s.FetchResponses, s.FetchedBatches)})
	}
	if s.EchoedRequests > 0 {
		counts = append(counts, []string{"capture duplicates", echoText(s)})
	}
	counts = append(counts, s.Dropped.lines()...)
	counts = append(counts, []string{"findings", findingsText(s, verdictCounts)})
	if s.ProducerExchangesOmitted > 0 {
		counts = append(counts, []string{"producers omitted", fmt.Sprintf(
			"%d produce exchanges of producers past the %d profiled are in no producer profile", s.ProducerExchangesOmitted, profile.DefaultMaxProducers)})
	}
	if s.EvictedBatches > 0 {
		counts = append(counts, []string{"evicted batches", fmt.Sprintf(
			"%d decided early (--max-batches reached); a re-send more than %s after the attempt before it may be unmatched",
			s.EvictedBatches, s.EvictedAge.Round(time.Millisecond))})
	}
	tbl := ts.get(left, left)
	if err := tbl.Bulk(counts); err != nil {
		return fmt.Errorf("report: summary: %w", err)
	}
	if err := tbl.Render(); err != nil {
		return fmt.Errorf("report: summary: %w", err)
	}

	return nil
}

func packetsText(s *Summary) string {
	if s.Drops > 0 {
		return fmt.Sprintf("%d (%d bytes; %d more dropped by the kernel, not analyzed)", s.Packets, s.Bytes, s.Drops)
	}
	return fmt.Sprintf("%d (%d bytes)", s.Packets, s.Bytes)
}

func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return itoa(n) + " " + noun + "s"
}

// flush writes the block built in buf, fitted to the width: at once when
// streaming, else to the text held until Summary.
func (t *tableWriter) flush(what string) error {
	if !t.stream {
		fitLines(&t.held, t.buf.Bytes(), t.opts.Width)
		return nil
	}
	var out bytes.Buffer
	fitLines(&out, t.buf.Bytes(), t.opts.Width)
	if _, err := t.w.Write(out.Bytes()); err != nil {
		return fmt.Errorf("report: writing %s: %w", what, err)
	}
	return nil
}

// Printable is s when it is valid UTF-8 of printable characters, else s
// quoted with Go escapes (the empty string too, so that it shows): names
// come off the wire, and a control character would reach the terminal or
// break a table's alignment. The text writers and the metric labels of
// package metrics print names through it.
func Printable(s string) string {
	if s == "" {
		return `""`
	}
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// ClientIDText is a client.id as the outputs name a producer by it: quoted
// Go-style, "(null)" when null.
func ClientIDText(id *string) string {
	if id == nil {
		return "(null)"
	}
	return strconv.Quote(*id)
}

func offsetsText(offs []int64) string {
	if len(offs) == 0 {
		return "no known offset"
	}
	s := make([]string, len(offs))
	for i, o := range offs {
		s[i] = itoa(o)
	}
	if len(s) == 1 {
		return "offset " + s[0]
	}
	return "offsets " + strings.Join(s, ", ")
}

// connIDs are the connections of f's attempts, in order of first use.
func connIDs(f *detect.Finding) []string {
	var ids []string
	for i := range f.Attempts {
		conn, _, _ := attemptConn(f, &f.Attempts[i])
		id := strconv.FormatUint(conn, 10)
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// msSince is the time from t0 to t1 in ms.
func msSince(t0, t1 time.Time) float64 { return float64(t1.Sub(t0)) / 1e6 }

// causeText says why an attempt was sent: "first send", or the cause with
// the broker error and the time since the previous attempt.
func causeText(a *detect.Attempt) string {
	switch a.Cause {
	case "":
		return "first send"
	case detect.CauseBrokerError:
		return fmt.Sprintf("%s %s, +%s ms", a.Cause, a.CauseError, MillisText(a.GapMillis))
	}
	if a.CauseError != "" {
		// How the earlier attempt's connection ended.
		return fmt.Sprintf("%s (%s), +%s ms", a.Cause, a.CauseError, MillisText(a.GapMillis))
	}
	return fmt.Sprintf("%s, +%s ms", a.Cause, MillisText(a.GapMillis))
}

// findingsText counts the findings by verdict, and says how many are
// record-level when some are.
func findingsText(s *Summary, verdictCounts []string) string {
	t := fmt.Sprintf("%d (%s)", s.Findings, strings.Join(verdictCounts, ", "))
	if s.RecordFindings > 0 {
		t += fmt.Sprintf("; %d of them record-level", s.RecordFindings)
	}
	return t
}

// foldList joins items with ", "; with a width (a terminal), a list of
// more than n+1 shows the first n and says how many more: "a, b, c and 4
// more".
func foldList(items []string, width, n int) string {
	if width == 0 || len(items) <= n+1 {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}

// oneLineFinding writes f in one line: what a harmless finding needs to
// be found again (--all, or --format json, shows it in full).
func oneLineFinding(b *bytes.Buffer, f *detect.Finding, num int) {
	kind := ""
	if k := KindOf(f); k != detect.KindBatch {
		kind = " " + strings.ToUpper(string(k))
	}
	what := plural(int64(f.NumRecords), "record")
	if KindOf(f) == detect.KindBatch {
		what += ", crc " + formatCRC(f.BatchCRC)
	}
	attempts := plural(int64(len(f.Attempts)+f.AttemptsOmitted), "attempt")
	if n := len(f.Attempts); n > 1 {
		a := &f.Attempts[n-1]
		attempts += " (" + strings.TrimSpace(string(a.Cause)+" "+a.CauseError) + ")"
	}
	where := "appended at " + offsetsText(f.AppendedOffsets)
	if len(f.AppendedOffsets) == 0 {
		where = "no known offset"
	}
	fmt.Fprintf(b, "#%d %s%s  %s/%d  %s -> %s  client.id %s  %s, %s, %s\n",
		num, strings.ToUpper(string(f.Verdict)), kind, Printable(TopicName(f)), f.Partition,
		f.Client, f.Broker, ClientIDText(f.ClientID), what, Printable(attempts), where)
}

// endFindings writes, once, after the findings, what the table left out:
// the findings printed in one line, and those --verdict did not print.
func (t *tableWriter) endFindings() {
	if t.ended || t.seen == 0 {
		t.ended = true
		return
	}
	t.ended = true
	t.buf.Reset()
	b := &t.buf
	printed := t.n
	note := func(format string, args ...any) {
		if t.n > 0 {
			b.WriteByte('\n')
		}
		t.n++
		fmt.Fprintf(b, format, args...)
	}
	if harmless := t.folded - t.overflow; harmless > 0 {
		each := " each"
		if harmless == 1 {
			each = ""
		}
		note("(%s one line%s: deduplicated, single, rejected, or unconfirmed re-sends of idempotent producers, which the broker deduplicates. --all shows them in full.)\n",
			counted(int64(harmless), "harmless finding is in", "harmless findings are"), each)
	}
	if t.overflow > 0 {
		note("(%s in one line past the first %d MiB of findings' text; --format json prints them in full.)\n",
			plural(int64(t.overflow), "more finding"), t.maxHeld>>20)
	}
	if len(t.opts.Verdicts) > 0 {
		names := make([]string, len(t.opts.Verdicts))
		for i, v := range t.opts.Verdicts {
			names[i] = string(v)
		}
		note("(--verdict %s: %d of %s printed; the headline and the summary count all.)\n",
			strings.Join(names, ","), printed, plural(int64(t.seen), "finding"))
	}
	fitLines(&t.held, b.Bytes(), t.opts.Width)
}

// producerNote is what the headline says of a producer profiled.
type producerNote struct {
	software string // its software, or a guess of it ("likely kafkajs")
	fix      string // profile.Fix
}

// noteProducers adds to notes what the headline says of each producer of
// ps, and returns notes (made when nil).
func noteProducers(notes map[profile.ProducerKey]producerNote, ps []profile.Producer) map[profile.ProducerKey]producerNote {
	if notes == nil {
		notes = make(map[profile.ProducerKey]producerNote, len(ps))
	}
	for i := range ps {
		p := &ps[i]
		k := profile.KeyOf(p.ClientIP, p.ClientID, p.ProducerID)
		sw := profile.SoftwareText(p)
		if sw == "" && p.SoftwareGuess != "" {
			sw = "likely " + p.SoftwareGuess
		}
		notes[k] = producerNote{software: sw, fix: profile.Fix(p)}
	}
	return notes
}

// Bounds on the headline's lists.
const (
	headlineTopics    = 5
	headlineProducers = 8
)

// writeHeadline writes the answer first: how many records the seen
// findings counted in counts show the log holds more than once, and how
// many more may be, in which topics, from which producers (with what
// notes says of them), and the setting that fixes each; or, when none,
// that none is. Nothing when no finding was handed (the summary's status
// says why).
func writeHeadline(b *bytes.Buffer, s *Summary, seen int, counts *tally, notes map[profile.ProducerKey]producerNote) {
	if seen == 0 {
		return
	}
	c := counts.total
	unconfirmed := "the capture does not show how many copies the log holds"
	switch {
	case c.Duplicated > 0:
		fmt.Fprintf(b, "The log holds %s %s (%s), from %s.\n", plural(c.Duplicated, "record"), timesText(c),
			counted(c.Extra, "extra copy", "extra copies"), counted(c.DupFindings, "re-sent batch", "re-sent batches"))
		if c.Possibly > 0 {
			fmt.Fprintf(b, "Up to %s may be too: %s unconfirmed (%s).\n", counted(c.Possibly, "more record", "more records"),
				counted(c.PossibleFindings, "re-sent batch", "re-sent batches"), unconfirmed)
		}
	case c.Possibly > 0:
		fmt.Fprintf(b, "No record is known to be in the log twice, but up to %s may be: %s unconfirmed (%s).\n",
			plural(c.Possibly, "record"), counted(c.PossibleFindings, "re-sent batch", "re-sent batches"), unconfirmed)
	default:
		var parts []string
		for _, v := range verdicts {
			if n := s.ByVerdict[string(v)]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", v, n))
			}
		}
		which := "the batch sent more than once is"
		if seen > 1 {
			which = "each of the " + itoa(seen) + " batches sent more than once is"
		}
		fmt.Fprintf(b, "No record is in the log twice: %s held once or not at all (%s).\n", which, strings.Join(parts, ", "))
		if s.ByVerdict[string(detect.Unconfirmed)] > 0 {
			b.WriteString("The unconfirmed are re-sends of idempotent producers, which the broker deduplicates.\n")
		}
	}
	if s.InputFailed() || s.Interrupted != "" || s.InputLimit > 0 {
		b.WriteString("Reading stopped early: these are the findings of what was read (see the summary).\n")
	}
	if c.Duplicated+c.Possibly == 0 {
		return
	}
	writeHeadlineTopics(b, counts)
	writeHeadlineProducers(b, counts, notes)
}

// writeHeadlineTopics writes the topics of the records duplicated or
// possibly so, most first.
func writeHeadlineTopics(b *bytes.Buffer, counts *tally) {
	type topic struct {
		name string
		c    recordCount
	}
	var ts []topic
	for name, c := range counts.byTopic {
		if c.Duplicated+c.Possibly > 0 {
			ts = append(ts, topic{name, *c})
		}
	}
	slices.SortFunc(ts, func(a, b topic) int {
		if d := (b.c.Duplicated + b.c.Possibly) - (a.c.Duplicated + a.c.Possibly); d != 0 {
			return cmpSign(d)
		}
		return strings.Compare(a.name, b.name)
	})
	var parts []string
	for i, tp := range ts {
		if i == headlineTopics && len(ts) > headlineTopics+1 {
			parts = append(parts, fmt.Sprintf("and %d more", len(ts)-i))
			break
		}
		parts = append(parts, Printable(tp.name)+" ("+recordsText(&tp.c)+")")
	}
	label := "topic:    "
	if len(ts) > 1 {
		label = "topics:   "
	}
	fmt.Fprintf(b, "  %s%s\n", label, strings.Join(parts, ", "))
}

// writeHeadlineProducers writes, per producer of the records duplicated
// or possibly so, most first, who it is and the setting that fixes it.
func writeHeadlineProducers(b *bytes.Buffer, counts *tally, notes map[profile.ProducerKey]producerNote) {
	var ps []*producerCount
	for _, p := range counts.byProducer {
		if p.Duplicated+p.Possibly > 0 {
			ps = append(ps, p)
		}
	}
	slices.SortFunc(ps, func(a, b *producerCount) int {
		if d := (b.Duplicated + b.Possibly) - (a.Duplicated + a.Possibly); d != 0 {
			return cmpSign(d)
		}
		return a.order - b.order
	})
	for i, p := range ps {
		if i == headlineProducers && len(ps) > headlineProducers+1 {
			fmt.Fprintf(b, "  and %d more producers (see Producers)\n", len(ps)-i)
			break
		}
		label := "producer: "
		if p.key == otherProducers {
			fmt.Fprintf(b, "  %sthe producers past the first %d (%s)\n", label, maxCountedProducers, recordsText(&p.recordCount))
			continue
		}
		note, ok := notes[p.key]
		if !ok {
			note.fix = profile.Fix(&profile.Producer{ProducerID: p.key.ProducerID, Idempotent: p.idempotent, Renumbered: p.renumbered})
		}
		who := p.key.ClientIP.String() + " client.id " + ClientIDText(keyClientID(p.key))
		about := []string{who}
		if note.software != "" {
			about = append(about, Printable(note.software))
		}
		if p.idempotent {
			about = append(about, fmt.Sprintf("idempotent producer id %d", p.key.ProducerID))
		} else {
			about = append(about, "not idempotent")
		}
		fmt.Fprintf(b, "  %s%s: %s\n", label, strings.Join(about, ", "), recordsText(&p.recordCount))
		fix := note.fix
		switch {
		case p.appTwice > 0 && p.appTwice == p.Duplicated && p.Possibly == 0:
			fix = "none in the client: the application produced these records twice, each time answered with success"
		case fix == "":
			fix = "no client setting: an idempotent producer's re-send that the broker did not deduplicate (see its findings)"
		}
		fmt.Fprintf(b, "            fix: %s\n", Printable(fix))
	}
}

func keyClientID(k profile.ProducerKey) *string {
	if k.NullClientID {
		return nil
	}
	return &k.ClientID
}

// recordsText is "2 records twice", "3 records more than once, up to 4
// more", "up to 4 records".
func recordsText(c *recordCount) string {
	var parts []string
	if c.Duplicated > 0 {
		parts = append(parts, plural(c.Duplicated, "record")+" "+timesText(*c))
	}
	switch {
	case c.Possibly > 0 && c.Duplicated > 0:
		parts = append(parts, fmt.Sprintf("up to %d more", c.Possibly))
	case c.Possibly > 0:
		parts = append(parts, "up to "+plural(c.Possibly, "record"))
	}
	return strings.Join(parts, ", ")
}

// timesText is "twice", or "more than once" when some record has more than
// two copies.
func timesText(c recordCount) string {
	if c.Extra > c.Duplicated {
		return "more than once"
	}
	return "twice"
}

// counted is "1 one" or "n many".
func counted(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return itoa(n) + " " + many
}

func cmpSign(d int64) int {
	switch {
	case d < 0:
		return -1
	case d > 0:
		return 1
	}
	return 0
}

// writeAll writes the headline, the findings and producers held, and the
// summary built in buf.
func (t *tableWriter) writeAll(s *Summary) error {
	var head bytes.Buffer
	writeHeadline(&head, s, t.seen, &t.counts, t.producers)
	var out bytes.Buffer
	fitLines(&out, head.Bytes(), t.opts.Width)
	if out.Len() > 0 && t.held.Len() > 0 {
		out.WriteByte('\n')
	}
	_, err := t.w.Write(out.Bytes())
	if err == nil {
		_, err = t.w.Write(t.held.Bytes())
	}
	if err == nil {
		out.Reset()
		fitLines(&out, t.buf.Bytes(), t.opts.Width)
		_, err = t.w.Write(out.Bytes())
	}
	t.held.Reset()
	if err != nil {
		return fmt.Errorf("report: writing summary: %w", err)
	}
	return nil
}
