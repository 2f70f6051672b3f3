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

// NewTable returns a Writer of human tables: one block per finding (a few
// header lines, then a table of its attempts), then a summary block.
func NewTable(w io.Writer) Writer {
	t := &tableWriter{w: w}
	t.tables.b = &t.buf
	return t
}

type tableWriter struct {
	w      io.Writer
	n      int // findings written
	buf    bytes.Buffer
	tables tables // writing to buf
}

func (t *tableWriter) Finding(f detect.Finding) error {
	t.n++
	t.buf.Reset()
	b := &t.buf
	if t.n > 1 {
		b.WriteByte('\n')
	}
	spans := scopeOf(&f) == detect.ScopeClient
	where := fmt.Sprintf("(connection %d)", f.ConnID)
	if spans {
		where = "(connections " + strings.Join(connIDs(&f), ", ") + ": re-sent across connections)"
	}
	kind := ""
	if k := kindOf(&f); k != detect.KindBatch {
		kind = " " + strings.ToUpper(string(k))
	}
	if f.Cluster != "" {
		where += "  cluster " + Printable(f.Cluster)
	}
	fmt.Fprintf(b, "#%d %s%s  %s/%d  %s -> %s  client.id %s  %s\n",
		t.n, strings.ToUpper(string(f.Verdict)), kind, Printable(TopicName(&f)), f.Partition,
		f.Client, f.Broker, clientIDText(f.ClientID), where)
	idem := "not idempotent"
	if f.Idempotent {
		idem = "idempotent"
	}
	if kindOf(&f) == detect.KindBatch {
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
		if kindOf(&f) == detect.KindRecordDuplicate {
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
	batches := kindOf(&f) != detect.KindBatch
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
				row[3] += "; " + a.End.String() + " " + millisText(msSince(r.Time, a.End.Time)) + " ms later"
			}
			row[4] = itoa(r.BaseOffset)
			row[5] = millisText(r.LatencyMillis)
		} else {
			why := string(a.NoResponse)
			if why == "" {
				why = string(detect.NoResponseNotCaptured)
			}
			if a.End != nil && a.End.By != "" {
				why += ": " + a.End.String() + " after " + millisText(msSince(a.Time, a.End.Time)) + " ms"
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
			row = append([]string{fmt.Sprintf("%d: %s -> %s", conn, client, broker)}, row...)
		}
		if err := tbl.Append(row); err != nil {
			return fmt.Errorf("report: finding %d: %w", t.n, err)
		}
	}
	if err := tbl.Render(); err != nil {
		return fmt.Errorf("report: finding %d: %w", t.n, err)
	}
	if batches {
		if err := writeRecordCopies(&t.tables, &f); err != nil {
			return fmt.Errorf("report: finding %d records: %w", t.n, err)
		}
	} else if len(f.Records) > 0 {
		if err := writeRecords(&t.tables, &f); err != nil {
			return fmt.Errorf("report: finding %d records: %w", t.n, err)
		}
	}
	return t.flush("finding " + strconv.Itoa(t.n))
}

func (t *tableWriter) Summary(s Summary) error {
	t.buf.Reset()
	b := &t.buf
	if err := summaryCounts(&t.tables, &s, t.n); err != nil {
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
			ids := strings.Join(quoted, ", ")
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
		tbl := t.tables.get(left, right, right, right, right)
		tbl.Header("TOPIC", "BATCHES", "RECORDS", "FINDINGS", "DUPLICATED")
		for _, tc := range s.ByTopic {
			row := []string{Printable(tc.Topic), itoa(tc.Batches), itoa(tc.Records), itoa(tc.Findings), itoa(tc.Duplicated)}
			if err := tbl.Append(row); err != nil {
				return fmt.Errorf("report: summary: %w", err)
			}
		}
		if err := tbl.Render(); err != nil {
			return fmt.Errorf("report: summary: %w", err)
		}
	}

	summaryErrors(b, &s)
	if s.Interrupted != "" {
		fmt.Fprintf(b, "\nInterrupted by %s: the findings are those of the packets read before it.\n", s.Interrupted)
	}
	if s.InputLimit > 0 {
		fmt.Fprintf(b, "\nStopped at --max-input-bytes, %d bytes of capture read: the findings are those of the packets read before.\n", s.InputLimit)
	}
	return t.flush("summary")
}

// summaryCounts writes the summary's heading and its table of counts, after
// n findings, to ts's buffer.
func summaryCounts(ts *tables, s *Summary, n int) error {
	b := ts.b
	if n > 0 {
		b.WriteByte('\n')
	} else {
		b.WriteString("No batch was sent more than once.\n\n")
	}
	b.WriteString("Summary\n")

	verdictCounts := make([]string, len(verdicts))
	for i, v := range verdicts {
		verdictCounts[i] = fmt.Sprintf("%s %d", v, s.ByVerdict[string(v)])
	}
	names := make([]string, len(s.Files))
	for i, f := range s.Files {
		names[i] = Printable(f)
	}
	files := strings.Join(names, ", ")
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

// summaryErrors lists the input errors that ended reading early.
func summaryErrors(b *bytes.Buffer, s *Summary) {
	if len(s.Errors) > 0 {
		b.WriteString("\nErrors\n")
		for _, e := range s.Errors {
			fmt.Fprintf(b, "  %s\n", Printable(e))
		}
	}
}

func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return itoa(n) + " " + noun + "s"
}

// flush writes the block built in buf.
func (t *tableWriter) flush(what string) error {
	if _, err := t.w.Write(t.buf.Bytes()); err != nil {
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

func clientIDText(id *string) string {
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
		return fmt.Sprintf("%s %s, +%s ms", a.Cause, a.CauseError, millisText(a.GapMillis))
	}
	if a.CauseError != "" {
		// How the earlier attempt's connection ended.
		return fmt.Sprintf("%s (%s), +%s ms", a.Cause, a.CauseError, millisText(a.GapMillis))
	}
	return fmt.Sprintf("%s, +%s ms", a.Cause, millisText(a.GapMillis))
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
