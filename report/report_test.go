package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/report/internal/fixture"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(msec float64) time.Time { return t0.Add(time.Duration(msec * float64(time.Millisecond))) }

func str(s string) *string { return &s }

// findings are fixture.Findings: the two seed cases, a batch sent three
// times, and a Produce v13 one named by topic ID over IPv6 with a null
// client.id.
func findings() []detect.Finding { return fixture.Findings() }

func summary() Summary {
	return Summary{
		Files:   []string{"seed-nonidempotent-retry.pcap", "seed-idempotent-retry.pcap"},
		Packets: 1234, Bytes: 567890, TCPConnections: 5, Gaps: 1, GapBytes: 1448,
		KafkaConnections: []Connection{
			{ID: 1, Client: netip.MustParseAddrPort("172.18.0.1:40312"), Broker: netip.MustParseAddrPort("172.18.0.3:19092"),
				DetectedBy: "sniff", ClientIDs: []string{"rdkafka"}, ProduceRequests: 30},
			{ID: 2, Client: netip.MustParseAddrPort("[::1]:51000"), Broker: netip.MustParseAddrPort("[::1]:9092"),
				DetectedBy: "port", ProduceRequests: 3},
		},
		Frames: 80, ProduceRequests: 33, ProduceResponses: 31, Batches: 40, Records: 400, Malformed: 2, Resyncs: 1,
		Findings:  4,
		ByVerdict: map[string]int64{"unconfirmed": 1, "deduplicated": 1, "duplicated": 1, "single": 1},
		ByTopic: []TopicCount{
			{Topic: "orders", Batches: 10, Records: 200, Findings: 1, Duplicated: 1},
			{Topic: "test", Batches: 30, Records: 200, Findings: 2},
		},
		Errors:       []string{"capture: seed-idempotent-retry.pcap: truncated at byte 4096"},
		FailedInputs: []FailedInput{{File: "seed-idempotent-retry.pcap", ResultsUpTo: 4096}},
	}
}

var cases = []struct {
	name     string
	findings []detect.Finding
	summary  Summary
}{
	{"findings", findings(), summary()},
	{"empty", nil, Summary{}},
	{"across", []detect.Finding{acrossConnections()}, Summary{Findings: 1, ByVerdict: map[string]int64{"duplicated": 1}}},
}

var formats = []struct {
	ext string
	new func(w *bytes.Buffer) Writer
}{
	{"table", func(w *bytes.Buffer) Writer { return NewTable(w) }},
	{"jsonl", func(w *bytes.Buffer) Writer { return NewJSON(w) }},
	{"lines", func(w *bytes.Buffer) Writer { return NewLines(w) }},
}

