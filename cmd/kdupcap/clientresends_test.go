package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/internal/kafkatest"
	"github.com/kdupcap/kdupcap/internal/testenv"
)

// needRdkafka skips (or, under CI, fails) without librdkafka 2.11's
// producer (internal/rdkafka, cgo), and builds it once.
func needRdkafka(t *testing.T) {
	t.Helper()
	if err := kafkatest.RdkafkaErr(); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := kafkatest.RdkafkaBuild(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestRdkafka211Resends captures librdkafka 2.11 (confluent-kafka-go) where
// it writes records twice although the broker answered every attempt:
// idempotent, bumping its epoch after a message timed out and re-sending
// the other records of the batch under the new epoch (the broker cannot
// deduplicate across epochs); and not idempotent, re-batching a timed-out
// record with newer ones. The findings must equal the log read back: every
// record it holds twice found as one record_resend at the log's offsets
// (never as `single` findings of each batch), the epoch change shown, and
// the diagnosis must not call the re-sends harmless.
func TestRdkafka211Resends(t *testing.T) {
	testenv.Capture(t)
	needRdkafka(t)
	tests := []struct {
		name   string
		rec    kafkatest.RdkafkaRecipe
		change string // the record findings' producer_change
	}{
		{name: "idempotent epoch bump", rec: kafkatest.RdkafkaEpochBumpAnswered("eb"), change: "epoch"},
		{name: "re-batched retry", rec: kafkatest.RdkafkaRebatch("rb")},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := tt.rec.Scenario
			s.Topic = fmt.Sprintf("rdkafka211-%d", i)
			s.Produce = kafkatest.RdkafkaProduce(tt.rec.Rdkafka)
			// librdkafka's timeout scan runs once a second: on a loaded
			// machine a run may keep its epoch (the broker then
			// deduplicates and the log holds nothing twice). Such a run
			// tests nothing: run the recipe again, at most twice more.
			var res *kafkatest.Result
			var pcap string
			for try := 1; ; try++ {
				res, pcap = runCaptured(t, s, 30*time.Second)
				if len(res.Log.Duplicates()) > 0 || try == 3 {
					break
				}
				t.Logf("run %d: the log holds no record twice (%s); running the recipe again", try, describeLog(res.Log))
				s.Topic = fmt.Sprintf("rdkafka211-%d-%d", i, try)
			}
			t.Logf("log of %s: %s", s.Topic, describeLog(res.Log))
			checkRecordHarness(t, res, false)
			a := analyzeRecordLevel(t, pcap, false)
			checkSameForWorkers(t, "--records", "100", pcap)
			checkRecordFindings(t, res, a, false, false)
			checkLogCounts(t, res.Log, a.Stdout)
			for _, f := range a.Findings {
				if f.Verdict == "single" {
					t.Errorf("batch finding %s at %v is single: the re-sent records are one record_resend", f.BatchCRC, f.AppendedOffsets)
				}
			}
			for _, f := range a.RecordFindings {
				if f.ProducerChange != tt.change {
					t.Errorf("%s finding: producer_change %q, want %q (%s)", f.Type, f.ProducerChange, tt.change, f.Reason)
				}
				if tt.change != "" {
					if len(f.Attempts) < 2 || f.Attempts[0].Batch == nil || f.Attempts[1].Batch == nil ||
						f.Attempts[0].Batch.ProducerEpoch == nil || f.Attempts[1].Batch.ProducerEpoch == nil ||
						*f.Attempts[1].Batch.ProducerEpoch <= *f.Attempts[0].Batch.ProducerEpoch {
						t.Errorf("%s finding: the attempts do not show the epoch bump: %+v", f.Type, f.Attempts)
					}
					if !f.Idempotent || f.Verdict != "duplicated" {
						t.Errorf("%s finding: idempotent %v verdict %s, want an idempotent producer's duplicate", f.Type, f.Idempotent, f.Verdict)
					}
				}
			}
			for _, p := range a.Producers {
				if p.Diagnosis == "" {
					t.Errorf("producer %s: no diagnosis", p.Client)
				}
				if strings.Contains(p.Diagnosis, "harmless") && tt.change != "" && !strings.Contains(p.Diagnosis, "would have") {
					t.Errorf("producer %s: diagnosis calls the re-sends harmless: %s", p.Client, p.Diagnosis)
				}
			}
		})
	}
}

