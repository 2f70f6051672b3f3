package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/internal/kafkatest"
	"github.com/kdupcap/kdupcap/internal/testenv"
)

// TestRealTraffic captures real producers (franz-go kgo, and librdkafka through
// kcat) writing to an in-process kfake broker whose produce responses are held
// past the request's timeout and answered REQUEST_TIMED_OUT after the append,
// then checks kdupcap's findings against the broker's log read back after the
// run. Nothing expected is hard-coded: timing decides batching and retries, so
// every run derives its expectations from its own log.
func TestRealTraffic(t *testing.T) {
	testenv.Capture(t)
	// Every third produce request on a connection is answered
	// REQUEST_TIMED_OUT after its 300ms timeout, twice per run: the retry
	// (the next request) is answered normally.
	timedOut := []kafkatest.Fault{{Action: kafkatest.TimedOutAfterAppend, Every: 3, Max: 2}}
	kgo := func(idempotent bool, perRequest int) kafkatest.Producer {
		return kafkatest.Producer{
			Idempotent:      idempotent,
			ClientID:        "kgo-realtraffic",
			ProduceTimeout:  300 * time.Millisecond,
			TimeoutOverhead: 2 * time.Second,
			PerRequest:      perRequest,
		}
	}
	kcat := func(idempotent bool) kafkatest.ProduceFunc {
		return kafkatest.KcatProduce("enable.idempotence="+strconv.FormatBool(idempotent),
			"request.timeout.ms=300", "message.timeout.ms=15000", "client.id=kcat-realtraffic")
	}
	tests := []struct {
		name  string
		needs string // a program the producer runs, if any
		s     kafkatest.Scenario
		// idempotent: the log must hold no copies; findings must be
		// deduplicated. Otherwise every faulted batch must be in the log
		// twice and found duplicated.
		idempotent bool
	}{
		{
			name: "kgo clean",
			s:    kafkatest.Scenario{Records: 8, Partitions: 2, Producer: kgo(false, 1)},
		},
		{
			name: "kgo nonidempotent timed out",
			s:    kafkatest.Scenario{Records: 9, Partitions: 2, Faults: timedOut, Producer: kgo(false, 1)},
		},
		{
			name: "kgo nonidempotent timed out, several records a request",
			s:    kafkatest.Scenario{Records: 12, Partitions: 2, Faults: timedOut, Producer: kgo(false, 3)},
		},
		{
			name:       "kgo idempotent timed out",
			s:          kafkatest.Scenario{Records: 9, Partitions: 2, Faults: timedOut, Producer: kgo(true, 1)},
			idempotent: true,
		},
		{
			name:  "kcat nonidempotent timed out",
			needs: "kcat",
			s:     kafkatest.Scenario{Records: 7, Faults: timedOut, Produce: kcat(false)},
		},
		{
			name:       "kcat idempotent timed out",
			needs:      "kcat",
			s:          kafkatest.Scenario{Records: 7, Faults: timedOut, Produce: kcat(true)},
			idempotent: true,
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			needTool(t, tt.needs)
			s := tt.s
			s.Name, s.Topic = fmt.Sprintf("s%d", i), fmt.Sprintf("realtraffic-%d", i)
			res, pcap := runCaptured(t, s, 20*time.Second)
			findings, summary := analyzeJSON(t, pcap)
			t.Logf("%d faults applied, %d findings, log of %s: %s", len(res.Events), len(findings), s.Topic, describeLog(res.Log))

			checkHarness(t, res, len(s.Faults) > 0, tt.idempotent)
			checkFindings(t, res, findings, tt.idempotent)
			if summary.Findings != int64(len(findings)) {
				t.Errorf("summary counts %d findings, the output has %d", summary.Findings, len(findings))
			}
			if n := summary.ByVerdict["duplicated"]; n != int64(countVerdict(findings, "duplicated")) {
				t.Errorf("summary counts %d duplicated, the output has %d", n, countVerdict(findings, "duplicated"))
			}
		})
	}
}

// analyzeJSON runs `kdupcap analyze --format json pcap`, which must succeed.
func analyzeJSON(t *testing.T, pcap string) ([]cliFinding, cliSummary) {
	t.Helper()
	res := cliAnalyze(t, strings.NewReader(""), pcap)
	if res.Code != exitOK {
		t.Fatalf("kdupcap analyze exited %d: %s", res.Code, res.Stderr)
	}
	return res.Findings, res.Summary
}

