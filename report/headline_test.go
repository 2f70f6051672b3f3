package report

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/profile"
	"github.com/olekukonko/tablewriter/tw"
)

// countsOf is the tally of fs, as a writer handed them keeps it.
func countsOf(fs []detect.Finding) *tally {
	var c tally
	for i := range fs {
		c.add(&fs[i])
	}
	return &c
}

// streamTable is a table writer that writes each block at once, every
// finding in full: the blocks alone, without the headline and summary
// that NewTable writes them after.
func streamTable(w io.Writer) *tableWriter { return newTableWriter(w, Options{All: true}, true) }

// copiesAt is a record-level finding's record with copies at offs.
func copiesAt(offs ...int64) detect.Record {
	r := detect.Record{Offset: -1}
	for i, o := range offs {
		r.Copies = append(r.Copies, detect.RecordCopy{Attempt: i, Offset: o})
	}
	return r
}

// TestCounts: what one finding adds to the counts of records, worked out by
// hand: N records appended at k offsets are N records, N*(k-1) extra
// copies; a record-level finding's by each record's distinct offsets, the
// unlisted ones by the first record's; unconfirmed findings that can harm
// count as possible, the others nothing.
func TestCounts(t *testing.T) {
	tests := []struct {
		name string
		f    detect.Finding
		want recordCount
	}{
		{"batch twice", detect.Finding{Verdict: detect.Duplicated, NumRecords: 3, AppendedOffsets: []int64{1, 5}},
			recordCount{Duplicated: 3, Extra: 3, DupFindings: 1}},
		{"batch three times", detect.Finding{Verdict: detect.Duplicated, NumRecords: 2, AppendedOffsets: []int64{1, 5, 9}},
			recordCount{Duplicated: 2, Extra: 4, DupFindings: 1}},
		{"batch, offsets unknown", detect.Finding{Verdict: detect.Duplicated, NumRecords: 1},
			recordCount{Duplicated: 1, Extra: 1, DupFindings: 1}},
		{"records, some unlisted", detect.Finding{Kind: detect.KindRecordResend, Verdict: detect.Duplicated, NumRecords: 4,
			AppendedOffsets: []int64{1, 4}, Records: []detect.Record{copiesAt(1, 4), copiesAt(2, 5, 8)}, RecordsOmitted: 2},
			recordCount{Duplicated: 4, Extra: 5, DupFindings: 1}},
		{"records, a copy's offset unknown", detect.Finding{Kind: detect.KindRecordResend, Verdict: detect.Duplicated, NumRecords: 1,
			AppendedOffsets: []int64{1, 4}, Records: []detect.Record{copiesAt(1, -1)}},
			recordCount{Duplicated: 1, Extra: 1, DupFindings: 1}},
		{"records, twice the same offset", detect.Finding{Kind: detect.KindRecordDuplicate, Verdict: detect.Duplicated, NumRecords: 1,
			AppendedOffsets: []int64{3, 7, 9}, Records: []detect.Record{copiesAt(3, 3)}},
			recordCount{Duplicated: 1, Extra: 2, DupFindings: 1}},
		{"unconfirmed, not idempotent", detect.Finding{Verdict: detect.Unconfirmed, NumRecords: 7},
			recordCount{Possibly: 7, PossibleFindings: 1}},
		{"unconfirmed, idempotent", detect.Finding{Verdict: detect.Unconfirmed, NumRecords: 7, Idempotent: true}, recordCount{}},
		{"unconfirmed, new epoch", detect.Finding{Kind: detect.KindRecordResend, Verdict: detect.Unconfirmed, NumRecords: 2, Idempotent: true,
			ProducerChange: detect.ProducerChangeEpoch}, recordCount{Possibly: 2, PossibleFindings: 1}},
		{"unconfirmed, produced twice", detect.Finding{Kind: detect.KindRecordDuplicate, Verdict: detect.Unconfirmed, NumRecords: 2, Idempotent: true},
			recordCount{Possibly: 2, PossibleFindings: 1}},
		{"deduplicated", detect.Finding{Verdict: detect.Deduplicated, NumRecords: 7, Idempotent: true, AppendedOffsets: []int64{1}}, recordCount{}},
		{"single", detect.Finding{Verdict: detect.Single, NumRecords: 7, AppendedOffsets: []int64{1}}, recordCount{}},
		{"rejected", detect.Finding{Verdict: detect.Rejected, NumRecords: 7}, recordCount{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := countOf(&tt.f); got != tt.want {
				t.Errorf("countOf = %+v, want %+v", got, tt.want)
			}
			if harm := tt.want != (recordCount{}); Harmful(&tt.f) != harm {
				t.Errorf("Harmful = %v, want %v", !harm, harm)
			}
		})
	}
}