// TestConnectionEnds captures kgo re-sending after the broker's side ended
// the connection: reset without an answer (ResetAfterAppend), and reset
// right after an answer that never reached the client (AnswerThenReset: the
// answer is on the wire at the capture point, a proxy past it drops it).
// From the log read back: the record the log holds twice (not idempotent)
// or once (idempotent, deduplicated) is one finding whose re-send's cause
// follows from the end: connection_closed (broker RST), or answer_lost with
// the answer, then the broker's RST within detect.AnswerLostWindow, and the
// re-send after it; never not_a_retry.
func TestConnectionEnds(t *testing.T) {
	testenv.Capture(t)
	kgo := func(idempotent bool) kafkatest.Producer {
		return kafkatest.Producer{Idempotent: idempotent, ClientID: "kgo-ends", ProduceTimeout: 300 * time.Millisecond,
			TimeoutOverhead: 500 * time.Millisecond, PerRequest: 1}
	}
	reset := []kafkatest.Fault{{Action: kafkatest.ResetAfterAppend, Every: 3, Max: 1}}
	lost := []kafkatest.Fault{{Action: kafkatest.AnswerThenReset, Every: 3, Max: 1}}
	tests := []struct {
		name       string
		s          kafkatest.Scenario
		idempotent bool
		cause      cliCause
		verdict    string
	}{
		{name: "broker RST, no answer", s: kafkatest.Scenario{Records: 6, Faults: reset, Producer: kgo(false)},
			cause: cliCause{"connection_closed", "broker RST"}, verdict: "unconfirmed"},
		{name: "answer lost to a broker RST", s: kafkatest.Scenario{Records: 6, Faults: lost, Producer: kgo(false)},
			cause: cliCause{"answer_lost", "broker RST"}, verdict: "duplicated"},
		{name: "answer lost, idempotent", s: kafkatest.Scenario{Records: 6, Faults: lost, Producer: kgo(true)},
			idempotent: true, cause: cliCause{"answer_lost", "broker RST"}, verdict: "deduplicated"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := tt.s
			s.Name, s.Topic = fmt.Sprintf("e%d", i), fmt.Sprintf("ends-%d", i)
			res, pcap := runCaptured(t, s, 30*time.Second)
			if len(res.Answered()) == 0 {
				t.Fatalf("harness: no fault applied: %+v", res.Events)
			}
			dups := res.Log.Duplicates()
			if want := 0; !tt.idempotent && len(dups) == want || tt.idempotent && len(dups) != want {
				t.Fatalf("harness: the log holds %d records twice (idempotent %v): %s", len(dups), tt.idempotent, describeLog(res.Log))
			}
			a := cliAnalyzeOK(t, pcap)
			checkSameForWorkers(t, pcap)
			checkLogCounts(t, res.Log, a.Stdout)
			t.Logf("%d findings, log of %s: %s", len(a.Findings), s.Topic, describeLog(res.Log))
			if len(a.Findings) != 1 {
				t.Fatalf("%d findings, want the one re-sent batch: %+v", len(a.Findings), a.Findings)
			}
			f := a.Findings[0]
			if f.Verdict != tt.verdict || len(f.Attempts) != 2 {
				t.Fatalf("verdict %s with %d attempts, want %s with 2 (%s)", f.Verdict, len(f.Attempts), tt.verdict, f.Reason)
			}
			first, resend := f.Attempts[0], f.Attempts[1]
			if c := resend.Cause; c == nil || *c != tt.cause.cause || resend.CauseError != tt.cause.err {
				t.Errorf("re-send cause %v %q, want %s %q", c, resend.CauseError, tt.cause.cause, tt.cause.err)
			}
			if e := first.ConnEnd; e == nil || e.By != "broker" || e.How != "rst" || e.Time > resend.Time {
				t.Errorf("first attempt's connection end %+v, want the broker's RST before the re-send at %s", e, resend.Time)
			}
			if first.ConnID == resend.ConnID {
				t.Errorf("re-sent on the same connection %d", first.ConnID)
			}
			// The log: the re-sent record at the offsets the answers give.
			pl, _ := res.Log.Partition(f.Partition)
			for _, at := range f.Attempts {
				if at.Response == nil || at.Response.ErrorCode != 0 {
					continue
				}
				if b, ok := pl.BatchAt(at.Response.BaseOffset); !ok || fmt.Sprintf("0x%08x", b.CRC) != f.BatchCRC {
					t.Errorf("attempt %d answered at %d: the log's batch there is %+v, not crc %s", at.CorrelationID, at.Response.BaseOffset, b, f.BatchCRC)
				}
			}
			if tt.cause.cause == "answer_lost" {
				if first.Response == nil || first.Response.ErrorCode != 0 {
					t.Errorf("first attempt answered %+v, want NONE on the wire", first.Response)
				}
			}
			for _, p := range a.Producers {
				if strings.Contains(p.Diagnosis, "not_a_retry") || strings.Contains(p.Diagnosis, "no retry setting prevents") {
					t.Errorf("producer %s: the diagnosis calls a retry an application's re-send: %s", p.Client, p.Diagnosis)
				}
			}
		})
	}
}

