package kafkatest

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kdupcap/kdupcap/internal/testenv"
)

// TestLeaderMoves runs a kgo producer against three brokers whose
// partitions' leaders move while it produces, and checks from the
// harness's side that the moves were made, that kgo got
// NOT_LEADER_OR_FOLLOWER and followed the leader, that the log read back
// (from the leaders after the moves) is complete, and, where tcpdump can
// run, that one capture saw every broker's port.
func TestLeaderMoves(t *testing.T) {
	moves := &LeaderMoves{Min: 30 * time.Millisecond, Max: 80 * time.Millisecond, Seed: 14}
	tests := []struct {
		name       string
		idempotent bool
		faults     []Fault
		proxy      bool
	}{
		{name: "nonidempotent"},
		{name: "idempotent", idempotent: true},
		{name: "nonidempotent answer lost behind the proxy", faults: []Fault{{Action: AnswerThenReset, Every: 4, Max: 2}}, proxy: true},
		{name: "idempotent answer lost behind the proxy", idempotent: true, faults: []Fault{{Action: AnswerThenReset, Every: 4, Max: 2}}, proxy: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			pcap := ""
			if testenv.CI() || testenv.CaptureErr() == nil {
				testenv.Capture(t)
				pcap = filepath.Join(t.TempDir(), "run.pcap")
			}
			p := fast(tt.idempotent)
			p.Spacing = 10 * time.Millisecond
			s := Scenario{Name: "m", Topic: "orders", Partitions: 3, Records: 60, Brokers: 3,
				LeaderMoves: moves, Faults: tt.faults, Producer: p}
			start := time.Now()
			res, err := Run(ctx, s, pcap)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Ports) != 3 || len(res.Addrs) != 3 || res.Proxied != tt.proxy {
				t.Fatalf("ports %v addrs %v proxied %v", res.Ports, res.Addrs, res.Proxied)
			}
			checkMoves(t, res, s.Partitions)
			notLeader := checkFollowed(t, res)
			checkComplete(t, res)
			checkDuplicates(t, res, tt.idempotent)
			t.Logf("%d moves, %d produce requests, %d answered NOT_LEADER_OR_FOLLOWER, %d faults, %d values twice; run %v",
				len(res.Moves), len(res.Exchanges), notLeader, len(res.Events), len(res.Log.Duplicates()), time.Since(start).Round(time.Millisecond))
			if pcap != "" {
				checkBrokersCaptured(t, res)
			}
		})
	}
}

// checkMoves checks the recorded moves: some were made, each to another
// broker, each from where the previous one of its partition went.
func checkMoves(t *testing.T, res *Result, partitions int32) {
	t.Helper()
	if len(res.Moves) < int(partitions) {
		t.Fatalf("%d leader moves, want at least one per partition", len(res.Moves))
	}
	last := make(map[int32]int32)
	for _, m := range res.Moves {
		if m.From == m.To || m.To < 0 || int(m.To) >= len(res.Ports) || m.Topic != "orders" || m.Time.IsZero() {
			t.Errorf("move %+v", m)
		}
		if prev, ok := last[m.Partition]; ok && prev != m.From {
			t.Errorf("move %+v: the partition's leader was %d", m, prev)
		}
		last[m.Partition] = m.To
	}
}

// checkFollowed checks that some produce requests were answered
// NOT_LEADER_OR_FOLLOWER (and the client saw it: not a faulted answer), and
// that after each the client wrote the partition again and a leader
// appended it, mostly on another broker (a leader may also have moved back
// meanwhile). It returns how many such answers there were.
func checkFollowed(t *testing.T, res *Result) int {
	t.Helper()
	n, elsewhere := 0, 0
	var after []time.Duration // from a NOT_LEADER answer to the partition's next append
	// Exchanges are in the order answers went out: a re-send may be
	// answered before the Write of the answer that caused it returned.
	byReceipt := slices.Clone(res.Exchanges)
	slices.SortStableFunc(byReceipt, func(a, b Exchange) int { return a.Received.Compare(b.Received) })
	for _, x := range byReceipt {
		if !x.NotLeader() || x.Fault != 0 || x.Answered.IsZero() {
			continue
		}
		n++
		for j, part := range x.Partitions {
			if x.Codes[j] != kerr.NotLeaderForPartition.Code {
				continue
			}
			followed := false
			for _, y := range byReceipt {
				k := slices.Index(y.Partitions, part)
				if k < 0 || y.Codes[k] != 0 || followed || !y.Received.After(x.Received) {
					continue
				}
				followed = true
				after = append(after, y.Received.Sub(x.Answered))
				if y.Node != x.Node {
					elsewhere++
				}
			}
			if !followed {
				t.Errorf("%s: NOT_LEADER_OR_FOLLOWER from node %d (corr %d), never appended after", part, x.Node, x.CorrelationID)
			}
		}
	}
	if n == 0 || elsewhere == 0 {
		t.Errorf("%d NOT_LEADER_OR_FOLLOWER answers among %d produce requests, %d followed on another broker", n, len(res.Exchanges), elsewhere)
	}
	if len(after) > 0 {
		slices.Sort(after)
		t.Logf("after NOT_LEADER_OR_FOLLOWER kgo's write was appended %v..%v later (median %v), %d of %d on another broker",
			after[0].Round(100*time.Microsecond), after[len(after)-1].Round(100*time.Microsecond), after[len(after)/2].Round(100*time.Microsecond), elsewhere, len(after))
	}
	return n
}

