package report

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/kdupcap/kdupcap/profile"
)

// TestSummarySASL: the connections table gets a SASL USER column, and the
// JSON connection sasl_* keys, only when a connection authenticated.
func TestSummarySASL(t *testing.T) {
	writers := []struct {
		name string
		new  func(io.Writer) Writer
		want []string
	}{
		{"table", NewTable, []string{"SASL USER", "alice (SCRAM-SHA-256)", "failed (PLAIN)"}},
		{"json", NewJSON, []string{`"produce_requests":30,"sasl_mechanism":"SCRAM-SHA-256","sasl_user":"alice"}`,
			`"produce_requests":3,"sasl_mechanism":"PLAIN","sasl_failed":true}`}},
	}
	for _, w := range writers {
		for _, sasl := range []bool{true, false} {
			s := summary()
			if sasl {
				s.KafkaConnections[0].SASLMechanism, s.KafkaConnections[0].SASLUser = "SCRAM-SHA-256", "alice"
				s.KafkaConnections[1].SASLMechanism, s.KafkaConnections[1].SASLFailed = "PLAIN", true
			}
			var b bytes.Buffer
			if err := w.new(&b).Summary(s); err != nil {
				t.Fatalf("%s: %v", w.name, err)
			}
			out := b.String()
			for _, want := range w.want {
				if sasl && !strings.Contains(out, want) {
					t.Errorf("%s with SASL: no %q in\n%s", w.name, want, out)
				}
			}
			if !sasl && strings.Contains(strings.ToLower(out), "sasl") {
				t.Errorf("%s without SASL mentions it:\n%s", w.name, out)
			}
		}
	}
	if got := saslText(Connection{SASLMechanism: "GSSAPI"}); got != "unknown (GSSAPI)" {
		t.Errorf("GSSAPI without a user: %q", got)
	}
}

// TestProducerSASL: a producer's SASL users show in its table block and
// JSON line, and nothing of SASL when it has none.
func TestProducerSASL(t *testing.T) {
	for _, users := range [][]string{{"alice", "svc\x01"}, nil} {
		p := profile.Producer{ProducerID: -1, SASLUsers: users}
		var tb, jb bytes.Buffer
		if err := streamTable(&tb).Producers([]profile.Producer{p}); err != nil {
			t.Fatal(err)
		}
		if err := NewJSON(&jb).(ProducerWriter).Producers([]profile.Producer{p}); err != nil {
			t.Fatal(err)
		}
		if users != nil {
			if !strings.Contains(tb.String(), "   sasl user alice, \"svc\\x01\"\n") {
				t.Errorf("table:\n%s", tb.String())
			}
			if !strings.Contains(jb.String(), `"sasl_users":["alice","svc\u0001"]`) {
				t.Errorf("json: %s", jb.String())
			}
			continue
		}
		if strings.Contains(tb.String()+jb.String(), "sasl") {
			t.Errorf("no SASL, yet:\n%s%s", tb.String(), jb.String())
		}
	}
}