// TestLeaderMoves captures producers on a three-broker cluster whose
// partition leaders move every 300-700 ms, with some requests answered
// REQUEST_TIMED_OUT after their append: clients answered
// NOT_LEADER_OR_FOLLOWER re-send to the new leader, on another broker, and
// librdkafka numbers each broker's connection on its own, so a retry can
// carry the correlation ID of the first attempt (which must not be taken
// for a proxy's copy). From the log read back: every record it holds twice
// is covered by a finding at the log's offsets, and no finding says
// duplicated of a record it holds once.
func TestLeaderMoves(t *testing.T) {
	testenv.Capture(t)
	moves := &kafkatest.LeaderMoves{Min: 300 * time.Millisecond, Max: 700 * time.Millisecond, Seed: 14}
	faults := []kafkatest.Fault{{Action: kafkatest.TimedOutAfterAppend, Every: 7, Max: 6}}
	tests := []struct {
		name    string
		needs   string
		rdkafka bool
		produce kafkatest.ProduceFunc
		records int
	}{
		{name: "kcat (librdkafka 2.0.2)", needs: "kcat", records: 120, produce: kafkatest.KcatProduce("enable.idempotence=false",
			"request.timeout.ms=300", "message.timeout.ms=20000", "client.id=kcat-moves")},
		{name: "librdkafka 2.11", rdkafka: true, records: 120, produce: kafkatest.RdkafkaProduce(kafkatest.Rdkafka{
			Config: []string{"enable.idempotence=false", "request.timeout.ms=300", "message.timeout.ms=20000",
				"max.in.flight.requests.per.connection=1", "client.id=rdkafka-moves"}, Async: true, Interval: 15 * time.Millisecond})},
		{name: "kgo", records: 120, produce: func(ctx context.Context, addr, topic string, values []string) error {
			return kafkatest.Produce(ctx, addr, topic, kafkatest.Producer{ClientID: "kgo-moves", ProduceTimeout: 300 * time.Millisecond,
				TimeoutOverhead: 500 * time.Millisecond, PerRequest: 1}, values)
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			needTool(t, tt.needs)
			if tt.rdkafka {
				needRdkafka(t)
			}
			t.Parallel()
			s := kafkatest.Scenario{Name: fmt.Sprintf("m%d", i), Topic: fmt.Sprintf("moves-%d", i), Records: tt.records,
				Brokers: 3, LeaderMoves: moves, Faults: faults, Produce: tt.produce}
			res, pcap := runCaptured(t, s, 60*time.Second)
			t.Logf("%d leader moves, %d faults, %d records held twice", len(res.Moves), len(res.Answered()), len(res.Log.Duplicates()))
			if len(res.Moves) == 0 {
				t.Fatalf("harness: no leader moved")
			}
			a := analyzeRecordLevel(t, pcap, false)
			checkSameForWorkers(t, "--records", "100", pcap)
			checkCoverage(t, res, a)
			checkLogCounts(t, res.Log, a.Stdout)
		})
	}
}

