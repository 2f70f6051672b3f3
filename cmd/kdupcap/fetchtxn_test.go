package main

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/internal/kafkatest"
	"github.com/kdupcap/kdupcap/internal/testenv"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumeAll reads topic from the start through a kgo consumer (a second
// client, captured with the producer) until a poll brings nothing new after
// at least want records, and returns the values read in offset order.
func consumeAll(ctx context.Context, addr, topic string, want int, committed bool) ([]string, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ClientID("kgo-consumer"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100 * time.Millisecond)}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	} else {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var got []string
	for {
		pctx, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return got, fmt.Errorf("consumer: %d records read, want at least %d: %w", len(got), want, ctx.Err())
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)); n++ })
		if n == 0 && len(got) >= want {
			return got, nil
		}
	}
}

// logOffsets returns the base offsets of the log's batches of partition p
// with CRC crc.
func logOffsets(res *kafkatest.Result, p int32, crc string) []int64 {
	pl, ok := res.Log.Partition(p)
	if !ok {
		return nil
	}
	var out []int64
	for _, b := range pl.Batches {
		if fmt.Sprintf("0x%08x", b.CRC) == crc {
			out = append(out, b.BaseOffset)
		}
	}
	return out
}

// TestFetchEvidence: a producer re-sends, then a kgo consumer reads the
// partition in the same capture. The fetched copies of each re-sent batch
// must be where the log read back holds them, and decide or confirm the
// verdict: with REQUEST_TIMED_OUT the responses already show both offsets
// (evidence both); after the broker closed the connection the responses
// show nothing and the fetched data alone says duplicated; an idempotent
// re-send deduplicated is confirmed single by the fetches.
func TestFetchEvidence(t *testing.T) {
	testenv.Capture(t)
	tests := []struct {
		name       string
		action     kafkatest.Action
		idempotent bool
		evidence   string
	}{
		{"timed out", kafkatest.TimedOutAfterAppend, false, "both"},
		{"closed after append", kafkatest.CloseAfterAppend, false, "fetched_data"},
		{"idempotent timed out", kafkatest.TimedOutAfterAppend, true, "both"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const records = 5
			topic := fmt.Sprintf("fetch-%d", i)
			p := kafkatest.Producer{Idempotent: tt.idempotent, ClientID: "kgo-fetch", ProduceTimeout: 300 * time.Millisecond,
				TimeoutOverhead: 500 * time.Millisecond, Partitions: 1}
			var consumed []string
			s := kafkatest.Scenario{Name: fmt.Sprintf("f%d", i), Topic: topic, Records: records,
				Faults: []kafkatest.Fault{{Action: tt.action, Every: 3, Max: 1}},
				Produce: func(ctx context.Context, addr, topic string, values []string) error {
					if err := kafkatest.Produce(ctx, addr, topic, p, values); err != nil {
						return err
					}
					var err error
					consumed, err = consumeAll(ctx, addr, topic, len(values), false)
					return err
				}}
			res, pcap := runCaptured(t, s, 20*time.Second)
			checkHarness(t, res, true, tt.idempotent)
			if len(res.Log.Copies()) != records {
				t.Fatalf("harness: log holds %d distinct values, want %d", len(res.Log.Copies()), records)
			}
			out := cliAnalyzeOK(t, "--port", fmt.Sprint(res.Port), pcap)
			findings := out.Findings
			raw := rawLines(findings)
			checkSameForWorkers(t, "--port", fmt.Sprint(res.Port), pcap)
			// The consumer read the partition from its start: every batch
			// of the log came in some fetch response.
			if s := out.Summary; s.FetchResponses == 0 || s.FetchedBatches < int64(len(res.Log.Partitions[0].Batches)) {
				t.Errorf("summary: %d fetch responses with %d batches, the log holds %d batches",
					s.FetchResponses, s.FetchedBatches, len(res.Log.Partitions[0].Batches))
			}
			if len(findings) != 1 {
				t.Fatalf("%d findings, want 1 (one faulted request): %s", len(findings), strings.Join(raw, "\n"))
			}
			f := findings[0]
			want := logOffsets(res, f.Partition, f.BatchCRC)
			if len(want) == 0 {
				t.Fatalf("the log holds no batch with the finding's CRC %s", f.BatchCRC)
			}
			if !slices.Equal(f.FetchedOffsets, want) {
				t.Errorf("fetched offsets %v, the log holds the batch (crc %s) at %v", f.FetchedOffsets, f.BatchCRC, want)
			}
			verdict := "duplicated"
			if len(want) == 1 {
				verdict = "deduplicated"
				if !tt.idempotent {
					verdict = "single"
				}
			}
			if f.Verdict != verdict || f.Evidence != tt.evidence {
				t.Errorf("verdict %s by %s, want %s by %s (log offsets %v): %s", f.Verdict, f.Evidence, verdict, tt.evidence, want, f.Reason)
			}
			if len(consumed) != len(res.Log.Partitions[0].Records) {
				t.Errorf("the consumer read %d records, the log holds %d", len(consumed), len(res.Log.Partitions[0].Records))
			}
			checkRoundTrip(t, res.Port, pcap, raw)
		})
	}
}