// checkHarness checks that the run did what the test relies on: faults were
// applied (so resends really happened), and the log holds each faulted batch
// twice for a non-idempotent producer, once for an idempotent one.
func checkHarness(t *testing.T, res *kafkatest.Result, faulted, idempotent bool) {
	t.Helper()
	answered := len(res.Answered())
	if faulted && answered == 0 {
		t.Fatalf("harness: no fault applied, the producer never resent: %+v", res.Events)
	}
	dups := res.Log.Duplicates()
	switch {
	case idempotent && len(dups) > 0:
		t.Fatalf("harness: the broker did not deduplicate an idempotent producer: %+v", dups)
	case !idempotent && faulted && len(dups) == 0:
		t.Fatalf("harness: %d faults applied but the log holds no record twice", answered)
	case !faulted && len(dups) > 0:
		t.Fatalf("harness: no fault, yet the log holds records twice: %+v", dups)
	}
}

// checkFindings compares kdupcap's findings with the log:
//   - every record value the log holds more than once is covered by a finding
//     on its topic and partition, verdict duplicated, whose appended offsets
//     contain the base offset of every copy's batch, and whose CRC is the
//     batch's;
//   - every appended offset of every finding is a batch in the log, and a
//     duplicated finding names only batches whose records the log holds more
//     than once;
//   - an idempotent producer's findings are all deduplicated, one per fault;
//     a run without faults has no finding.
func checkFindings(t *testing.T, res *kafkatest.Result, findings []cliFinding, idempotent bool) {
	t.Helper()
	broker := "127.0.0.1:" + strconv.Itoa(res.Port)
	held := make(map[int32]map[string]int) // partition -> value -> copies
	for _, c := range res.Log.Copies() {
		if held[c.Partition] == nil {
			held[c.Partition] = make(map[string]int)
		}
		held[c.Partition][c.Value] = len(c.Records)
	}

	for i, f := range findings {
		where := fmt.Sprintf("finding %d (%s/%d crc %s, verdict %s, offsets %v)", i, f.Topic, f.Partition, f.BatchCRC, f.Verdict, f.AppendedOffsets)
		if f.Topic != res.Log.Topic {
			t.Errorf("%s: topic %q, want %q (produce v13 names topics by ID: map it from Metadata)", where, f.Topic, res.Log.Topic)
			continue
		}
		if f.Broker != broker {
			t.Errorf("%s: broker %q, want %q", where, f.Broker, broker)
		}
		if len(f.Attempts) < 2 {
			t.Errorf("%s: %d attempts, want at least 2", where, len(f.Attempts))
		}
		pl, ok := res.Log.Partition(f.Partition)
		if !ok {
			t.Errorf("%s: no such partition in the log", where)
			continue
		}
		checkAppended(t, where, pl, f, func(r kafkatest.Record) bool { return held[f.Partition][r.Value] >= 2 })
		if idempotent && f.Verdict != "deduplicated" {
			t.Errorf("%s: idempotent producer, the log holds every record once: want deduplicated", where)
		}
		if f.Verdict == "duplicated" || f.Verdict == "deduplicated" {
			first := f.Attempts[0]
			if first.Response == nil || first.Response.ErrorCode != 7 {
				t.Errorf("%s: first attempt %+v, want answered REQUEST_TIMED_OUT (7)", where, first)
			}
			if c := f.Attempts[1].Cause; c == nil || *c == "client_timeout" || *c == "not_a_retry" {
				t.Errorf("%s: resend cause %v, want the broker's REQUEST_TIMED_OUT", where, c)
			}
		}
	}

	for _, c := range res.Log.Duplicates() {
		var bases []int64
		for _, r := range c.Records {
			bases = append(bases, r.BatchBaseOffset)
		}
		if !slices.ContainsFunc(findings, func(f cliFinding) bool {
			return f.Topic == res.Log.Topic && f.Partition == c.Partition && f.Verdict == "duplicated" &&
				!slices.ContainsFunc(bases, func(b int64) bool { return !slices.Contains(f.AppendedOffsets, b) })
		}) {
			t.Errorf("the log holds %q %d times in %s/%d (batches at %v): no duplicated finding with those appended offsets",
				c.Value, len(c.Records), res.Log.Topic, c.Partition, bases)
		}
	}

	answered := len(res.Answered())
	// Each fault held one request of one batch past its timeout; the
	// producer resent it on the same connection after the answer.
	if len(findings) != answered {
		t.Errorf("%d findings, want one per faulted request: %d (%+v)", len(findings), answered, res.Events)
	}
}