// checkCoverage compares findings on a cluster of several brokers with the
// log: every record the log holds k >= 2 times is covered, by a duplicated
// batch finding whose appended offsets are those of the batches holding its
// copies, or by a record-level finding whose record has its copies at the
// log's offsets; and every offset a finding names for a record or batch
// holds it (no duplicated claim for a record held once).
func checkCoverage(t *testing.T, res *kafkatest.Result, a cliResult) {
	t.Helper()
	ix := indexLog(res.Log)
	for i, f := range a.Findings {
		pl, ok := res.Log.Partition(f.Partition)
		if !ok || f.Topic != res.Log.Topic {
			t.Errorf("batch finding %d: %s/%d is not in the log", i, f.Topic, f.Partition)
			continue
		}
		where := fmt.Sprintf("batch finding %d (crc %s, verdict %s, offsets %v)", i, f.BatchCRC, f.Verdict, f.AppendedOffsets)
		checkAppended(t, where, pl, f, func(r kafkatest.Record) bool { return len(ix.copies[f.Partition][r.Identity()]) >= 2 })
	}
	for i, f := range a.RecordFindings {
		for _, r := range f.Records {
			id, ok := r.identity()
			if !ok {
				continue
			}
			for _, o := range r.offsets() {
				if lr, ok := ix.at[f.Partition][o]; !ok || lr.Identity() != id {
					t.Errorf("record finding %d: %q at offset %d, the log holds %q there", i, deref(r.Value), o, lr.Value)
				}
			}
			if f.Verdict == "duplicated" && len(ix.copies[f.Partition][id]) < 2 {
				t.Errorf("record finding %d: duplicated, but the log holds %q once", i, deref(r.Value))
			}
		}
	}
	for _, p := range res.Log.Partitions {
		for _, c := range p.Copies() {
			if len(c.Records) < 2 {
				continue
			}
			want := offsetsOf(c.Records)
			byBatch := slices.ContainsFunc(a.Findings, func(f cliFinding) bool {
				return f.Partition == p.Partition && f.Verdict == "duplicated" &&
					!slices.ContainsFunc(c.Records, func(r kafkatest.Record) bool { return !slices.Contains(f.AppendedOffsets, r.BatchBaseOffset) })
			})
			byRecord := slices.ContainsFunc(a.RecordFindings, func(f cliFinding) bool {
				return f.Partition == p.Partition && slices.ContainsFunc(f.Records, func(r cliRecord) bool {
					id, _ := r.identity()
					return id == c.Records[0].Identity() && slices.Equal(r.offsets(), want)
				})
			})
			if !byBatch && !byRecord {
				t.Errorf("the log holds %q %d times in %s/%d (offsets %v): no finding shows them", c.Value, len(c.Records), res.Log.Topic, p.Partition, want)
			}
		}
	}
}

// TestMoreClientsResends captures kafka-python (Debian's python3-kafka),
// kafkajs and @platformatic/kafka re-sending a batch the broker appended and
// answered REQUEST_TIMED_OUT (not idempotent), and checks the findings
// against the log read back, and the producer: the software named (what it
// sent in ApiVersions) or inferred from what it does send ("likely X"),
// and the diagnosis in that client's own setting names.
func TestMoreClientsResends(t *testing.T) {
	testenv.Capture(t)
	timedOut := []kafkatest.Fault{{Action: kafkatest.TimedOutAfterAppend, Every: 2, Max: 1}}
	tests := []struct {
		name      string
		unable    func() error
		produce   kafkatest.ProduceFunc
		sameBytes bool   // the client re-sends the very bytes
		software  string // software_name sent, or "" when inferred
		guess     string // software_guess when not sent
		setting   string // a setting of the client the diagnosis names
	}{
		{name: "kafka-python", unable: kafkatest.KafkaPythonErr, produce: kafkatest.KafkaPythonPlainProduce(kafkatest.KafkaPythonPlain{}),
			sameBytes: true, guess: "kafka-python", setting: "enable_idempotence"},
		{name: "kafkajs", unable: kafkatest.KafkajsErr, produce: kafkatest.KafkajsProduce(kafkatest.KafkaJS{}),
			guess: "kafkajs", setting: "idempotent"},
		{name: "platformatic", unable: kafkatest.PlatformaticErr, produce: kafkatest.PlatformaticProduce(kafkatest.Platformatic{}),
			sameBytes: true, software: "platformatic-kafka", setting: "idempotent"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.unable(); err != nil {
				testenv.Unavailable(t, "%v", err)
			}
			t.Parallel()
			s := kafkatest.Scenario{Name: fmt.Sprintf("c%d", i), Topic: fmt.Sprintf("clients-%d", i), Records: 4,
				Faults: timedOut, Produce: tt.produce}
			res, pcap := runCaptured(t, s, 30*time.Second)
			t.Logf("log of %s: %s", s.Topic, describeLog(res.Log))
			checkRecordHarness(t, res, false)
			a := analyzeRecordLevel(t, pcap, false)
			checkRecordFindings(t, res, a, tt.sameBytes, false)
			if len(a.Producers) == 0 {
				t.Fatal("no producer profiled")
			}
			for _, p := range a.Producers {
				if p.Resent == 0 {
					continue
				}
				if p.SoftwareName != tt.software || tt.software == "" && p.SoftwareGuess != tt.guess {
					t.Errorf("producer %s: software %q guess %q (from %s), want %q / %q", p.Client, p.SoftwareName, p.SoftwareGuess,
						p.InferredFrom, tt.software, tt.guess)
				}
				if tt.guess != "" && !strings.Contains(p.Diagnosis, "If this is "+tt.guess) {
					t.Errorf("producer %s: the diagnosis does not say the software is inferred: %s", p.Client, p.Diagnosis)
				}
				if !strings.Contains(p.Diagnosis, tt.setting) {
					t.Errorf("producer %s: the diagnosis names no %s setting (%s): %s", p.Client, tt.name, tt.setting, p.Diagnosis)
				}
			}
		})
	}
}