// TestTallyRevisions: a live run's finding reported again (same ID)
// replaces its earlier report's share in all, per topic and per producer.
func TestTallyRevisions(t *testing.T) {
	id := str("p")
	first := detect.Finding{ID: 7, Topic: "a", ClientID: id, Verdict: detect.Unconfirmed, NumRecords: 5, ProducerID: -1}
	revised := first
	revised.Revision, revised.Verdict, revised.AppendedOffsets = 1, detect.Duplicated, []int64{1, 9}
	other := detect.Finding{ID: 8, Topic: "b", ClientID: id, Verdict: detect.Duplicated, NumRecords: 1, AppendedOffsets: []int64{2, 3, 4}, ProducerID: -1}
	c := countsOf([]detect.Finding{first, other, revised})
	if want := (recordCount{Duplicated: 6, Extra: 7, DupFindings: 2}); c.total != want {
		t.Errorf("total %+v, want %+v", c.total, want)
	}
	if got, want := c.topic("a"), (recordCount{Duplicated: 5, Extra: 5, DupFindings: 1}); got != want {
		t.Errorf("topic a %+v, want %+v", got, want)
	}
	if len(c.byProducer) != 1 {
		t.Fatalf("%d producers, want 1", len(c.byProducer))
	}
	for _, p := range c.byProducer {
		if p.Duplicated != 6 || p.Possibly != 0 {
			t.Errorf("producer %+v", p.recordCount)
		}
	}
}

// headFinding is a finding of verdict v from a producer at ip with client.id
// "app", of n records appended at offs.
func headFinding(ip string, v detect.Verdict, idempotent bool, n int32, offs ...int64) detect.Finding {
	pid := int64(-1)
	if idempotent {
		pid = 42
	}
	return detect.Finding{Client: netip.MustParseAddrPort(ip + ":5000"), Broker: netip.MustParseAddrPort("10.0.0.9:9092"),
		ClientID: str("app"), Topic: "orders", Verdict: v, Idempotent: idempotent, ProducerID: pid, NumRecords: n,
		AppendedOffsets: offs, Attempts: []detect.Attempt{{CorrelationID: 1}, {CorrelationID: 2, Cause: detect.CauseClientTimeout}}}
}

// headProducer is the profile of headFinding's producer.
func headProducer(ip, software string, idempotent bool, renumbered int64) profile.Producer {
	p := profile.Producer{ClientIP: netip.MustParseAddr(ip), ClientID: str("app"), ProducerID: -1, Idempotent: idempotent,
		SoftwareName: software, Renumbered: renumbered}
	if idempotent {
		p.ProducerID = 42
	}
	return p
}

