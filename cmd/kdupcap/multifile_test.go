package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/internal/kafkatest"
	"github.com/kdupcap/kdupcap/internal/testenv"
	"github.com/kdupcap/kdupcap/pipeline"
)

// splitByDirection writes the seed capture's client packets to one file and
// the broker's to another, as if captured on two hosts; shift is added to
// every timestamp of the broker's file (a host whose clock is off).
func splitByDirection(t *testing.T, dir string, shift time.Duration) (reqs, resps string) {
	t.Helper()
	lt, pkts := readPcap(t, seedPath("seed-nonidempotent-retry.pcap"))
	if lt != layers.LinkTypeRaw && lt != layers.LinkTypeIPv4 {
		t.Fatalf("seed link type %v, want raw IP", lt)
	}
	var client, broker []rawPacket
	for _, p := range pkts {
		// Raw IPv4: the source address is bytes 12-15; the client is
		// 172.19.0.1.
		if len(p.data) < 20 {
			t.Fatalf("short packet %x", p.data)
		}
		if p.data[15] == 1 {
			client = append(client, p)
		} else {
			p.ci.Timestamp = p.ci.Timestamp.Add(shift)
			broker = append(broker, p)
		}
	}
	if len(client) != 2 || len(broker) != 1 {
		t.Fatalf("split %d client and %d broker packets, want 2 and 1", len(client), len(broker))
	}
	reqs, resps = filepath.Join(dir, "client-host.pcap"), filepath.Join(dir, "broker-host.pcap")
	writePcap(t, reqs, lt, client)
	writePcap(t, resps, lt, broker)
	return reqs, resps
}

