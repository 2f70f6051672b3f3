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
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(msec float64) time.Time { return t0.Add(time.Duration(msec * float64(time.Millisecond))) }

func str(s string) *string { return &s }

// findings are synthetic: the two seed cases, a batch sent three times, and
// a Produce v13 one named by topic ID over IPv6 with a null client.id.
func findings() []detect.Finding {
	return []detect.Finding{
		{
			ConnID: 1, Client: netip.MustParseAddrPort("172.18.0.1:40312"), Broker: netip.MustParseAddrPort("172.18.0.3:19092"),
			ClientID: str("rdkafka"), Topic: "test", Partition: 0,
			ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 10, BatchCRC: 0x0a1b2c3d, Magic: 2,
			Match: detect.MatchBytes, Verdict: detect.Unconfirmed, AppendedOffsets: []int64{112},
			Reason: "attempt 28 has no response in the capture; producer not idempotent: the log may hold the batch twice",
			Attempts: []detect.Attempt{
				{CorrelationID: 27, Time: at(0), Version: 7, Acks: -1, TimeoutMillis: 5000,
					Response: &detect.Response{Time: at(5001.25), ErrorCode: 7, Error: "REQUEST_TIMED_OUT", BaseOffset: 112, LogAppendTime: -1, LatencyMillis: 5001.25}},
				{CorrelationID: 28, Time: at(5002.5), Version: 7, Acks: -1, TimeoutMillis: 5000, NoResponse: "end of capture",
					Cause: detect.CauseBrokerError, CauseError: "REQUEST_TIMED_OUT", GapMillis: 5002.5},
			},
		},
		{
			ConnID: 2, Client: netip.MustParseAddrPort("172.18.0.1:40400"), Broker: netip.MustParseAddrPort("172.18.0.4:29092"),
			ClientID: str("rdkafka"), Topic: "test", Partition: 1,
			ProducerID: 0, ProducerEpoch: 0, FirstSequence: 1, NumRecords: 1, BatchCRC: 0xdeadbeef, Magic: 2, Idempotent: true,
			Match: detect.MatchBytes, Verdict: detect.Deduplicated, AppendedOffsets: []int64{204},
			Reason: "attempt 7 was answered with no error at offset 204, where attempt 6 was appended: the broker deduplicated the resend of the same sequence",
			Attempts: []detect.Attempt{
				{CorrelationID: 6, Time: at(60000), Version: 9, Acks: -1, TimeoutMillis: 30000,
					Response: &detect.Response{Time: at(90000), ErrorCode: 7, Error: "REQUEST_TIMED_OUT", BaseOffset: 204, LogAppendTime: -1, LatencyMillis: 30000}},
				{CorrelationID: 7, Time: at(90000.001), Version: 9, Acks: -1, TimeoutMillis: 30000,
					Cause: detect.CauseBrokerError, CauseError: "REQUEST_TIMED_OUT", GapMillis: 30000.001,
					Response: &detect.Response{Time: at(90002), ErrorCode: 0, Error: "NONE", BaseOffset: 204, LogAppendTime: -1, LatencyMillis: 1.999}},
			},
		},
		{
			ConnID: 3, Client: netip.MustParseAddrPort("10.0.0.1:50000"), Broker: netip.MustParseAddrPort("10.0.0.2:9092"),
			ClientID: str("console-producer"), Topic: "orders", Partition: 3,
			ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 50, BatchCRC: 0x00000001, Magic: 2,
			Match: detect.MatchBytes, Verdict: detect.Duplicated, AppendedOffsets: []int64{50, 51},
			Reason: "attempts 2 and 3 were appended at offsets 50 and 51: the log holds the batch at least twice (attempt 1 has no response in the capture)",
			Attempts: []detect.Attempt{
				{CorrelationID: 1, Time: at(120000), Version: 7, Acks: 1, TimeoutMillis: 1000, NoResponse: "later response seen"},
				{CorrelationID: 2, Time: at(121000), Version: 7, Acks: 1, TimeoutMillis: 1000,
					Cause: detect.CauseClientTimeout, GapMillis: 1000,
					Response: &detect.Response{Time: at(121500), ErrorCode: 7, Error: "REQUEST_TIMED_OUT", BaseOffset: 50, LogAppendTime: -1, LatencyMillis: 500}},
				{CorrelationID: 3, Time: at(122000), Version: 7, Acks: 1, TimeoutMillis: 1000,
					Cause: detect.CauseBrokerError, CauseError: "REQUEST_TIMED_OUT", GapMillis: 1000,
					Response: &detect.Response{Time: at(122010), ErrorCode: 0, Error: "NONE", BaseOffset: 51, LogAppendTime: 1772366522010, LatencyMillis: 10}},
			},
		},
		{
			ConnID: 4, Client: netip.MustParseAddrPort("[::1]:51000"), Broker: netip.MustParseAddrPort("[::1]:9092"),
			TopicID: [16]byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, Partition: 0,
			ProducerID: 7, ProducerEpoch: 2, FirstSequence: 40, NumRecords: 5, BatchCRC: 0xffffffff, Magic: 2, Idempotent: true,
			Match: detect.MatchSequence, Verdict: detect.Single, AppendedOffsets: []int64{9},
			Reason: "only attempt 11 was appended (offset 9); attempt 10 was rejected with NOT_LEADER_OR_FOLLOWER: the log holds the batch once",
			Attempts: []detect.Attempt{
				{CorrelationID: 10, Time: at(180000), Version: 13, Acks: -1, TimeoutMillis: 30000,
					Response: &detect.Response{Time: at(180001), ErrorCode: 6, Error: "NOT_LEADER_OR_FOLLOWER", BaseOffset: -1, LogAppendTime: -1, LatencyMillis: 1}},
				{CorrelationID: 11, Time: at(180100), Version: 13, Acks: -1, TimeoutMillis: 30000,
					Cause: detect.CauseBrokerError, CauseError: "NOT_LEADER_OR_FOLLOWER", GapMillis: 100,
					Response: &detect.Response{Time: at(180102), ErrorCode: 0, Error: "NONE", BaseOffset: 9, LogAppendTime: -1, LatencyMillis: 2}},
				{CorrelationID: 12, Time: at(180200), Version: 13, Acks: -1, TimeoutMillis: 30000,
					Cause: detect.CauseNotARetry, GapMillis: 100,
					Response: &detect.Response{Time: at(180202), ErrorCode: 0, Error: "NONE", BaseOffset: 9, LogAppendTime: -1, LatencyMillis: 2}},
			},
		},
	}
}

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
		Errors: []string{"capture: seed-idempotent-retry.pcap: truncated at byte 4096"},
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
// with no unknown field, back to the value written.
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
			got, want = j, toJSONSummary(&s)
			if err != nil {
				t.Fatalf("line %d: %v", i+1, err)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("line %d decodes to\n%+v\nwant\n%+v", i+1, got, want)
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
		if err := w.Finding(findings()[0]); !errors.Is(err, errDisk) || !strings.HasPrefix(err.Error(), "report: ") {
			t.Errorf("Finding error %v", err)
		}
		if err := w.Summary(summary()); !errors.Is(err, errDisk) || !strings.HasPrefix(err.Error(), "report: ") {
			t.Errorf("Summary error %v", err)
		}
	}
}
