package report

import (
	"bytes"
	"io"
	"net/netip"
	"os"
	"path/filepath"
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
	// The table is written at the summary, after the headline.
	if err := tw.(Writer).Summary(Summary{}); err != nil {
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
	if err := tw.Summary(Summary{}); err != nil {
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

// goldenProducers are two profiles built by hand: a kafkajs producer told
// by its client.id only (a guess), and a confluent-kafka-python producer,
// idempotent, whose records the log holds twice under a new epoch after
// the client closed connections on its own timeout and the broker reset
// others right after answering.
func goldenProducers() []profile.Producer {
	kjs, rdk := "kafkajs", "rdkafka"
	ps := []profile.Producer{
		{
			ClientIP: netip.MustParseAddr("10.0.0.1"), ClientID: &kjs, ProducerID: -1,
			SoftwareGuess: "kafkajs", InferredFrom: `client.id "kafkajs", ApiVersions v2 and Produce v7`,
			ApiVersions: []int16{2}, ProduceVersions: []int16{7},
			Acks: []int16{-1}, TimeoutsMillis: []int32{30000}, MaxInFlight: 1, Codecs: []string{"none"},
			Requests: 12, Sends: 12, Batches: 10, RecordsMean: 1, RecordsMax: 1, Resent: 2, Resends: 2,
			ByVerdict: map[detect.Verdict]int64{detect.Duplicated: 2}, MostCopies: 2,
			Causes: []profile.CauseCount{{Cause: detect.CauseClientTimeout, Count: 2, MinGapMillis: 30001, MaxGapMillis: 30002}},
			Latency: []profile.BrokerLatency{{Broker: netip.MustParseAddrPort("10.0.0.2:9092"), Answered: 10, P50Millis: 2, P99Millis: 40000, MaxMillis: 41000,
				Succeeded: 10, SucceededP50Millis: 2, SucceededP99Millis: 40000}},
		},
		{
			ClientIP: netip.MustParseAddr("10.0.0.3"), ClientID: &rdk, ProducerID: 7, Idempotent: true,
			SoftwareName: "confluent-kafka-python", SoftwareVersion: "2.11.0-rdkafka-2.11.1", LibrdkafkaVersion: "2.11.1",
			ApiVersions: []int16{3}, ProduceVersions: []int16{10},
			Acks: []int16{-1}, TimeoutsMillis: []int32{30000}, MaxInFlight: 5, Codecs: []string{"none"},
			Requests: 110, Sends: 110, Batches: 100, RecordsMean: 4, RecordsMax: 10, Resent: 8, Resends: 10,
			ByVerdict: map[detect.Verdict]int64{detect.Duplicated: 3, detect.Deduplicated: 5}, MostCopies: 2,
			Causes: []profile.CauseCount{
				{Cause: detect.CauseClientTimeout, Error: "client FIN", Count: 7, MinGapMillis: 60000, MaxGapMillis: 60100,
					Ended: 7, MinEndMillis: 60000, MaxEndMillis: 60050, MinAfterEndMillis: 1, MaxAfterEndMillis: 50},
				{Cause: detect.CauseAnswerLost, Error: "broker RST", Count: 3, MinGapMillis: 300, MaxGapMillis: 310,
					Ended: 3, MinEndMillis: 4, MaxEndMillis: 6, MinAfterEndMillis: 290, MaxAfterEndMillis: 305},
			},
			Renumbered: 3,
			Changes: []profile.ChangeCount{{Change: detect.ProducerChangeEpoch, ProducerID: 7, ToProducerID: 7, Epoch: 0, ToEpoch: 1,
				Cause: detect.CauseClientTimeout, Error: "client FIN", Count: 3, Duplicated: 3}},
			Latency: []profile.BrokerLatency{{Broker: netip.MustParseAddrPort("10.0.0.2:9092"), Answered: 100, P50Millis: 3, P99Millis: 70000, MaxMillis: 80000,
				Succeeded: 100, SucceededP50Millis: 3, SucceededP99Millis: 70000}},
		},
	}
	for i := range ps {
		ps[i].Overall = ps[i].Latency[0]
		ps[i].Overall.Broker = netip.AddrPort{}
		ps[i].Diagnosis = profile.Diagnose(&ps[i])
	}
	return ps
}

// TestProducersGolden: the Producers section and the producer lines of the
// golden profiles, byte for byte (go test -update rewrites them).
func TestProducersGolden(t *testing.T) {
	for _, f := range []struct {
		ext string
		new func(io.Writer) Writer
	}{{"table", func(w io.Writer) Writer { return streamTable(w) }}, {"jsonl", NewJSON}} {
		t.Run(f.ext, func(t *testing.T) {
			var buf bytes.Buffer
			if err := f.new(&buf).(ProducerWriter).Producers(goldenProducers()); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "producers."+f.ext+".golden")
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
		})
	}
}

// TestProducerGuessRendering: a guessed client is shown as a guess, in the
// table and in JSON, and a software name is shown for certain with the
// librdkafka it carries.
func TestProducerGuessRendering(t *testing.T) {
	ps := goldenProducers()
	var tb, jb bytes.Buffer
	if err := streamTable(&tb).Producers(ps); err != nil {
		t.Fatal(err)
	}
	if err := NewJSON(&jb).(ProducerWriter).Producers(ps); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		`client.id "kafkajs"  software unknown (no ApiVersions v3+ captured)`,
		`   client    likely kafkajs (inferred from client.id "kafkajs", ApiVersions v2 and Produce v7)`,
		"   protocol  ApiVersions v2, Produce v7",
		"confluent-kafka-python 2.11.0 (librdkafka 2.11.1)  producer id 7",
		"; 3 sent again under another epoch or producer ID",
	} {
		if !strings.Contains(tb.String(), w) {
			t.Errorf("table lacks %q:\n%s", w, tb.String())
		}
	}
	lines := strings.Split(strings.TrimSpace(jb.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, w := range []string{`"software_guess":"kafkajs"`, `"software_inferred_from":"client.id \"kafkajs\", ApiVersions v2 and Produce v7"`,
		`"api_versions_versions":[2]`, `"produce_versions":[7]`, `"renumbered":0`, `"producer_changes":[]`} {
		if !strings.Contains(lines[0], w) {
			t.Errorf("line 1 lacks %s: %s", w, lines[0])
		}
	}
	for _, w := range []string{`"librdkafka_version":"2.11.1"`, `"renumbered":3`,
		`"producer_changes":[{"change":"epoch","producer_id":7,"producer_epoch":0,"to_producer_id":7,"to_producer_epoch":1,"cause":"client_timeout","error":"client FIN","count":3,"duplicated":3}]`,
		`"ended":3,"min_end_ms":4,"max_end_ms":6,"min_after_end_ms":290,"max_after_end_ms":305`} {
		if !strings.Contains(lines[1], w) {
			t.Errorf("line 2 lacks %s: %s", w, lines[1])
		}
	}
	if strings.Contains(lines[1], "software_guess") {
		t.Errorf("a named client has a guess: %s", lines[1])
	}
}