// checkSeedFinding checks the finding of seed-nonidempotent-retry.pcap:
// correlation ID 27 answered REQUEST_TIMED_OUT at base offset 112, 28 not
// answered.
func checkSeedFinding(t *testing.T, res cliResult) {
	t.Helper()
	if res.Code != exitOK {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	if len(res.Findings) != 1 {
		t.Fatalf("want 1 finding, got %d", len(res.Findings))
	}
	f := res.Findings[0]
	if f.Verdict != "unconfirmed" || len(f.AppendedOffsets) != 1 || f.AppendedOffsets[0] != 112 {
		t.Errorf("verdict %q, appended offsets %v; want unconfirmed, [112]", f.Verdict, f.AppendedOffsets)
	}
	if len(f.Attempts) != 2 {
		t.Fatalf("want 2 attempts, got %+v", f.Attempts)
	}
	a, b := f.Attempts[0], f.Attempts[1]
	if a.CorrelationID != 27 || b.CorrelationID != 28 {
		t.Errorf("correlation IDs %d, %d; want 27, 28", a.CorrelationID, b.CorrelationID)
	}
	if a.Response == nil || a.Response.ErrorCode != 7 || a.Response.BaseOffset != 112 {
		t.Errorf("attempt 27 response %+v, want error 7 at 112", a.Response)
	}
	if b.Response != nil {
		t.Errorf("attempt 28 has a response %+v", b.Response)
	}
	if res.Summary.Packets != 3 || res.Summary.ProduceRequests != 2 || res.Summary.ProduceResponses != 1 {
		t.Errorf("summary %+v", res.Summary)
	}
}

// TestSplitByDirection: the seed capture split into a file of requests and
// a file of responses, as if taken on the client's host and the broker's,
// analyzed together gives the finding of the original, in either order of
// the files; a response file whose clock is 5s early breaks it, and the
// matching --clock-skew repairs it.
func TestSplitByDirection(t *testing.T) {
	dir := t.TempDir()
	reqs, resps := splitByDirection(t, dir, 0)
	t.Run("merged", func(t *testing.T) {
		checkSeedFinding(t, cliAnalyze(t, nil, reqs, resps))
	})
	t.Run("merged, files swapped", func(t *testing.T) {
		checkSeedFinding(t, cliAnalyze(t, nil, resps, reqs))
	})
	t.Run("stdin is one of the sources", func(t *testing.T) {
		checkSeedFinding(t, cliAnalyze(t, openFile(t, resps), reqs, "-"))
	})

	early := t.TempDir()
	reqs, resps = splitByDirection(t, early, -5*time.Second)
	t.Run("response clock 5s early, no skew", func(t *testing.T) {
		res := cliAnalyze(t, nil, reqs, resps)
		// The response comes before any request: it answers nothing, and
		// attempt 27 looks unanswered.
		if len(res.Findings) != 1 || len(res.Findings[0].Attempts) != 2 {
			t.Fatalf("findings %+v", res.Findings)
		}
		if a := res.Findings[0].Attempts[0]; a.Response != nil || res.Summary.ProduceResponses != 0 {
			t.Errorf("the skewed response was matched: %+v, summary %+v", a.Response, res.Summary)
		}
	})
	for _, skew := range []string{resps + "=+5s", "2=5000ms", resps + "=5s"} {
		t.Run("--clock-skew "+filepath.Base(skew), func(t *testing.T) {
			checkSeedFinding(t, cliAnalyze(t, nil, "--clock-skew", skew, reqs, resps))
		})
	}
	t.Run("skew on the other file", func(t *testing.T) {
		checkSeedFinding(t, cliAnalyze(t, nil, reqs, "--clock-skew="+reqs+"=-5s", resps))
	})
}

// TestRotatedSetMerged: a capture cut into consecutive files (tcpdump -C)
// merges into the order of the original, whatever order the files are
// given in.
func TestRotatedSetMerged(t *testing.T) {
	lt, pkts := readPcap(t, seedPath("seed-nonidempotent-retry.pcap"))
	dir := t.TempDir()
	var files []string
	for i, p := range pkts {
		name := filepath.Join(dir, "rot"+string(rune('0'+i))+".pcap")
		writePcap(t, name, lt, []rawPacket{p})
		files = append(files, name)
	}
	checkSeedFinding(t, cliAnalyze(t, nil, files...))
	checkSeedFinding(t, cliAnalyze(t, nil, files[2], files[0], files[1]))
}

// TestClockSkewFlag: --clock-skew is checked against the file list.
func TestClockSkewFlag(t *testing.T) {
	seed := seedPath("seed-nonidempotent-retry.pcap")
	other := seedPath("seed-idempotent-retry.pcap")
	tests := []struct {
		name string
		args []string
		code int
		msg  string // in stderr
	}{
		{"unknown file", []string{"--clock-skew", "nope.pcap=1s", seed}, exitUsage, `"nope.pcap" is not one of the capture files`},
		{"index out of range", []string{"--clock-skew", "3=1s", seed, other}, exitUsage, "is not one of the capture files"},
		{"bad duration", []string{"--clock-skew", seed + "=soon", seed}, exitUsage, "want FILE=DURATION"},
		{"no file", []string{"--clock-skew", "=1s", seed}, exitUsage, "want FILE=DURATION"},
		{"two skews for one file", []string{"--clock-skew", seed + "=1s", "--clock-skew", "1=2s", seed}, exitUsage, "two skews"},
		{"good", []string{"--clock-skew", other + "=-250ms", "--clock-skew", "1=+1.5s", seed, other}, exitOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			code := run(append([]string{"analyze"}, tt.args...), nil, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.msg) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr.String(), tt.code, tt.msg)
			}
		})
	}
}

// TestTruncatedMemberOfMerge: a truncated file among merged ones is named
// with its position, exits 2, and the others are analyzed in full.
func TestTruncatedMemberOfMerge(t *testing.T) {
	dir := t.TempDir()
	reqs, resps := splitByDirection(t, dir, 0)
	lt, pkts := readPcap(t, seedPath("seed-idempotent-retry.pcap"))
	bad := filepath.Join(dir, "cut.pcap")
	writePcap(t, bad, lt, pkts)
	truncateFile(t, bad, 20)
	res := cliAnalyze(t, nil, reqs, bad, resps)
	if res.Code != exitUsage || !strings.Contains(res.Stderr, "cut.pcap: truncated at byte") {
		t.Errorf("exit %d, stderr %q", res.Code, res.Stderr)
	}
	if len(res.Summary.Errors) != 1 {
		t.Errorf("errors %q, want 1", res.Summary.Errors)
	}
	// The seed's finding is still there, beside whatever the cut file gave.
	var found bool
	for _, f := range res.Findings {
		found = found || len(f.Attempts) == 2 && f.Attempts[0].CorrelationID == 27 && f.Attempts[0].Response != nil
	}
	if !found {
		t.Errorf("the other files' finding is missing: %+v", res.Findings)
	}
}