// checkDuplicates checks that every extra copy in the log is explained by
// a fault: each copy of a record but its last was written by a request
// whose answer a fault kept from the client (a re-send may be faulted
// again, so a record may be held three times), and that an idempotent
// producer's log holds no record twice.
func checkDuplicates(t *testing.T, res *Result, idempotent bool) {
	t.Helper()
	dups := res.Log.Duplicates()
	if idempotent && len(dups) != 0 {
		t.Errorf("idempotent producer's log holds %d values twice: %+v", len(dups), dups)
	}
	type at struct {
		partition int32
		base      int64
	}
	faulted := make(map[at]bool) // the faulted appends
	for _, e := range res.Events {
		for i, p := range e.Partitions {
			n, _ := partitionNumber(p)
			faulted[at{n, e.BaseOffsets[i]}] = true
		}
	}
	for _, d := range dups {
		for _, r := range d.Records[:len(d.Records)-1] {
			if !faulted[at{d.Partition, r.BatchBaseOffset}] {
				t.Errorf("value %q held %d times, a copy in batch %d/%d, which no fault touched", d.Value, len(d.Records), d.Partition, r.BatchBaseOffset)
			}
		}
	}
}

// checkBrokersCaptured checks that the one capture saw every broker's port
// and, behind the proxy, only the proxy's legs: no client-facing port, and
// every captured client port a leg's.
func checkBrokersCaptured(t *testing.T, res *Result) {
	t.Helper()
	seen := make(map[int]int)
	clients := make(map[int]bool)
	isBroker := make(map[int]bool)
	for _, p := range res.Ports {
		isBroker[p] = true
	}
	for _, sg := range readTCPSegments(t, res.Pcap) {
		switch {
		case isBroker[sg.src]:
			seen[sg.src]++
			clients[sg.dst] = true
		case isBroker[sg.dst]:
			seen[sg.dst]++
			clients[sg.src] = true
		default:
			t.Errorf("captured %d -> %d: not a broker's port", sg.src, sg.dst)
		}
	}
	for _, p := range res.Ports {
		if seen[p] == 0 {
			t.Errorf("capture saw nothing of broker port %d", p)
		}
	}
	if !res.Proxied {
		return
	}
	legs := make(map[int]bool)
	for _, l := range res.Legs {
		_, port, _ := net.SplitHostPort(l.Leg)
		n, _ := strconv.Atoi(port)
		legs[n] = true
	}
	for c := range clients {
		if !legs[c] {
			t.Errorf("captured client port %d is no proxy leg's", c)
		}
	}
}

// checkComplete checks that the log holds every value produced, and
// nothing else.
func checkComplete(t *testing.T, res *Result) {
	t.Helper()
	held := make(map[string]int)
	for _, c := range res.Log.Copies() {
		held[c.Value] += len(c.Records)
	}
	for _, v := range res.Values {
		if held[v] == 0 {
			t.Errorf("value %q not in the log", v)
		}
	}
	if len(held) != len(res.Values) {
		t.Errorf("log holds %d distinct values, produced %d", len(held), len(res.Values))
	}
}

// TestReadBackStaleLeader reads a partition starting from a broker that is
// not its leader: ReadBack's reader gets NOT_LEADER_OR_FOLLOWER, asks
// Metadata again and reads the whole partition from the leader.
func TestReadBackStaleLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := NewClusterWith(ClusterConfig{Brokers: 2}, kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	values := Values("stale", 3)
	if err := Produce(ctx, c.Addr(), "orders", fast(false), values); err != nil {
		t.Fatal(err)
	}
	leader := c.KFake().LeaderFor("orders", 0)
	if _, err := c.MoveLeader("orders", 0, 1-leader); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	mt, err := topicMetadata(ctx, cl, "orders")
	if err != nil {
		t.Fatal(err)
	}
	log := &Log{Topic: "orders", TopicID: mt.TopicID}
	if _, err := readPartition(ctx, cl.Broker(int(leader)), log, 0, kgo.DefaultDecompressor()); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("the old leader answered %v, want NOT_LEADER_OR_FOLLOWER", err)
	}
	pl, err := readLeader(ctx, cl, log, 0, leader, kgo.DefaultDecompressor()) // the old leader
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Records) != len(values) {
		t.Fatalf("read %d records from the new leader, want %d", len(pl.Records), len(values))
	}
	if mv := c.Moves(); len(mv) != 1 || mv[0].From != leader || mv[0].To != 1-leader {
		t.Errorf("moves %+v", mv)
	}
}
