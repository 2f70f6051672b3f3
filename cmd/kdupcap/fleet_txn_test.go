package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kdupcap/kdupcap/fleet"
	"github.com/kdupcap/kdupcap/internal/kafkatest"
	"github.com/kdupcap/kdupcap/internal/testenv"
)

// TestFleetTransactions: a transactional kgo producer on a two-broker
// cluster whose transaction coordinator is not the partition's leader, so
// that its EndTxn and InitProducerId go to the other host than its produce
// requests. The broker times out one produce request of the first
// transaction after appending it; kgo re-sends it (deduplicated), bumps its
// epoch, aborts, and the application produces the transaction's values
// again in a second one, committed: the log holds the timed-out record
// twice, the first copy aborted, which read_committed consumers never see.
// analyze of the leader's capture alone calls it a plain duplicate (it
// sees no EndTxn); analyze of both captures merged says the transaction
// was aborted. correlate of the attempts both hosts published must say
// what the merged analyze says: the same findings, verdicts, transaction
// outcomes and reasons (its latest report of each; a finding decided
// before its EndTxn is reported again once it comes). Sharded, analyze
// publishes the same records, the transaction records among them.
func TestFleetTransactions(t *testing.T) {
	testenv.Capture(t)
	const topic, txnID = "fleet-txn", "kdupcap-fleet-txn"
	dir := t.TempDir()
	c, err := kafkatest.NewClusterWith(kafkatest.ClusterConfig{Brokers: 2,
		Faults: []kafkatest.Fault{{Action: kafkatest.TimedOutAfterAppend, Topic: topic, Every: 2, Max: 1}}},
		kfake.SeedTopics(1, topic))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	coord := c.KFake().CoordinatorFor(txnID)
	if c.KFake().LeaderFor(topic, 0) == coord {
		if _, err := c.MoveLeader(topic, 0, 1-coord); err != nil {
			t.Fatal(err)
		}
	}
	files := []string{filepath.Join(dir, "broker-0.pcap"), filepath.Join(dir, "broker-1.pcap")}
	var capts []*kafkatest.Capture
	for i, p := range c.Ports() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		cp, err := kafkatest.StartCapture(ctx, files[i], p)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		capts = append(capts, cp)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	vals := []string{"txn-0", "txn-1", "txn-2"}
	if err := produceAbortThenCommit(ctx, c.Addr(), topic, txnID, vals); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the last FINs
	for _, cp := range capts {
		if _, err := cp.Stop(5 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	// Ground truth: read_committed consumers see every value once, the
	// log holds the timed-out one (at least) twice.
	committed, err := consumeAll(ctx, c.Addr(), topic, len(vals), true)
	if err != nil {
		t.Fatal(err)
	}
	log, err := kafkatest.ReadBack(ctx, c.Addr(), topic)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Sort(committed); !slices.Equal(committed, vals) || len(c.Events()) != 1 || len(log.Duplicates()) == 0 {
		t.Fatalf("harness: read_committed %v (want %v), %d faults (want 1), %d values held twice (want some)",
			committed, vals, len(c.Events()), len(log.Duplicates()))
	}
	ports := c.Ports()
	portList := strconv.Itoa(ports[0]) + "," + strconv.Itoa(ports[1])
	leader := c.KFake().LeaderFor(topic, 0)

	attempts, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "kdupcap-attempts"))
	if err != nil {
		t.Fatal(err)
	}
	defer attempts.Close()
	url := "kafka://" + attempts.ListenAddrs()[0] + "/kdupcap-attempts"
	for i, f := range files {
		res := cliAnalyze(t, nil, "--port", portList, "--attempts", url, "--host", "broker-"+strconv.Itoa(i), f)
		if res.Code != exitOK {
			t.Fatalf("analyze --attempts %s: exit %d: %s", f, res.Code, res.Stderr)
		}
		if int32(i) != leader {
			continue
		}
		// The leader's host alone: a duplicate with no transaction known,
		// the claim a correlation without the coordinator's records makes.
		local := findingLines(t, res.Stdout, false)
		if !slices.ContainsFunc(local, func(f fleetFinding) bool { return f.Verdict == "duplicated" && f.Transaction == nil }) {
			t.Errorf("the leader's capture alone: no duplicate without its transaction: %s", strings.Join(samenesses(local), "\n"))
		}
	}
	merged := cliAnalyze(t, nil, append([]string{"--port", portList}, files...)...)
	if merged.Code != exitOK {
		t.Fatalf("analyze merged: exit %d: %s", merged.Code, merged.Stderr)
	}
	want := findingLines(t, merged.Stdout, false)
	// Sharded, the merged files publish the same records, the
	// coordinator's transaction records among them.
	kinds := checkShardedAttempts(t, append([]string{"--port", portList}, files...)...)
	if kinds[fleet.KindEndTxn] < 2 || kinds[fleet.KindInitProducerID] == 0 {
		t.Errorf("records by kind %v: want the two EndTxn and an InitProducerId", kinds)
	}
	aborted := 0
	for _, f := range want {
		if f.Verdict == "duplicated" && f.Transaction != nil && f.Transaction.Outcome == "aborted" &&
			strings.Contains(f.Reason, "the duplicate is invisible to them") {
			aborted++
		}
	}
	if aborted == 0 {
		t.Fatalf("analyze of the merged captures: no aborted duplicate: %s", merged.Stdout)
	}

	out, stderr, code := correlateOut(t, context.Background(), "--from", url, "--group", "txn", "--exit-idle", "2s", "--duration", "30s")
	if code != exitOK {
		t.Fatalf("correlate: exit %d: %s", code, stderr)
	}
	got := findingLines(t, out, true)
	txnSameness := func(fs []fleetFinding) []string {
		var out []string
		for _, f := range fs {
			// Produce v13 names the topic by ID: a host names it only if
			// it captured a Metadata answer naming it, and the client
			// may have asked the other broker, whose host publishes no
			// attempt of it. Compared by ID.
			if f.TopicID != "" {
				f.Topic = f.TopicID
			}
			tx := "none"
			if f.Transaction != nil {
				tx = f.Transaction.TransactionalID + " " + f.Transaction.Outcome
			}
			out = append(out, sameness(f)+" | "+tx+" | "+f.Reason)
		}
		slices.Sort(out)
		return out
	}
	if g, w := txnSameness(got), txnSameness(want); !slices.Equal(g, w) {
		t.Errorf("correlate and analyze of the merged files differ:\ncorrelate:\n  %s\nanalyze:\n  %s", strings.Join(g, "\n  "), strings.Join(w, "\n  "))
	}
	// The deduplicated re-send was decided by its answer, before the
	// EndTxn that aborted its transaction: reported first with the
	// outcome unknown, then again, under its ID, aborted.
	first := map[string]fleetFinding{}
	revised := 0
	for _, f := range findingLines(t, out, false) {
		p, ok := first[f.ID]
		if !ok {
			first[f.ID] = f
			continue
		}
		if p.Transaction != nil && p.Transaction.Outcome == "unknown" && f.Transaction != nil && f.Transaction.Outcome == "aborted" && f.Revision > p.Revision {
			revised++
		}
	}
	if revised == 0 {
		t.Errorf("no finding reported with its transaction unknown, then revised to aborted: %s", out)
	}
}

// produceAbortThenCommit produces vals in a transaction it aborts, then
// again in one it commits, through a transactional kgo client.
func produceAbortThenCommit(ctx context.Context, addr, topic, txnID string, vals []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.TransactionalID(txnID),
		kgo.ClientID("kgo-txn"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProduceRequestTimeout(300*time.Millisecond), kgo.RequestTimeoutOverhead(500*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		return err
	}
	defer cl.Close()
	for _, end := range []kgo.TransactionEndTry{kgo.TryAbort, kgo.TryCommit} {
		if err := cl.BeginTransaction(); err != nil {
			return err
		}
		for _, v := range vals {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				return fmt.Errorf("produce %s: %w", v, err)
			}
		}
		if err := cl.EndTransaction(ctx, end); err != nil {
			return fmt.Errorf("end transaction: %w", err)
		}
	}
	return nil
}