func openFile(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// truncateFile cuts n bytes off the end of a file.
func truncateFile(t *testing.T, path string, n int64) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, st.Size()-n); err != nil {
		t.Fatal(err)
	}
}

// TestTwoBrokers captures a kgo producer writing to a two-broker kfake
// cluster, each broker's port into its own pcap as if taken on two hosts,
// while the partition's leadership moves between the brokers between
// batches: the first produce after each move reaches the old leader, which
// answers NOT_LEADER_OR_FOLLOWER without appending, and kgo sends the batch
// again to the new leader. Both files are analyzed together; expectations
// come from the log read back after the run and from the exchanges decoded
// from the merged timeline.
func TestTwoBrokers(t *testing.T) {
	testenv.Capture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const topic = "multibroker"
	kf, err := kfake.NewCluster(kfake.NumBrokers(2), kfake.SeedTopics(1, topic))
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	addrs := kf.ListenAddrs()
	if len(addrs) != 2 {
		t.Fatalf("kfake listens on %v, want 2 brokers", addrs)
	}

	dir := t.TempDir()
	var (
		pcaps []string
		capts []*kafkatest.Capture
	)
	for i, addr := range addrs {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		pcap := filepath.Join(dir, fmt.Sprintf("broker%d.pcap", i))
		keepOnFailure(t, pcap)
		c, err := kafkatest.StartCapture(ctx, pcap, int(ap.Port()))
		if err != nil {
			t.Fatal(err)
		}
		pcaps, capts = append(pcaps, pcap), append(capts, c)
	}
	stopAll := func() {
		for _, c := range capts {
			if _, err := c.Stop(5 * time.Second); err != nil {
				t.Error(err)
			}
		}
		capts = nil
	}
	defer func() {
		if capts != nil {
			stopAll()
		}
	}()

	var retried, findings int
	values := kafkatest.Values("mb", 12)
	moves, refused, refusedBatches := produceWithMoves(ctx, t, kf, addrs, topic, values)
	stopAll()
	if t.Failed() {
		return
	}
	log, err := kafkatest.ReadBack(ctx, addrs[0], topic)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d leadership moves; log: %s", moves, describeLog(log))
	defer func() { t.Logf("%d batches sent to both brokers, %d findings", retried, findings) }()

	// The log: every value once (NOT_LEADER_OR_FOLLOWER appends nothing).
	held := make(map[string]int)
	for _, c := range log.Copies() {
		held[c.Value] = len(c.Records)
	}
	for _, v := range values {
		if held[v] != 1 {
			t.Errorf("harness: the log holds %q %d times, want once", v, held[v])
		}
	}

	// The exchanges of the merged timeline: each batch sent to the old
	// leader after a move was answered NOT_LEADER_OR_FOLLOWER, and sent
	// again to the other broker after that answer.
	retried = checkCrossBrokerAttempts(t, pcaps)
	if moves > 0 && retried == 0 {
		t.Errorf("harness: %d leadership moves, yet no batch was sent to both brokers", moves)
	}
	if l := captureLayout(t, pcaps); l != capture.Overlapping {
		t.Errorf("the two brokers' captures are %v, want overlapping", l)
	}

	res := cliAnalyze(t, nil, pcaps...)
	if res.Code != exitOK {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	brokers := make(map[string]bool)
	for _, c := range res.Summary.KafkaConnections {
		brokers[c.Broker] = true
	}
	for _, a := range addrs {
		if !brokers[a] {
			t.Errorf("summary lists no connection to broker %s: %+v", a, res.Summary.KafkaConnections)
		}
	}
	findings = len(res.Findings)
	if retried != refusedBatches {
		t.Errorf("the capture shows %d batches sent to both brokers; the brokers refused %d distinct batches", retried, refusedBatches)
	}
	checkTwoBrokerFindings(t, res.Findings, log, held, addrs, refusedBatches)
	// The brokers' count: every produce request the partition's follower
	// refused made its batch be sent once more.
	resends := 0
	for _, f := range res.Findings {
		resends += len(f.Attempts) - 1
	}
	if resends != refused || (moves > 0 && refused == 0) {
		t.Errorf("the findings hold %d re-sends; the brokers refused %d produce requests as not the leader (%d moves)", resends, refused, moves)
	}
}

// produceWithMoves produces values one at a time with a non-idempotent kgo
// producer, moving the partition's leadership to the other broker after
// every third record; it returns the number of moves and how many produce
// requests for the partition reached the broker that was not its leader
// (answered NOT_LEADER_OR_FOLLOWER), counted by the brokers, and how many
// distinct batches (by CRC: kgo sends a batch again as the same bytes)
// those requests carried.
func produceWithMoves(ctx context.Context, t *testing.T, kf *kfake.Cluster, addrs []string, topic string, values []string) (int, int, int) {
	t.Helper()
	var lead atomic.Int32 // moved only between two records, none in flight
	lead.Store(kf.LeaderFor(topic, 0))
	var (
		refused   atomic.Int64
		mu        sync.Mutex
		refusedBy = map[uint32]bool{} // CRCs of the batches refused
	)
	kf.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		// The cluster's one topic (Produce v13 names it by ID only).
		for _, tp := range req.(*kmsg.ProduceRequest).Topics {
			for _, p := range tp.Partitions {
				if p.Partition != 0 || kf.CurrentNode() == lead.Load() {
					continue
				}
				refused.Add(1)
				if len(p.Records) >= 21 { // a RecordBatch: its CRC at byte 17
					mu.Lock()
					refusedBy[binary.BigEndian.Uint32(p.Records[17:])] = true
					mu.Unlock()
				}
			}
		}
		return nil, nil, false
	})
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addrs...),
		kgo.DefaultProduceTopic(topic),
		kgo.ClientID("kgo-multibroker"),
		kgo.DisableIdempotentWrite(),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	moves := 0
	for i, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v), Partition: 0}).FirstErr(); err != nil {
			t.Fatalf("produce %q: %v", v, err)
		}
		if i%3 != 2 || i == len(values)-1 {
			continue
		}
		leader := kf.LeaderFor(topic, 0)
		if leader < 0 {
			t.Fatalf("no leader for %s/0", topic)
		}
		if err := kf.MoveTopicPartition(topic, 0, 1-leader); err != nil {
			t.Fatalf("move %s/0 to node %d: %v", topic, 1-leader, err)
		}
		lead.Store(1 - leader)
		moves++
	}
	mu.Lock()
	defer mu.Unlock()
	return moves, int(refused.Load()), len(refusedBy)
}