// TestTransactions: a transactional kgo producer commits one transaction and
// aborts the next; the broker times out one produce request in each, so each
// holds a re-sent (idempotent, deduplicated) batch. Each finding must name
// the transactional.id and the outcome of the transaction the client put its
// record in, which the read_committed and read_uncommitted consumers confirm.
func TestTransactions(t *testing.T) {
	testenv.Capture(t)
	const txnID = "kdupcap-txn"
	committedVals := []string{"txn-c-0", "txn-c-1", "txn-c-2"}
	abortedVals := []string{"txn-a-0", "txn-a-1", "txn-a-2"}
	var readCommitted, readUncommitted []string
	s := kafkatest.Scenario{Name: "txn", Topic: "txn-0", Records: 0,
		// Produce requests 3 (commit) and 6 (abort): each retry is the
		// next request.
		Faults: []kafkatest.Fault{{Action: kafkatest.TimedOutAfterAppend, Every: 3, Max: 2}},
		Produce: func(ctx context.Context, addr, topic string, _ []string) error {
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.TransactionalID(txnID),
				kgo.ClientID("kgo-txn"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.ProduceRequestTimeout(300*time.Millisecond), kgo.RequestTimeoutOverhead(500*time.Millisecond),
				kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
			if err != nil {
				return err
			}
			defer cl.Close()
			for _, txn := range []struct {
				vals   []string
				commit kgo.TransactionEndTry
			}{{committedVals, kgo.TryCommit}, {abortedVals, kgo.TryAbort}} {
				if err := cl.BeginTransaction(); err != nil {
					return err
				}
				for _, v := range txn.vals {
					if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
						return fmt.Errorf("produce %s: %w", v, err)
					}
				}
				if err := cl.EndTransaction(ctx, txn.commit); err != nil {
					return fmt.Errorf("end transaction: %w", err)
				}
			}
			if readCommitted, err = consumeAll(ctx, addr, topic, len(committedVals), true); err != nil {
				return err
			}
			readUncommitted, err = consumeAll(ctx, addr, topic, len(committedVals)+len(abortedVals), false)
			return err
		}}
	res, pcap := runCaptured(t, s, 20*time.Second)
	answered := len(res.Answered())
	if answered != 2 || len(res.Log.Duplicates()) > 0 {
		t.Fatalf("harness: %d faults answered (want 2), %d values held twice (want 0)", answered, len(res.Log.Duplicates()))
	}
	// The consumers show which transaction committed.
	for _, v := range committedVals {
		if !slices.Contains(readCommitted, v) {
			t.Fatalf("harness: read_committed consumer missed committed %s: %v", v, readCommitted)
		}
	}
	for _, v := range abortedVals {
		if slices.Contains(readCommitted, v) || !slices.Contains(readUncommitted, v) {
			t.Fatalf("harness: aborted %s: read_committed %v, read_uncommitted %v", v, readCommitted, readUncommitted)
		}
	}

	findings := cliAnalyzeOK(t, "--port", fmt.Sprint(res.Port), "--records", "1", pcap).Findings
	raw := rawLines(findings)
	checkSameForWorkers(t, "--port", fmt.Sprint(res.Port), "--records", "1", pcap)
	if len(findings) != 2 {
		t.Fatalf("%d findings, want 2 (one re-sent batch per transaction): %s", len(findings), strings.Join(raw, "\n"))
	}
	outcomes := map[string]bool{}
	for _, f := range findings {
		if len(f.Records) != 1 || f.Records[0].Value == nil {
			t.Fatalf("finding without its record: %+v", f)
		}
		v := *f.Records[0].Value
		want := "committed"
		if slices.Contains(abortedVals, v) {
			want = "aborted"
		}
		tx := f.Transaction
		switch {
		case tx == nil:
			t.Errorf("%s: no transaction: %s", v, f.Reason)
		case tx.TransactionalID != txnID || tx.ProducerID != f.ProducerID || tx.Epoch != f.ProducerEpoch || tx.Outcome != want:
			t.Errorf("%s: transaction %+v, want %s producer %d epoch %d %s", v, *tx, txnID, f.ProducerID, f.ProducerEpoch, want)
		case len(tx.Epochs) == 0:
			t.Errorf("%s: no epoch from InitProducerId", v)
		}
		if want == "aborted" && !strings.Contains(f.Reason, "read_committed consumers see no copy") {
			t.Errorf("%s: aborted, reason does not say read_committed consumers miss it: %s", v, f.Reason)
		}
		if f.Verdict != "deduplicated" {
			t.Errorf("%s: verdict %s, want deduplicated (the log holds each value once)", v, f.Verdict)
		}
		outcomes[want] = true
	}
	if !outcomes["committed"] || !outcomes["aborted"] {
		t.Errorf("findings cover %v, want one committed and one aborted", outcomes)
	}
	checkRoundTrip(t, res.Port, pcap, raw)
}

