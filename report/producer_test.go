package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kdupcap/kdupcap/detect"
)

// TestProducerLines: a producer line has every key, arrays [] never null;
// the table writes nothing for no producer and wraps the diagnosis.
func TestProducerLines(t *testing.T) {
	var buf bytes.Buffer
	w := NewJSON(&buf).(ProducerWriter)
	if err := w.Producers([]detect.Producer{{ProducerID: -1}}); err != nil {
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
	if err := tw.Producers([]detect.Producer{{ProducerID: -1, Diagnosis: long}}); err != nil {
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
