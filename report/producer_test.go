package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/profile"
)

// TestProducerLines: a producer line has every key, arrays [] never null;
// the table writes nothing for no producer and wraps the diagnosis.
func TestProducerLines(t *testing.T) {
	var buf bytes.Buffer
	w := NewJSON(&buf).(ProducerWriter)
	if err := w.Producers([]profile.Producer{{ProducerID: -1}}); err != nil {
		t.Fatal(err)
	}
	line := buf.String()
	for _, k := range []string{`"type":"producer"`, `"client_id":null`, `"transactional_ids":[]`, `"acks":[]`, `"timeout_ms":[]`,
		`"codecs":[]`, `"latency":[]`, `"by_verdict":{}`, `"causes":[]`, `"unretried":[]`, `"diagnosis":""`} {
		if !strings.Contains(line, k) {
			t.Errorf("line lacks %s: %s", k, line)
		}
	}
	if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
		t.Errorf("not one line: %q", line)
	}

	buf.Reset()
	tw := NewTable(&buf).(ProducerWriter)
	if err := tw.Producers(nil); err != nil || buf.Len() != 0 {
		t.Errorf("no producer wrote %q, %v", buf.String(), err)
	}
	long := strings.Repeat("word ", 60)
	if err := tw.Producers([]profile.Producer{{ProducerID: -1, Diagnosis: long}}); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.HasPrefix(l, "     word") && len(l) > 5+96 {
			t.Errorf("diagnosis line of %d bytes: %q", len(l), l)
		}
	}
	if !strings.Contains(buf.String(), "Producers\n") || !strings.Contains(buf.String(), "Diagnosis:") {
		t.Errorf("table:\n%s", buf.String())
	}
}

// TestProducersLinesAndMulti: the lines writer prints the table's
// "Producers" section between the finding lines and the summary, and Multi
// hands the profiles to every writer that writes them, skipping the others.
func TestProducersLinesAndMulti(t *testing.T) {
	ps := []profile.Producer{{ProducerID: -1, Acks: []int16{-1}, Diagnosis: "re-sent twice"}}
	var lines, table, js bytes.Buffer
	lw := NewLines(&lines)
	if err := lw.Finding(detect.Finding{Verdict: detect.Duplicated, ProducerID: -1}); err != nil {
		t.Fatal(err)
	}
	tw := NewTable(&table)
	if err := tw.Finding(detect.Finding{Verdict: detect.Duplicated, ProducerID: -1}); err != nil {
		t.Fatal(err)
	}
	m := Multi(lw, NewJSON(&js), counterOnly{})
	pw, ok := m.(ProducerWriter)
	if !ok {
		t.Fatal("Multi does not write producers")
	}
	if err := pw.Producers(ps); err != nil {
		t.Fatal(err)
	}
	if err := m.Summary(Summary{}); err != nil {
		t.Fatal(err)
	}
	if err := tw.(ProducerWriter).Producers(ps); err != nil {
		t.Fatal(err)
	}
	out := lines.String()
	section := table.String()[strings.Index(table.String(), "\nProducers\n"):]
	iLine, iProd, iSum := strings.Index(out, "DUPLICATED"), strings.Index(out, section), strings.Index(out, "Summary\n")
	if iLine < 0 || iProd < 0 || iSum < 0 || !(iLine < iProd && iProd < iSum) {
		t.Errorf("lines output lacks the table's Producers section between finding and summary:\n%s\nsection:\n%s", out, section)
	}
	if strings.Count(js.String(), `"type":"producer"`) != 1 {
		t.Errorf("json got %q", js.String())
	}
}

// counterOnly is a Writer that does not write producers.
type counterOnly struct{}

func (counterOnly) Finding(detect.Finding) error { return nil }
func (counterOnly) Summary(Summary) error        { return nil }