// TestWriteDupsCommitted: the --write-dups round trip on a committed real
// capture of re-sends across connections.
func TestWriteDupsCommitted(t *testing.T) {
	for _, name := range []string{"kgo-v13-nonidempotent-closed-after-append.pcap", "kcat-nonidempotent-timeout.pcap"} {
		t.Run(name, func(t *testing.T) {
			pcap := filepath.Join("..", "..", "testdata", name)
			raw := rawLines(cliAnalyzeOK(t, pcap).Findings)
			if len(raw) == 0 {
				t.Fatalf("no finding in %s", pcap)
			}
			checkRoundTrip(t, 0, pcap, raw)
		})
	}
}

// connIDs matches what names connections by decode's numbering, which a
// capture cut down to fewer connections changes.
var connIDs = regexp.MustCompile(`"conn_id":\d+|connection \d+`)

// checkRoundTrip writes --write-dups of pcap, analyzes it, and compares the
// findings with want, the finding lines of pcap, connection numbers aside.
func checkRoundTrip(t *testing.T, port int, pcap string, want []string) {
	t.Helper()
	dups := filepath.Join(t.TempDir(), "dups.pcap")
	args := []string{}
	if port != 0 {
		args = append(args, "--port", fmt.Sprint(port))
	}
	if strings.Contains(strings.Join(want, ""), `"records":[`) {
		args = append(args, "--records", "1")
	}
	first := rawLines(cliAnalyzeOK(t, append(args, "--write-dups", dups, pcap)...).Findings)
	got := rawLines(cliAnalyzeOK(t, append(args, dups)...).Findings)
	norm := func(lines []string) string { return connIDs.ReplaceAllString(strings.Join(lines, "\n"), "conn") }
	if norm(first) != norm(want) {
		t.Fatalf("--write-dups changed the findings of the first pass")
	}
	if norm(got) != norm(want) {
		t.Errorf("--write-dups file read back:\n%s\nwant:\n%s", norm(got), norm(want))
	}
}
