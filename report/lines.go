package report

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/profile"
)

// NewLines returns a Writer for people watching a live run: one line per
// finding, written as soon as it is decided, then a short summary block (the
// table summary's counts and errors, without the per-connection and
// per-topic tables, which grow with a long run).
//
// A finding's line reads
//
//	TIME VERDICT TOPIC/PARTITION CLIENT -> BROKER client.id "ID" pid PRODUCERID crc CRC attempts C1,C2 offsets O1,O2: REASON
//
// where TIME is when the last attempt was sent, C are the correlation IDs
// of the attempts in send order and O the offsets the log holds the batch
// at ("-" for none). CLIENT -> BROKER is the first attempt's connection.
// When the attempts span connections (scope client), each C is followed by
// @N, the connection it was sent on, and "connections N CLIENT -> BROKER,
// ..." comes before the offsets. Names from the wire are quoted when they
// are not printable, as in the table. Producers, called after the last
// finding, writes the table's "Producers" section.
func NewLines(w io.Writer) Writer {
	return &linesWriter{w: w}
}

type linesWriter struct {
	w   io.Writer
	n   int // findings written
	buf bytes.Buffer
	// producers writes the producer profiles as the table does (made at
	// the first Producers call).
	producers *tableWriter
}

func (l *linesWriter) Finding(f detect.Finding) error {
	l.n++
	l.buf.Reset()
	b := &l.buf
	when := "-"
	if n := len(f.Attempts); n > 0 {
		when = formatTime(f.Attempts[n-1].Time)
	}
	spans := scopeOf(&f) != detect.ScopeConnection
	ids := make([]string, len(f.Attempts))
	var conns []string
	seen := make(map[uint64]bool)
	for i := range f.Attempts {
		ids[i] = itoa(f.Attempts[i].CorrelationID)
		if !spans {
			continue
		}
		conn, client, broker := attemptConn(&f, &f.Attempts[i])
		ids[i] += "@" + strconv.FormatUint(conn, 10)
		if !seen[conn] {
			seen[conn] = true
			conns = append(conns, fmt.Sprintf("%d %s -> %s", conn, client, broker))
		}
	}
	across := ""
	if spans {
		across = " connections " + strings.Join(conns, ", ")
	}
	if hosts := AttemptHosts(&f); len(hosts) > 0 {
		across += " hosts " + strings.Join(hosts, ", ")
	}
	offs := make([]string, len(f.AppendedOffsets))
	for i, o := range f.AppendedOffsets {
		offs[i] = itoa(o)
	}
	verdict := strings.ToUpper(string(f.Verdict))
	if k := KindOf(&f); k != detect.KindBatch {
		// A record-level finding: its kind, and how many records.
		verdict += " " + strings.ToUpper(string(k)) + " " + plural(int64(f.NumRecords), "record") + " " + string(f.BatchRelation)
	}
	if f.Cluster != "" {
		across += " cluster " + Printable(f.Cluster)
	}
	fmt.Fprintf(b, "%s %s %s/%d %s -> %s client.id %s pid %d crc %s attempts %s%s offsets %s: %s\n",
		when, verdict, Printable(TopicName(&f)), f.Partition,
		f.Client, f.Broker, ClientIDText(f.ClientID), f.ProducerID, formatCRC(f.BatchCRC),
		orDash(strings.Join(ids, ",")), across, orDash(strings.Join(offs, ",")), Printable(f.Reason))
	if _, err := l.w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("report: writing finding %d: %w", l.n, err)
	}
	return nil
}

// Producers writes the "Producers" section of the table format: a live
// run's producers are printed once, at its end, before the summary.
func (l *linesWriter) Producers(ps []profile.Producer) error {
	if l.producers == nil {
		l.producers = newTableWriter(l.w, Options{}, true)
	}
	l.producers.n = l.n
	return l.producers.Producers(ps)
}

func (l *linesWriter) Summary(s Summary) error {
	l.buf.Reset()
	b := &l.buf
	if err := summaryCounts(&tables{b: b}, &s, l.n); err != nil {
		return err
	}
	if _, err := l.w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("report: writing summary: %w", err)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
