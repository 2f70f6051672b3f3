package html

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/profile"
	"github.com/kdupcap/kdupcap/report"
	xhtml "golang.org/x/net/html"
)

// testFinding is finding i of a generated run: three attempts, on two
// connections, to one of three brokers, with records.
func testFinding(i int, t0 time.Time, records int) detect.Finding {
	vs := detect.Verdicts()
	v := vs[i%len(vs)]
	id := fmt.Sprintf("producer-%d", i%50)
	broker := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(1 + i%3)}), 9092)
	client := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, 0, byte(i % 50)}), uint16(40000+i%1000))
	at := t0.Add(time.Duration(i) * 170 * time.Millisecond)
	f := detect.Finding{Kind: detect.KindBatch, ConnID: uint64(i), Client: client, Broker: broker, ClientID: &id,
		Topic: fmt.Sprintf("topic-%d", i%7), Partition: int32(i % 12), ProducerID: -1, NumRecords: int32(records),
		Verdict: v, Reason: "generated <finding> & its \"reason\"", Match: detect.MatchBytes, Scope: detect.ScopeClient}
	if v == detect.Duplicated {
		f.AppendedOffsets = []int64{int64(i), int64(i + 1)}
	}
	for a := range 3 {
		sent := at.Add(time.Duration(a) * 300 * time.Millisecond)
		att := detect.Attempt{ConnID: uint64(i + a/2), Client: client, Broker: broker, CorrelationID: int32(a + 7), Time: sent,
			Version: 9, Acks: -1, TimeoutMillis: 300}
		if a > 0 {
			att.Cause, att.CauseError, att.GapMillis = detect.CauseBrokerError, "REQUEST_TIMED_OUT", 300
		}
		lat := time.Duration(1+i%40) * time.Millisecond
		att.Response = &detect.Response{Time: sent.Add(lat), Error: "NONE", BaseOffset: int64(i), LatencyMillis: float64(lat) / 1e6}
		f.Attempts = append(f.Attempts, att)
	}
	for r := range records {
		f.Records = append(f.Records, detect.Record{Offset: -1, OffsetDelta: int32(r), Key: []byte("k"), KeyLen: 1,
			Value: bytes.Repeat([]byte("v"), 200), ValueLen: 200, Known: true})
	}
	return f
}

func testProducers(n int) []profile.Producer {
	var ps []profile.Producer
	for i := range n {
		id := fmt.Sprintf("producer-%d", i)
		p := profile.Producer{ClientIP: netip.AddrFrom4([4]byte{10, 1, 0, byte(i)}), ClientID: &id, ProducerID: -1,
			Acks: []int16{-1}, TimeoutsMillis: []int32{300}, MaxInFlight: 5, Codecs: []string{"zstd"},
			Diagnosis: "it re-sent after <300 ms> timeouts", Resent: 10, Resends: 20,
			Causes: []profile.CauseCount{{Cause: detect.CauseBrokerError, Error: "REQUEST_TIMED_OUT", Count: 15}, {Cause: detect.CauseClientTimeout, Count: 5}}}
		for b := range 3 {
			p.Latency = append(p.Latency, profile.BrokerLatency{Broker: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(1 + b)}), 9092),
				Answered: 100, P50Millis: 2, P99Millis: 290, MaxMillis: 301})
		}
		ps = append(ps, p)
	}
	return ps
}

// write runs findings and producers through a Writer and returns the page.
func write(t *testing.T, o Options, fs []detect.Finding, ps []profile.Producer) []byte {
	t.Helper()
	var b bytes.Buffer
	w := New(&b, o)
	byVerdict := map[string]int64{}
	for _, f := range fs {
		byVerdict[string(f.Verdict)]++
		if err := w.Finding(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Producers(ps); err != nil {
		t.Fatal(err)
	}
	if err := w.Summary(report.Summary{Files: []string{"gen.pcap"}, Findings: int64(len(fs)), ByVerdict: byVerdict}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// checkPage parses the page and fails on anything it would fetch.
func checkPage(t *testing.T, page []byte) *xhtml.Node {
	t.Helper()
	doc, err := xhtml.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var walk func(n *xhtml.Node)
	walk = func(n *xhtml.Node) {
		for _, a := range n.Attr {
			if (a.Key == "src" || a.Key == "href") && strings.Contains(a.Val, "//") {
				t.Errorf("<%s %s=%q> fetches", n.Data, a.Key, a.Val)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return doc
}

// TestBounded: a run of many findings, each with records, and many
// producers stays under 5 MB, and the page says what it left out.
func TestBounded(t *testing.T) {
	const maxPage = 5 << 20
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	tests := []struct {
		name      string
		findings  int
		records   int
		producers int
		notes     []string
	}{
		{"few", 10, 3, 2, nil},
		{"thousands", 5000, 20, 300, []string{"findings are not drawn in full", "more findings are not in the table", "more producers are not shown"}},
		{"100k", 100000, 1, 50, []string{"more re-sends are not marked", "findings are not drawn in full"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := make([]detect.Finding, tt.findings)
			for i := range fs {
				fs[i] = testFinding(i, t0, tt.records)
			}
			page := write(t, Options{}, fs, testProducers(tt.producers))
			t.Logf("%d findings: %d bytes", tt.findings, len(page))
			if len(page) > maxPage {
				t.Errorf("page of %d bytes, over %d", len(page), maxPage)
			}
			checkPage(t, page)
			for _, n := range tt.notes {
				if !bytes.Contains(page, []byte(n)) {
					t.Errorf("page does not say %q", n)
				}
			}
			if bytes.Contains(page, []byte("<finding>")) {
				t.Error("a reason is not escaped")
			}
		})
	}
}

// TestVerdicts: Options.Verdicts lists only those findings; the counts and
// marks take all.
func TestVerdicts(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	var fs []detect.Finding
	for i := range 10 {
		fs = append(fs, testFinding(i, t0, 1))
	}
	page := string(write(t, Options{Verdicts: []detect.Verdict{detect.Duplicated}}, fs, nil))
	checkPage(t, []byte(page))
	if n := strings.Count(page, `<details class="finding"`); n != 2 {
		t.Errorf("%d findings drawn, want the 2 duplicated", n)
	}
	if !strings.Contains(page, "8 findings of other verdicts are not listed") {
		t.Error("the page does not say what --verdict left out")
	}
	if n := strings.Count(page, `class="mk `); n != 20 {
		t.Errorf("%d marks, want 20 (2 re-sends of each finding)", n)
	}
	if !strings.Contains(page, `<dd data-verdict="unconfirmed">2</dd>`) {
		t.Error("the counts do not take every finding")
	}
}

// TestTableTexts: the page shows a client.id, a null key and a cut value
// in the words of the table (report.ClientIDText, report.PrintableBytes),
// a value cut at recordBytesShown bytes.
func TestTableTexts(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	named := testFinding(0, t0, 1)
	named.Records[0].Key, named.Records[0].KeyLen = nil, -1
	null := testFinding(1, t0, 0)
	null.ClientID = nil
	doc := checkPage(t, write(t, Options{}, []detect.Finding{named, null}, nil))
	var text strings.Builder
	var walk func(n *xhtml.Node)
	walk = func(n *xhtml.Node) {
		if n.Type == xhtml.TextNode {
			text.WriteString(n.Data + "\n")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	for _, want := range []string{
		`10.1.0.0 client.id "producer-0"`,
		"10.1.0.1 client.id (null)",
		"\n(null)\n",
		"\n" + strings.Repeat("v", recordBytesShown) + "... (200 bytes)\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the page's text has no %q", want)
		}
	}
}