func write(t *testing.T, w Writer, fs []detect.Finding, s Summary) {
	t.Helper()
	for _, f := range fs {
		if err := w.Finding(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Summary(s); err != nil {
		t.Fatal(err)
	}
}

func TestGolden(t *testing.T) {
	for _, c := range cases {
		for _, f := range formats {
			name := c.name + "." + f.ext
			t.Run(name, func(t *testing.T) {
				var buf bytes.Buffer
				write(t, f.new(&buf), c.findings, c.summary)
				golden := filepath.Join("testdata", name+".golden")
				if *update {
					if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				if !bytes.Equal(buf.Bytes(), want) {
					t.Errorf("output differs from %s (go test -update rewrites it)\n got:\n%s\nwant:\n%s", golden, buf.Bytes(), want)
				}
				// Deterministic: a second run gives the same bytes.
				var again bytes.Buffer
				write(t, f.new(&again), c.findings, c.summary)
				if !bytes.Equal(buf.Bytes(), again.Bytes()) {
					t.Error("two runs differ")
				}
			})
		}
	}
}

// TestJSONRoundTrip checks that every line is one JSON object that decodes,
// with no unknown field, back to the value written, and that it says what
// the finding or summary written holds (wantJSONFinding, wantJSONSummary:
// the schema applied by hand to their fields).
func TestJSONRoundTrip(t *testing.T) {
	fs, s := findings(), summary()
	var buf bytes.Buffer
	write(t, NewJSON(&buf), fs, s)
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 1<<20)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) != len(fs)+1 {
		t.Fatalf("%d lines, want %d", len(lines), len(fs)+1)
	}
	for i, line := range lines {
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		var got, want any
		if i < len(fs) {
			var j jsonFinding
			err := dec.Decode(&j)
			got, want = j, toJSONFinding(&fs[i])
			if err != nil {
				t.Fatalf("line %d: %v", i+1, err)
			}
		} else {
			var j jsonSummary
			err := dec.Decode(&j)
			got, want = j, toJSONSummary(&s, countsOf(fs))
			if err != nil {
				t.Fatalf("line %d: %v", i+1, err)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("line %d decodes to\n%+v\nwant\n%+v", i+1, got, want)
		}
		var obj map[string]any
		dec = json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&obj); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		var wantObj map[string]any
		if i < len(fs) {
			wantObj = wantJSONFinding(fs[i])
		} else {
			// The fixture: 50 records at offsets 50 and 51 (orders), and
			// an unconfirmed batch of 10 of a producer not idempotent.
			wantObj = wantJSONSummary(s, wantRecords{duplicated: 50, extra: 50, possibly: 10,
				topics: map[string][2]int64{"orders": {50, 50}}})
			wantJSONStatus(wantObj, s)
		}
		if !reflect.DeepEqual(obj, wantObj) {
			t.Errorf("line %d says\n%v\nthe value written holds\n%v", i+1, obj, wantObj)
		}
	}
}

// TestJSONContract checks the parts of the schema a golden file could hide:
// keys present or absent, nulls and empty arrays.
func TestJSONContract(t *testing.T) {
	var buf bytes.Buffer
	write(t, NewJSON(&buf), findings()[2:4], Summary{})
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	var f map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &f); err != nil {
		t.Fatal(err)
	}
	if f["type"] != "duplicate" || f["client_id"] != "console-producer" || f["topic_id"] != nil || f["batch_crc"] != "0x00000001" {
		t.Errorf("finding keys: %v", f)
	}
	atts := f["attempts"].([]any)
	first, second := atts[0].(map[string]any), atts[1].(map[string]any)
	if _, ok := first["gap_ms"]; ok {
		t.Error("first attempt has gap_ms")
	}
	if v, ok := first["cause"]; !ok || v != nil {
		t.Errorf("first attempt cause %v, want null", v)
	}
	if v, ok := first["response"]; !ok || v != nil || first["no_response"] != "later response seen" {
		t.Errorf("first attempt response %v no_response %v", v, first["no_response"])
	}
	if _, ok := second["cause_error"]; ok || second["cause"] != "client_timeout" || second["gap_ms"] != 1000.0 {
		t.Errorf("second attempt: %v", second)
	}
	if _, ok := second["no_response"]; ok {
		t.Error("answered attempt has no_response")
	}
	if atts[2].(map[string]any)["time"] != "2026-03-01T12:02:02.000000000Z" {
		t.Errorf("time %v", atts[2].(map[string]any)["time"])
	}
	var g map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &g); err != nil {
		t.Fatal(err)
	}
	if g["client_id"] != nil || g["topic_id"] != "deadbeef-0102-0304-0506-0708090a0b0c" || g["topic"] != "deadbeef-0102-0304-0506-0708090a0b0c" {
		t.Errorf("v13 finding: client_id %v topic_id %v topic %v", g["client_id"], g["topic_id"], g["topic"])
	}
	named := findings()[3]
	named.Topic = "orders" // a Metadata response in the capture named the ID
	var nb bytes.Buffer
	if err := NewJSON(&nb).Finding(named); err != nil {
		t.Fatal(err)
	}
	var n map[string]any
	if err := json.Unmarshal(nb.Bytes(), &n); err != nil {
		t.Fatal(err)
	}
	if n["topic"] != "orders" || n["topic_id"] != "deadbeef-0102-0304-0506-0708090a0b0c" {
		t.Errorf("named v13 finding: topic %v topic_id %v", n["topic"], n["topic_id"])
	}
	var s map[string]any
	if err := json.Unmarshal([]byte(lines[2]), &s); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"files", "kafka_connections", "topics", "errors"} {
		if v, ok := s[k].([]any); !ok || len(v) != 0 {
			t.Errorf("summary %q = %v, want []", k, s[k])
		}
	}
	bv := s["by_verdict"].(map[string]any)
	if len(bv) != 5 || bv["rejected"] != 0.0 || bv["duplicated"] != 0.0 || bv["unconfirmed"] != 0.0 {
		t.Errorf("by_verdict %v", bv)
	}
}

type failWriter struct{}

var errDisk = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errDisk }

func TestWriteErrors(t *testing.T) {
	for _, w := range []Writer{NewTable(failWriter{}), NewJSON(failWriter{}), NewLines(failWriter{})} {
		err := w.Finding(findings()[0])
		if _, held := w.(tableOut); held && err == nil {
			// The table writes its findings after the headline, at the
			// summary.
		} else if !errors.Is(err, errDisk) || !strings.HasPrefix(err.Error(), "report: ") {
			t.Errorf("Finding error %v", err)
		}
		if err := w.Summary(summary()); !errors.Is(err, errDisk) || !strings.HasPrefix(err.Error(), "report: ") {
			t.Errorf("Summary error %v", err)
		}
	}
}
