package report

import (
	"bytes"
	"io"
	"net/netip"
	"strings"
	"testing"
)

// TestSummaryEchoes: the requests seen on two connections show in every
// summary format, their legs named, and not at all when there were none.
func TestSummaryEchoes(t *testing.T) {
	ap := netip.MustParseAddrPort
	legs := []EchoLeg{
		{FirstClient: ap("10.99.0.1:40000"), FirstBroker: ap("10.0.0.2:9092"), SecondClient: ap("10.0.0.1:50000"), SecondBroker: ap("10.99.0.1:19092"), Requests: 3},
		{FirstClient: ap("10.0.0.1:50001"), FirstBroker: ap("10.0.0.2:9092"), SecondClient: ap("10.0.0.1:50001"), SecondBroker: ap("10.0.0.2:9092"), Requests: 1},
	}
	writers := []struct {
		name string
		new  func(io.Writer) Writer
		want []string
	}{
		{"table", NewTable, []string{"capture duplicates", "5 requests seen on two connections: proxy or NAT; counted once " +
			"(10.99.0.1:40000 -> 10.0.0.2:9092 and 10.0.0.1:50000 -> 10.99.0.1:19092, 3; 10.0.0.1:50001 -> 10.0.0.2:9092 twice: the capture given twice?, 1; 1 more on other connections)"}},
		{"json", NewJSON, []string{`"echoed_requests":5,"echo_legs":[{"first_client":"10.99.0.1:40000","first_broker":"10.0.0.2:9092",` +
			`"second_client":"10.0.0.1:50000","second_broker":"10.99.0.1:19092","requests":3},`}},
	}
	for _, w := range writers {
		for _, echoed := range []bool{true, false} {
			s := summary()
			if echoed {
				s.EchoedRequests, s.EchoLegs = 5, legs
			}
			var b bytes.Buffer
			if err := w.new(&b).Summary(s); err != nil {
				t.Fatalf("%s: %v", w.name, err)
			}
			out := strings.Join(strings.Fields(b.String()), " ")
			for _, want := range w.want {
				if echoed && !strings.Contains(out, strings.Join(strings.Fields(want), " ")) {
					t.Errorf("%s with echoes: no %q in\n%s", w.name, want, b.String())
				}
			}
			if !echoed && (strings.Contains(out, "echo") || strings.Contains(out, "two connections")) {
				t.Errorf("%s without echoes mentions them:\n%s", w.name, b.String())
			}
		}
	}
}