// checkCrossBrokerAttempts decodes the merged captures and checks, for every
// batch sent more than once, that the attempts went to different brokers in
// time order, every attempt but the last answered NOT_LEADER_OR_FOLLOWER
// before the next was sent. It returns how many batches were sent again.
func checkCrossBrokerAttempts(t *testing.T, pcaps []string) int {
	t.Helper()
	type attempt struct {
		broker   netip.AddrPort
		corr     int32
		req      time.Time
		resp     time.Time
		errCode  int16
		answered bool
		seq      int // in the order decode handed the exchanges over
	}
	byCRC := make(map[uint32][]attempt)
	var (
		seq      int
		lastResp time.Time
	)
	an := pipeline.NewAnalysis(pipeline.Options{
		Ports: []uint16{9092}, Sniff: true, Workers: 1,
		Observe: func(x *decode.Exchange) {
			seq++
			// An answered exchange is handed over at its response's packet:
			// in a timeline merged by time, in the order of response times.
			if x.Responded {
				if x.ResponseTime.Before(lastResp) {
					t.Errorf("corr %d to %s answered at %v, handed over after an answer at %v: files not merged by time",
						x.CorrelationID, x.Conn.Broker, x.ResponseTime, lastResp)
				}
				lastResp = x.ResponseTime
			}
			for _, b := range x.Batches {
				a := attempt{broker: x.Conn.Broker, corr: x.CorrelationID, req: x.RequestTime, resp: x.ResponseTime, seq: seq}
				if b.Response != nil {
					a.answered, a.errCode = true, b.Response.ErrorCode
				}
				byCRC[b.CRC] = append(byCRC[b.CRC], a)
			}
		},
	})
	if errs := an.Read(pipeline.Inputs{Files: pcaps}, nil); len(errs) > 0 {
		t.Fatalf("reading %v: %v", pcaps, errs)
	}
	an.Finish()
	retried := 0
	for crc, as := range byCRC {
		if len(as) < 2 {
			continue
		}
		retried++
		slices.SortFunc(as, func(a, b attempt) int { return a.req.Compare(b.req) })
		for i, a := range as[:len(as)-1] {
			next := as[i+1]
			where := fmt.Sprintf("batch crc 0x%08x attempt %d (corr %d to %s, then corr %d to %s)", crc, i, a.corr, a.broker, next.corr, next.broker)
			if !a.answered || a.errCode != 6 {
				t.Errorf("%s: answered %v error %d, want NOT_LEADER_OR_FOLLOWER (6)", where, a.answered, a.errCode)
				continue
			}
			if a.broker == next.broker {
				t.Errorf("%s: sent again to the same broker", where)
			}
			if next.req.Before(a.resp) || next.seq < a.seq {
				t.Errorf("%s: the next attempt (sent %v, handed over %d) precedes the answer (%v, %d)", where, next.req, next.seq, a.resp, a.seq)
			}
		}
		if last := as[len(as)-1]; !last.answered || last.errCode != 0 {
			t.Errorf("batch crc 0x%08x: last attempt answered %v error %d, want success", crc, last.answered, last.errCode)
		}
	}
	return retried
}

