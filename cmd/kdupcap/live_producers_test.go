package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kdupcap/kdupcap/internal/kafkatest"
	"github.com/kdupcap/kdupcap/internal/testenv"
)

// TestLiveProducers sniffs the loopback with two live runs (json and lines)
// while tcpdump captures the same traffic: a real kgo producer writing to a
// kfake broker that answers REQUEST_TIMED_OUT after the append. At the end
// each live run must print the producer profiles after its last finding and
// before its summary, with the settings, counts and re-sends that analyze
// reports from the tcpdump capture, and re-sends that match the broker log.
func TestLiveProducers(t *testing.T) {
	testenv.Capture(t)
	const topic, clientID = "live-producers", "kgo-live-producers"
	broker, err := kafkatest.NewCluster([]kafkatest.Fault{{Action: kafkatest.TimedOutAfterAppend, Every: 3, Max: 2}},
		kfake.SeedTopics(2, topic))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	port := strconv.Itoa(broker.Port())

	capCtx, capCancel := context.WithTimeout(context.Background(), time.Minute)
	defer capCancel()
	pcap := filepath.Join(t.TempDir(), "live-producers.pcap")
	capt, err := kafkatest.StartCapture(capCtx, pcap, broker.Port())
	if err != nil {
		t.Fatal(err)
	}

	liveCtx, liveCancel := context.WithCancel(context.Background())
	defer liveCancel()
	type liveOut struct {
		stdout, stderr lockedBuffer
		done           chan int
	}
	start := func(format string) *liveOut {
		o := &liveOut{done: make(chan int, 1)}
		args := []string{"-i", "lo", "--port", port, "--format", format, "--metrics", "127.0.0.1:0",
			"--settle", "2s", "--duration", "60s"}
		go func() { o.done <- runLive(liveCtx, args, &o.stdout, &o.stderr) }()
		if !waitFor(10*time.Second, func() bool { return strings.Contains(o.stderr.String(), "metrics on") }) {
			liveCancel()
			t.Fatalf("live --format %s did not start: %s", format, o.stderr.String())
		}
		return o
	}
	js, lines := start("json"), start("lines")

	pctx, pcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer pcancel()
	if err := kafkatest.Produce(pctx, broker.Addr(), topic, kafkatest.Producer{
		ClientID: clientID, ProduceTimeout: 300 * time.Millisecond, TimeoutOverhead: 2 * time.Second, Partitions: 2, PerRequest: 1,
	}, kafkatest.Values("live-producers", 9)); err != nil {
		t.Fatalf("produce: %v", err)
	}
	log, err := kafkatest.ReadBack(pctx, broker.Addr(), topic)
	if err != nil {
		t.Fatal(err)
	}
	events := broker.Events()
	if len(log.Duplicates()) == 0 {
		t.Fatalf("harness: no record held twice; faults %+v", events)
	}
	// Stop once both runs reported a finding per fault.
	waitFor(10*time.Second, func() bool {
		return strings.Count(js.stdout.String(), `"type":"duplicate"`) >= len(events) &&
			strings.Count(lines.stdout.String(), " DUPLICATED ") >= len(events)
	})
	liveCancel()
	for _, o := range []*liveOut{js, lines} {
		if code := <-o.done; code != exitOK {
			t.Fatalf("live exited %d: %s", code, o.stderr.String())
		}
	}
	if _, err := capt.Stop(10 * time.Second); err != nil {
		t.Fatalf("capture: %v", err)
	}

	// analyze of the same traffic, as json and as a table.
	want := cliAnalyze(t, nil, "--port", port, pcap)
	if want.Code != exitOK {
		t.Fatalf("analyze exited %d: %s", want.Code, want.Stderr)
	}
	var table, stderr bytes.Buffer
	if code := run([]string{"analyze", "--port", port, pcap}, nil, &table, &stderr); code != exitOK {
		t.Fatalf("analyze --format table exited %d: %s", code, stderr.String())
	}

	// json: the producer lines come after the findings and before the
	// summary (parseJSONLines fails otherwise), and say what analyze says.
	got := parseJSONLines(t, strings.NewReader(js.stdout.String()))
	findings, producers := got.Findings, got.Producers
	if !got.SawSummary {
		t.Fatalf("no summary: %s", js.stdout.String())
	}
	checkFindings(t, &kafkatest.Result{Log: log, Events: events, Port: broker.Port()}, findings, false)
	if len(producers) == 0 {
		t.Fatalf("live printed no producer: %s", js.stdout.String())
	}
	if got, want := producerFacts(producers), producerFacts(want.Producers); !reflect.DeepEqual(got, want) {
		t.Errorf("live producers:\n%s\nanalyze producers:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// And what the broker's log says: one record a batch, every send
	// appended (the faults answer after the append), so the log's batches
	// are the sends, a record held n times a batch re-sent n-1 times.
	var sends, resends int64
	for _, part := range log.Partitions {
		for _, b := range part.Batches {
			sends++
			if b.NumRecords != 1 {
				t.Fatalf("harness: a log batch of %d records, want 1", b.NumRecords)
			}
		}
	}
	dups := log.Duplicates()
	for _, c := range dups {
		resends += int64(len(c.Records) - 1)
	}
	var p *cliProducer
	for i := range producers {
		if producers[i].ClientID != nil && *producers[i].ClientID == clientID {
			p = &producers[i]
		}
	}
	switch {
	case p == nil:
		t.Errorf("no producer of client.id %q", clientID)
	case p.Sends != sends || p.Resends != resends || p.Batches != sends-resends ||
		p.Resent != int64(len(dups)) || p.ByVerdict["duplicated"] != int64(len(dups)):
		t.Errorf("producer %q: %d sends, %d re-sends, %d batches, %d re-sent, %d duplicated; the log: %d batches, %d records held more than once (%d extra copies)",
			clientID, p.Sends, p.Resends, p.Batches, p.Resent, p.ByVerdict["duplicated"], sends, len(dups), resends)
	}

	// lines: the table's Producers section between the last finding line
	// and the summary, its settings, batch and re-send lines as analyze's.
	out := lines.stdout.String()
	iProd, iSum := strings.Index(out, "\nProducers\n"), strings.Index(out, "\nSummary\n")
	iLast := strings.LastIndex(out, " DUPLICATED ")
	if iProd < 0 || iSum < 0 || iLast < 0 || !(iLast < iProd && iProd < iSum) {
		t.Fatalf("lines output: no Producers section between the last finding and the summary:\n%s", out)
	}
	if got, want := sectionFacts(out[iProd:iSum]), sectionFacts(table.String()); !reflect.DeepEqual(got, want) || len(got) == 0 {
		t.Errorf("lines Producers section:\n%s\nanalyze table:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// producerFacts are what a producer line says that does not depend on
// packet timestamps (which differ between AF_PACKET and tcpdump by
// microseconds): its key, settings, counts, re-sends by verdict and the
// answers per broker.
func producerFacts(ps []cliProducer) []string {
	var out []string
	for _, p := range ps {
		id := "null"
		if p.ClientID != nil {
			id = strconv.Quote(*p.ClientID)
		}
		answered := map[string]int64{}
		for _, l := range p.Latency {
			answered[l.Broker] = l.Answered
		}
		out = append(out, fmt.Sprintf("%s %s pid %d idempotent %v txn %v software %q %q acks %v timeout %v in flight %d codecs %v "+
			"requests %d sends %d batches %d records mean %v max %d resent %d resends %d verdicts %v answered %v",
			p.Client, id, p.ProducerID, p.Idempotent, p.TransactionalIDs, p.SoftwareName, p.SoftwareVersion, p.Acks, p.TimeoutsMillis,
			p.MaxInFlight, p.Codecs, p.Requests, p.Sends, p.Batches, p.RecordsMean, p.RecordsMax, p.Resent, p.Resends, p.ByVerdict, answered))
	}
	return out
}

// sectionFacts are the lines of a table's Producers section that do not
// depend on packet timestamps: each producer's heading, settings, batches
// and re-sends.
func sectionFacts(s string) []string {
	i := strings.Index(s, "\nProducers\n")
	if i < 0 {
		return nil
	}
	s = s[i:]
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l == "Summary" {
			break
		}
		if (strings.HasPrefix(l, "P") && strings.Contains(l, "client.id")) || strings.HasPrefix(l, "   settings ") ||
			strings.HasPrefix(l, "   batches ") || strings.HasPrefix(l, "   re-sent ") {
			out = append(out, l)
		}
	}
	return out
}