// TestHeadline: the first lines of the table say how many records the log
// holds more than once, how many more may be, where, from which producer,
// and the setting of that producer's client that fixes it.
func TestHeadline(t *testing.T) {
	epoch := headFinding("10.0.0.3", detect.Duplicated, true, 3, 1, 4)
	epoch.Kind, epoch.ProducerChange = detect.KindRecordResend, detect.ProducerChangeEpoch
	twice := headFinding("10.0.0.4", detect.Duplicated, false, 1, 6, 8)
	twice.Kind = detect.KindRecordDuplicate
	kgo := headProducer("10.0.0.3", "kgo", true, 1)
	tests := []struct {
		name     string
		findings []detect.Finding
		ps       []profile.Producer
		want     []string
	}{
		{"librdkafka twice and thrice", []detect.Finding{
			headFinding("10.0.0.1", detect.Duplicated, false, 2, 10, 20),
			headFinding("10.0.0.1", detect.Duplicated, false, 1, 30, 31, 32)},
			[]profile.Producer{headProducer("10.0.0.1", "librdkafka", false, 0)}, []string{
				"The log holds 3 records more than once (4 extra copies), from 2 re-sent batches.",
				"  topic:    orders (3 records more than once)",
				`  producer: 10.0.0.1 client.id "app", librdkafka, not idempotent: 3 records more than once`,
				"            fix: enable.idempotence=true",
				"",
			}},
		{"kafka-go, possibly", []detect.Finding{headFinding("10.0.0.2", detect.Unconfirmed, false, 4, 7)},
			[]profile.Producer{headProducer("10.0.0.2", "kafka-go", false, 0)}, []string{
				"No record is known to be in the log twice, but up to 4 records may be: 1 re-sent batch unconfirmed (the capture does not show how many copies the log holds).",
				"  topic:    orders (up to 4 records)",
				`  producer: 10.0.0.2 client.id "app", kafka-go, not idempotent: up to 4 records`,
				"            fix: none: kafka-go has no idempotent producer",
			}},
		{"kgo new epoch, application twice, unprofiled", []detect.Finding{epoch, twice, headFinding("10.0.0.5", detect.Unconfirmed, false, 2)},
			[]profile.Producer{kgo}, []string{
				"The log holds 4 records twice (4 extra copies), from 2 re-sent batches.",
				"Up to 2 more records may be too: 1 re-sent batch unconfirmed (the capture does not show how many copies the log holds).",
				"  topic:    orders (4 records twice, up to 2 more)",
				`  producer: 10.0.0.3 client.id "app", kgo, idempotent producer id 42: 3 records twice`,
				"            fix: kgo.TransactionalID with read_committed consumers",
				`  producer: 10.0.0.5 client.id "app", not idempotent: up to 2 records`,
				"            fix: idempotence (enable.idempotence=true in most clients)",
				`  producer: 10.0.0.4 client.id "app", not idempotent: 1 record twice`,
				"            fix: none in the client: the application produced these records twice, each time answered with success",
				"",
			}},
		{"harmless only", []detect.Finding{headFinding("10.0.0.1", detect.Deduplicated, true, 1, 3),
			headFinding("10.0.0.1", detect.Unconfirmed, true, 1, 4)}, nil, []string{
			"No record is in the log twice: each of the 2 batches sent more than once is held once or not at all (deduplicated 1, unconfirmed 1).",
			"The unconfirmed are re-sends of idempotent producers, which the broker deduplicates.",
			"",
			`#1 DEDUPLICATED  orders/0  10.0.0.1:5000 -> 10.0.0.9:9092  client.id "app"  1 record, crc 0x00000000, 2 attempts (client_timeout), appended at offset 3`,
			`#2 UNCONFIRMED  orders/0  10.0.0.1:5000 -> 10.0.0.9:9092  client.id "app"  1 record, crc 0x00000000, 2 attempts (client_timeout), appended at offset 4`,
		}},
		{"nothing", nil, nil, []string{"No batch was sent more than once.", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summary{Files: []string{"x.pcap"}, Packets: 10, TCPConnections: 1, ProduceRequests: 5, Findings: int64(len(tt.findings)),
				ByVerdict: map[string]int64{}, KafkaConnections: []Connection{{ID: 1}}}
			for _, f := range tt.findings {
				s.ByVerdict[string(f.Verdict)]++
			}
			var buf bytes.Buffer
			w := NewTable(&buf)
			for _, f := range tt.findings {
				if err := w.Finding(f); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.(ProducerWriter).Producers(tt.ps); err != nil {
				t.Fatal(err)
			}
			if err := w.Summary(s); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(buf.String(), "\n")
			for i, want := range tt.want {
				if i >= len(lines) || lines[i] != want {
					t.Errorf("line %d:\n got %q\nwant %q\n%s", i+1, lines[min(i, len(lines)-1)], want, buf.String())
					break
				}
			}
		})
	}
}

// TestTableOptions: Verdicts prints those findings only and says how many
// it left out, the headline and summary counting all; by default a harmless
// finding is one line, All prints it in full.
func TestTableOptions(t *testing.T) {
	fs, s := findings(), summary()
	tests := []struct {
		name string
		o    Options
		full []string // verdicts printed in full, in order
		one  []string // in one line
		note string
	}{
		{"default", Options{}, []string{"UNCONFIRMED", "DUPLICATED"}, []string{"DEDUPLICATED", "SINGLE"}, "2 harmless findings are one line each"},
		{"all", Options{All: true}, []string{"UNCONFIRMED", "DEDUPLICATED", "DUPLICATED", "SINGLE"}, nil, ""},
		{"duplicated", Options{Verdicts: []detect.Verdict{detect.Duplicated}}, []string{"DUPLICATED"}, nil,
			"(--verdict duplicated: 1 of 4 findings printed; the headline and the summary count all.)"},
		{"single, all", Options{Verdicts: []detect.Verdict{detect.Single}, All: true}, []string{"SINGLE"}, nil, "1 of 4 findings printed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			write(t, NewTableWith(&buf, tt.o), fs, s)
			out := buf.String()
			var full, one []string
			lines := strings.Split(out, "\n")
			for i, l := range lines {
				if !strings.HasPrefix(l, "#") {
					continue
				}
				v := strings.Fields(l)[1]
				if strings.HasPrefix(lines[i+1], "   ") {
					full = append(full, v)
				} else {
					one = append(one, v)
				}
			}
			if fmt.Sprint(full) != fmt.Sprint(tt.full) || fmt.Sprint(one) != fmt.Sprint(tt.one) {
				t.Errorf("in full %v, one line %v; want %v, %v:\n%s", full, one, tt.full, tt.one, out)
			}
			if !strings.Contains(out, tt.note) || !strings.HasPrefix(out, "The log holds 50 records twice") ||
				!strings.Contains(out, "duplicated 1, deduplicated 1, single 1, unconfirmed 1") {
				t.Errorf("no %q, or the headline or summary does not count all:\n%s", tt.note, out)
			}
		})
	}
	var js bytes.Buffer
	write(t, NewJSONWith(&js, Options{Verdicts: []detect.Verdict{detect.Deduplicated, detect.Single}}), fs, s)
	lines := strings.Split(strings.TrimSpace(js.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"verdict":"deduplicated"`) || !strings.Contains(lines[1], `"verdict":"single"`) ||
		!strings.Contains(lines[2], `"duplicated_records":50,"extra_copies":50,"possibly_duplicated_records":10`) {
		t.Errorf("JSON of two verdicts:\n%s", js.String())
	}
}

func TestParseVerdicts(t *testing.T) {
	tests := []struct {
		in   string
		want string // fmt of the verdicts, or "error"
	}{
		{"duplicated", "[duplicated]"},
		{" Duplicated , unconfirmed,duplicated", "[duplicated unconfirmed]"},
		{"rejected,single,deduplicated", "[rejected single deduplicated]"},
		{"twice", "error"},
		{"", "error"},
		{",,", "error"},
	}
	for _, tt := range tests {
		v, err := ParseVerdicts(tt.in)
		got := fmt.Sprint(v)
		if err != nil {
			got = "error"
			if !strings.Contains(err.Error(), "duplicated, deduplicated, single, unconfirmed, rejected") {
				t.Errorf("%q: error %q does not list the verdicts", tt.in, err)
			}
		}
		if got != tt.want {
			t.Errorf("ParseVerdicts(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestOutputWidth(t *testing.T) {
	for _, tt := range []struct {
		columns string
		want    int
	}{{"", 0}, {"100", 100}, {" 80 ", 80}, {"0", 0}, {"-5", 0}, {"wide", 0}} {
		if got := OutputWidth(&bytes.Buffer{}, tt.columns); got != tt.want {
			t.Errorf("OutputWidth(buffer, %q) = %d, want %d", tt.columns, got, tt.want)
		}
	}
}

// TestFitTable: a table of random cells fitted to a width is no wider than
// it, keeps every row, and wraps its cells without losing a character
// unless a cell was cut (an ellipsis says where).
func TestFitTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		const letters = "abcdefghijklmnopqrstuvwxyz0123456789:._-"
		b := make([]byte, 1+rng.IntN(30))
		for i := range b {
			b[i] = letters[rng.IntN(len(letters))]
		}
		return string(b)
	}
	for trial := range 200 {
		cols, rows, width := 1+rng.IntN(9), 1+rng.IntN(5), 20+rng.IntN(180)
		header := make([]string, cols)
		for i := range header {
			header[i] = strings.ToUpper(word())
		}
		var body [][]string
		for range rows {
			r := make([]string, cols)
			for i := range r {
				var ws []string
				for range rng.IntN(6) {
					ws = append(ws, word())
				}
				r[i] = strings.Join(ws, " ")
			}
			body = append(body, r)
		}
		var buf bytes.Buffer
		ts := tables{b: &buf, width: width}
		tbl := ts.get(make([]tw.Align, cols)...)
		tbl.Header(header)
		if err := tbl.Bulk(body); err != nil {
			t.Fatal(err)
		}
		if err := tbl.Render(); err != nil {
			t.Fatal(err)
		}
		var fitted bytes.Buffer
		fitLines(&fitted, buf.Bytes(), width)
		out := fitted.String()
		for l := range strings.SplitSeq(out, "\n") {
			if n := utf8.RuneCountInString(l); n > width {
				t.Fatalf("trial %d: a line of %d runes at width %d:\n%s", trial, n, width, out)
			}
		}
		if strings.Contains(out, "…") {
			continue
		}
		flat := strings.NewReplacer(" ", "", "│", "", "\n", "", "─", "", "┌", "", "┐", "", "└", "", "┘", "", "├", "", "┤", "", "┬", "", "┴", "", "┼", "").Replace(out)
		for _, r := range body {
			for _, c := range r {
				for _, w := range strings.Fields(c) {
					if !strings.Contains(flat, w) && !strings.Contains(strings.ReplaceAll(out, "\n", ""), w) {
						// A word broken across lines is in flat only
						// when its pieces are in one column: look for
						// its first piece at least.
						if !strings.Contains(out, w[:min(len(w), 3)]) {
							t.Fatalf("trial %d: %q lost:\n%s", trial, w, out)
						}
					}
				}
			}
		}
	}
}

// TestHeldBound: past the bound on the text held until the summary, every
// further finding, harmful or not, is one line, and the table says how many.
func TestHeldBound(t *testing.T) {
	var buf bytes.Buffer
	w := newTableWriter(&buf, Options{}, false)
	w.maxHeld = 1 << 20
	f := headFinding("10.0.0.1", detect.Duplicated, false, 1, 1, 2)
	n := 0
	for w.held.Len() < w.maxHeld {
		n++
		if err := w.Finding(f); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if err := w.Finding(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Summary(Summary{Findings: int64(n + 3), ByVerdict: map[string]int64{"duplicated": int64(n + 3)}}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if got := strings.Count(out, "│ CORR ID │"); got != n {
		t.Errorf("%d findings in full, want the %d before the bound", got, n)
	}
	if !strings.Contains(out, "(3 more findings in one line past the first 1 MiB of findings' text; --format json prints them in full.)") {
		t.Errorf("no note of the findings past the bound:\n%s", out[len(out)-2000:])
	}
	if !strings.HasPrefix(out, fmt.Sprintf("The log holds %d records twice", n+3)) {
		t.Errorf("headline: %s", out[:200])
	}
}