// checkTwoBrokerFindings checks the findings against the capture and the
// log: one finding per batch the capture shows sent to both brokers
// (retried), each of scope client with attempts at both brokers, in time
// order; the log holds every record once, so each is single, appended at
// one offset, a batch of the log with the finding's CRC.
func checkTwoBrokerFindings(t *testing.T, findings []cliFinding, log *kafkatest.Log, held map[string]int, addrs []string, refusedBatches int) {
	t.Helper()
	if len(findings) != refusedBatches {
		t.Errorf("%d findings, but the brokers refused %d distinct batches as not the leader", len(findings), refusedBatches)
	}
	for i, f := range findings {
		where := fmt.Sprintf("finding %d (%s/%d crc %s, verdict %s, offsets %v)", i, f.Topic, f.Partition, f.BatchCRC, f.Verdict, f.AppendedOffsets)
		if f.Scope != "client" {
			t.Errorf("%s: scope %q, want client", where, f.Scope)
		}
		for _, a := range addrs {
			if !slices.ContainsFunc(f.Attempts, func(at cliAttempt) bool { return at.Broker == a }) {
				t.Errorf("%s: no attempt at broker %s", where, a)
			}
		}
		for j := 1; j < len(f.Attempts); j++ {
			if f.Attempts[j].Time < f.Attempts[j-1].Time {
				t.Errorf("%s: attempt %d at %s before attempt %d at %s", where, j, f.Attempts[j].Time, j-1, f.Attempts[j-1].Time)
			}
		}
		if f.Verdict != "single" || len(f.AppendedOffsets) != 1 {
			t.Errorf("%s: the log holds every record once: want single, appended at one offset", where)
		}
		pl, ok := log.Partition(f.Partition)
		if f.Topic != log.Topic || !ok {
			t.Errorf("%s: not a partition of the log of %s", where, log.Topic)
			continue
		}
		checkAppended(t, where, pl, f, func(r kafkatest.Record) bool { return held[r.Value] >= 2 })
	}
}

// captureLayout merges the files to their end and returns their layout.
func captureLayout(t *testing.T, files []string) capture.Layout {
	t.Helper()
	var srcs []*capture.Source
	for _, name := range files {
		s, err := capture.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, s)
	}
	m := capture.Merge(srcs, capture.MergeOptions{})
	defer m.Close()
	for {
		if _, err := m.Next(); err != nil {
			break
		}
	}
	return m.Layout()
}