func countVerdict(findings []cliFinding, verdict string) int {
	n := 0
	for _, f := range findings {
		if f.Verdict == verdict {
			n++
		}
	}
	return n
}

func describeLog(l *kafkatest.Log) string {
	var b strings.Builder
	for _, p := range l.Partitions {
		fmt.Fprintf(&b, "[p%d:", p.Partition)
		for _, bt := range p.Batches {
			fmt.Fprintf(&b, " %d+%d/0x%08x", bt.BaseOffset, bt.NumRecords, bt.CRC)
		}
		b.WriteString("]")
	}
	if d := l.Duplicates(); len(d) > 0 {
		fmt.Fprintf(&b, " %d values held twice or more", len(d))
	}
	return b.String()
}

// needTool skips the test when the command name (if any) is not installed,
// or fails it under CI (testenv.Tool).
func needTool(t *testing.T, name string) {
	t.Helper()
	if name == "" {
		return
	}
	testenv.Tool(t, name)
}

// runCaptured runs s against kfake with its traffic captured by tcpdump,
// within timeout, and keeps the capture if the test fails.
func runCaptured(t *testing.T, s kafkatest.Scenario, timeout time.Duration) (*kafkatest.Result, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	pcap := filepath.Join(t.TempDir(), "capture.pcap")
	keepOnFailure(t, pcap)
	res, err := kafkatest.Run(ctx, s, pcap)
	if err != nil {
		t.Fatalf("scenario: %v", err)
	}
	return res, pcap
}

// keepOnFailure copies the capture out of the test's temporary directory when
// the test fails, and names the copy, so the failure can be replayed. With
// KDUPCAP_KEEP_CAPTURES=DIR every capture is kept in DIR, named after the
// subtest (how the committed testdata captures were made).
func keepOnFailure(t *testing.T, pcap string) {
	t.Cleanup(func() {
		keepDir := os.Getenv("KDUPCAP_KEEP_CAPTURES")
		if !t.Failed() && keepDir == "" {
			return
		}
		src, err := os.Open(pcap)
		if err != nil {
			return // no capture was made
		}
		defer src.Close()
		var dst *os.File
		if keepDir != "" {
			// The test's name and the file's: a test may keep several.
			name := strings.NewReplacer("/", "_", " ", "-", ",", "").Replace(t.Name()) + "-" + filepath.Base(pcap)
			dst, err = os.Create(filepath.Join(keepDir, name))
		} else {
			dst, err = os.CreateTemp("", "kdupcap-realtraffic-*.pcap")
		}
		if err != nil {
			t.Logf("capture %s not kept: %v", pcap, err)
			return
		}
		defer dst.Close()
		if _, err := io.Copy(dst, src); err != nil {
			t.Logf("capture %s not kept: %v", pcap, err)
			return
		}
		t.Logf("failed capture kept at %s (replay: kdupcap analyze %s)", dst.Name(), dst.Name())
	})
}

// checkAppended checks that each of f's appended offsets is the base offset
// of a batch of pl with f's CRC and, when f says duplicated, that the log
// holds every record of those batches twice or more (twice says).
func checkAppended(t *testing.T, where string, pl kafkatest.PartitionLog, f cliFinding, twice func(kafkatest.Record) bool) {
	t.Helper()
	for _, off := range f.AppendedOffsets {
		b, ok := pl.BatchAt(off)
		if !ok {
			t.Errorf("%s: appended offset %d is not a batch's base offset in the log", where, off)
			continue
		}
		if crc := fmt.Sprintf("0x%08x", b.CRC); crc != f.BatchCRC {
			t.Errorf("%s: the log's batch at %d has CRC %s", where, off, crc)
		}
		if f.Verdict != "duplicated" {
			continue
		}
		for _, r := range pl.Records {
			if r.BatchBaseOffset == off && !twice(r) {
				t.Errorf("%s: duplicated, but the log holds %q (offset %d) once", where, r.Value, r.Offset)
			}
		}
	}
}