// TestNewProducerID captures an idempotent producer replaced by a new one
// (a new producer ID from the same client) that sends again a record the
// log already holds: the broker cannot deduplicate across producer IDs.
// From the log read back: the record held twice is one record_resend at
// the log's two offsets, producer_change "producer_id", duplicated.
func TestNewProducerID(t *testing.T) {
	testenv.Capture(t)
	// The last request (the 4th of the first producer's connection) is
	// appended and answered 700 ms later; the application gives up after
	// 300 ms.
	s := kafkatest.Scenario{Name: "np", Topic: "new-producer-id", Records: 4,
		Faults:  []kafkatest.Fault{{Action: kafkatest.Delay, Delay: 700 * time.Millisecond, Every: 4, Max: 1}},
		Produce: kafkatest.RestartProduce(kafkatest.Restart{ClientID: "kgo-restart", GiveUp: 300 * time.Millisecond})}
	res, pcap := runCaptured(t, s, 30*time.Second)
	t.Logf("log of %s: %s", s.Topic, describeLog(res.Log))
	checkRecordHarness(t, res, false)
	a := analyzeRecordLevel(t, pcap, false)
	checkSameForWorkers(t, "--records", "100", pcap)
	checkCoverage(t, res, a)
	checkLogCounts(t, res.Log, a.Stdout)
	if len(a.RecordFindings) != 1 {
		t.Fatalf("%d record findings, want 1", len(a.RecordFindings))
	}
	f := a.RecordFindings[0]
	if f.ProducerChange != "producer_id" || f.Verdict != "duplicated" || !f.Idempotent {
		t.Errorf("producer_change %q, verdict %s, idempotent %v: want producer_id, duplicated, true (%s)", f.ProducerChange, f.Verdict, f.Idempotent, f.Reason)
	}
	if len(f.Attempts) == 2 && f.Attempts[0].Batch != nil && f.Attempts[1].Batch != nil &&
		f.Attempts[0].Batch.ProducerID != nil && f.Attempts[1].Batch.ProducerID != nil &&
		*f.Attempts[0].Batch.ProducerID == *f.Attempts[1].Batch.ProducerID {
		t.Errorf("both attempts under producer ID %d", *f.Attempts[0].Batch.ProducerID)
	}
	// The diagnosis: a new producer instance sent them, which no setting
	// of the first producer's timeouts would have avoided.
	for _, p := range a.Producers {
		if p.ProducerID != f.ProducerID {
			continue
		}
		if !strings.Contains(p.Diagnosis, "new producer of the same client") || strings.Contains(p.Diagnosis, "Raising") {
			t.Errorf("producer %d: diagnosis %s", p.ProducerID, p.Diagnosis)
		}
	}
}
