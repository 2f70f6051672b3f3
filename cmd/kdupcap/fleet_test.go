package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kdupcap/kdupcap/internal/kafkatest"
	"github.com/kdupcap/kdupcap/internal/testenv"
)

// A fleet's cross-broker duplicates, for real: a two-broker kfake cluster
// whose partition leader moves while a non-idempotent kgo producer's
// attempt is held past its timeout, so that kgo sends the batch again to
// the new leader, on the other broker, and the log holds it twice. Each
// broker is one host: its own capture sees one attempt.

const fleetTopic = "fleet-1"

// fleetRun is one run of the recipe: the cluster, the values produced and
// the log read back.
type fleetRun struct {
	cluster *kafkatest.Cluster
	log     *kafkatest.Log
}

// runFleetRecipe starts the two-broker cluster, calls started (to start
// whatever captures it), produces, moves the leader during the held
// attempt, calls stopped, and reads the log back.
func runFleetRecipe(t *testing.T, started func(ports []int), stopped func()) *fleetRun {
	t.Helper()
	c, err := kafkatest.NewClusterWith(kafkatest.ClusterConfig{Brokers: 2,
		Faults: []kafkatest.Fault{{Action: kafkatest.Delay, Every: 4, Max: 1, Delay: 1500 * time.Millisecond}}},
		kfake.SeedTopics(1, fleetTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	started(c.Ports())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	moved := make(chan error, 1)
	go func() {
		// The fourth request on a connection is held 1.5s; the client
		// gives up after 600ms, by when the leader is on the other broker.
		time.Sleep(350 * time.Millisecond)
		from := c.KFake().LeaderFor(fleetTopic, 0)
		_, err := c.MoveLeader(fleetTopic, 0, 1-from)
		moved <- err
	}()
	err = kafkatest.Produce(ctx, c.Addr(), fleetTopic, kafkatest.Producer{ClientID: "kgo-fleet", ProduceTimeout: 300 * time.Millisecond,
		TimeoutOverhead: 300 * time.Millisecond, PerRequest: 1}, kafkatest.Values("fleet", 12))
	if merr := <-moved; merr != nil {
		t.Fatal(merr)
	}
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	stopped()
	log, err := kafkatest.ReadBack(ctx, c.Addr(), fleetTopic)
	if err != nil {
		t.Fatal(err)
	}
	return &fleetRun{cluster: c, log: log}
}

// twiceCRCs are the CRCs of the batches the log holds at two offsets or
// more, as the JSON prints them.
func twiceCRCs(l *kafkatest.Log) []string {
	var out []string
	for _, p := range l.Partitions {
		n := map[uint32]int{}
		for _, b := range p.Batches {
			n[b.CRC]++
		}
		for crc, k := range n {
			if k > 1 {
				out = append(out, fmt.Sprintf("0x%08x", crc))
			}
		}
	}
	slices.Sort(out)
	return out
}

// fleetFinding is what the fleet tests read of a finding line.
type fleetFinding struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Revision  int    `json:"revision"`
	Topic     string `json:"topic"`
	TopicID   string `json:"topic_id"`
	Partition int32  `json:"partition"`
	BatchCRC  string `json:"batch_crc"`
	Scope     string `json:"scope"`
	Verdict   string `json:"verdict"`
	Reason    string `json:"reason"`
	// Transaction is the finding's transaction, when its producer's is
	// known.
	Transaction *struct {
		TransactionalID string `json:"transactional_id"`
		Outcome         string `json:"outcome"`
	} `json:"transaction"`
	Attempts []struct {
		Client        string          `json:"client"`
		Broker        string          `json:"broker"`
		CorrelationID int32           `json:"correlation_id"`
		Host          string          `json:"host"`
		Time          string          `json:"time"`
		Cause         *string         `json:"cause"`
		Response      json.RawMessage `json:"response"`
		NoResponse    string          `json:"no_response"`
	} `json:"attempts"`
}

// findingLines reads the finding lines of JSON Lines output; latest keeps
// the last report of each stable ID (a consumer's view of revisions).
func findingLines(t *testing.T, out string, latest bool) []fleetFinding {
	t.Helper()
	var fs []fleetFinding
	at := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var typ struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(sc.Bytes(), &typ); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		if typ.Type != "duplicate" && typ.Type != "record_resend" && typ.Type != "record_duplicate" {
			continue
		}
		var f fleetFinding
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		if i, ok := at[f.ID]; ok && latest && f.ID != "" {
			fs[i] = f
			continue
		}
		at[f.ID] = len(fs)
		fs = append(fs, f)
	}
	return fs
}

// sameness is a finding as two runs must agree on it: no connection IDs,
// no hosts, the fleet scope taken as across connections.
func sameness(f fleetFinding) string {
	scope := f.Scope
	if scope == "fleet" {
		scope = "client"
	}
	s := fmt.Sprintf("%s %s/%d %s %s %s |", f.Type, f.Topic, f.Partition, f.BatchCRC, scope, f.Verdict)
	for _, a := range f.Attempts {
		cause := ""
		if a.Cause != nil {
			cause = *a.Cause
		}
		s += fmt.Sprintf(" %s>%s#%d@%s %s %s%s", a.Client, a.Broker, a.CorrelationID, a.Time, cause, a.Response, a.NoResponse)
	}
	return s
}

func samenesses(fs []fleetFinding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, sameness(f))
	}
	slices.Sort(out)
	return out
}

// checkFleetFindings: the findings cover the batches the log holds twice,
// at least one of them seen only by the fleet, with both hosts.
func checkFleetFindings(t *testing.T, l *kafkatest.Log, fs []fleetFinding, hosts []string) {
	t.Helper()
	twice := twiceCRCs(l)
	if len(twice) == 0 {
		t.Fatalf("harness: no batch held twice in the log")
	}
	var crcs []string
	fleet := 0
	for _, f := range fs {
		crcs = append(crcs, f.BatchCRC)
		if f.ID == "" {
			t.Errorf("finding %s has no stable ID", f.BatchCRC)
		}
		if f.Scope != "fleet" {
			continue
		}
		fleet++
		var hs []string
		for _, a := range f.Attempts {
			if !slices.Contains(hs, a.Host) {
				hs = append(hs, a.Host)
			}
		}
		slices.Sort(hs)
		if !slices.Equal(hs, hosts) {
			t.Errorf("fleet finding %s: hosts %v, want %v", f.BatchCRC, hs, hosts)
		}
	}
	for _, c := range twice {
		if !slices.Contains(crcs, c) {
			t.Errorf("the log holds batch %s twice: no finding (findings %v)", c, crcs)
		}
	}
	if fleet == 0 {
		t.Errorf("no finding of scope fleet: %v", crcs)
	}
}

// checkNotLocal: what a host saw alone of each fleet finding's batch is
// less: fewer attempts, never both brokers', and never the duplicate the
// fleet finding proves.
func checkNotLocal(t *testing.T, fleet, local []fleetFinding) {
	t.Helper()
	for _, f := range fleet {
		if f.Scope != "fleet" {
			continue
		}
		for _, l := range local {
			if l.BatchCRC != f.BatchCRC || l.Partition != f.Partition {
				continue
			}
			if len(l.Attempts) >= len(f.Attempts) {
				t.Errorf("one host alone sees all %d attempts of fleet finding %s: %s", len(f.Attempts), f.BatchCRC, sameness(l))
			}
			if f.Verdict == "duplicated" && l.Verdict == "duplicated" {
				t.Errorf("one host alone reports the duplicate of fleet finding %s: %s", f.BatchCRC, sameness(l))
			}
		}
	}
}

// correlateOut runs correlate to its --exit-idle and returns its stdout.
func correlateOut(t *testing.T, ctx context.Context, args ...string) (string, string, int) {
	var stdout, stderr bytes.Buffer
	code := runCorrelate(ctx, append([]string{"--format", "json"}, args...), &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

// TestFleetAnalyzeCorrelate: each broker's capture file analyzed on its
// own with --attempts (neither finds the duplicate), then correlate on the
// topic gives the findings analyze gives on the two files merged.
func TestFleetAnalyzeCorrelate(t *testing.T) {
	testenv.Capture(t)
	dir := t.TempDir()
	files := []string{filepath.Join(dir, "broker-0.pcap"), filepath.Join(dir, "broker-1.pcap")}
	var capts []*kafkatest.Capture
	run := runFleetRecipe(t, func(ports []int) {
		for i, p := range ports {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			c, err := kafkatest.StartCapture(ctx, files[i], p)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			capts = append(capts, c)
		}
	}, func() {
		for _, c := range capts {
			if _, err := c.Stop(5 * time.Second); err != nil {
				t.Fatal(err)
			}
		}
	})
	ports := run.cluster.Ports()
	portList := strconv.Itoa(ports[0]) + "," + strconv.Itoa(ports[1])

	attempts, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "kdupcap-attempts"))
	if err != nil {
		t.Fatal(err)
	}
	defer attempts.Close()
	url := "kafka://" + attempts.ListenAddrs()[0] + "/kdupcap-attempts"

	var local []fleetFinding
	for i, f := range files {
		res := cliAnalyze(t, nil, "--port", portList, "--attempts", url, "--host", "broker-"+strconv.Itoa(i), f)
		if res.Code != exitOK {
			t.Fatalf("analyze --attempts %s: exit %d: %s", f, res.Code, res.Stderr)
		}
		local = append(local, findingLines(t, res.Stdout, false)...)
		if !strings.Contains(res.Stdout, `"attempts_published":{"target"`) {
			t.Errorf("analyze --attempts: the summary does not say what was published: %s", res.Stdout)
		}
	}
	merged := cliAnalyze(t, nil, append([]string{"--port", portList}, files...)...)
	if merged.Code != exitOK {
		t.Fatalf("analyze merged: exit %d: %s", merged.Code, merged.Stderr)
	}
	want := findingLines(t, merged.Stdout, false)

	out, stderr, code := correlateOut(t, context.Background(), "--from", url, "--group", "g1", "--exit-idle", "4s", "--duration", "40s")
	if code != exitOK {
		t.Fatalf("correlate: exit %d: %s", code, stderr)
	}
	got := findingLines(t, out, true)
	checkFleetFindings(t, run.log, got, []string{"broker-0", "broker-1"})
	if g, w := samenesses(got), samenesses(want); !slices.Equal(g, w) {
		t.Errorf("correlate and analyze of the merged files differ:\ncorrelate:\n  %s\nanalyze:\n  %s", strings.Join(g, "\n  "), strings.Join(w, "\n  "))
	}
	checkNotLocal(t, got, local)
	if !strings.Contains(out, `"fleet":{"source"`) {
		t.Errorf("correlate's summary has no fleet section: %s", out)
	}
}

// TestFleetLive: two live instances on loopback, each filtering one
// broker's port (two hosts), publish their attempts to a third kfake
// cluster; two correlate instances of one group read them, one stopped
// mid-run. The fleet findings cover the log's duplicates; neither live
// instance alone sees all their attempts; no batch has two IDs.
func TestFleetLive(t *testing.T) {
	testenv.Root(t)
	attempts, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "kdupcap-attempts"))
	if err != nil {
		t.Fatal(err)
	}
	defer attempts.Close()
	url := "kafka://" + attempts.ListenAddrs()[0] + "/kdupcap-attempts"

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type liveOut struct {
		stdout, stderr lockedBuffer
		done           chan int
	}
	lives := make([]*liveOut, 2)
	run := runFleetRecipe(t, func(ports []int) {
		for i, p := range ports {
			l := &liveOut{done: make(chan int, 1)}
			lives[i] = l
			args := []string{"-i", "lo", "--port", strconv.Itoa(p), "--format", "json", "--metrics", "127.0.0.1:0",
				"--attempts", url, "--host", "broker-" + strconv.Itoa(i), "--settle", "2s", "--duration", "60s"}
			go func() { l.done <- runLive(ctx, args, &l.stdout, &l.stderr) }()
			if !waitFor(10*time.Second, func() bool { return strings.Contains(l.stderr.String(), "metrics on") }) {
				t.Fatalf("live %d did not start: %s", i, l.stderr.String())
			}
		}
	}, func() {
		time.Sleep(1500 * time.Millisecond) // the held answer and the FINs
		cancel()
		for i, l := range lives {
			if code := <-l.done; code != exitOK {
				t.Fatalf("live %d exited %d: %s", i, code, l.stderr.String())
			}
		}
	})
	var local []fleetFinding
	for _, l := range lives {
		if !strings.Contains(l.stdout.String(), `"attempts_published":{"target"`) {
			t.Errorf("live's summary does not say what it published: %s", l.stdout.String())
		}
		local = append(local, findingLines(t, l.stdout.String(), true)...)
	}

	// Two correlate instances in one group; the second stops mid-run and
	// the first takes over its partitions.
	type corrOut struct {
		out, errOut string
		code        int
	}
	first, second := make(chan corrOut, 1), make(chan corrOut, 1)
	go func() {
		o, e, c := correlateOut(t, context.Background(), "--from", url, "--group", "fleet", "--exit-idle", "8s", "--duration", "40s")
		first <- corrOut{o, e, c}
	}()
	sctx, scancel := context.WithCancel(context.Background())
	go func() {
		o, e, c := correlateOut(t, sctx, "--from", url, "--group", "fleet", "--duration", "40s")
		second <- corrOut{o, e, c}
	}()
	time.Sleep(3 * time.Second)
	scancel()
	b := <-second
	a := <-first
	if a.code != exitOK || b.code != exitOK {
		t.Fatalf("correlate exited %d and %d: %s\n%s", a.code, b.code, a.errOut, b.errOut)
	}
	got := findingLines(t, a.out, true)
	checkFleetFindings(t, run.log, got, []string{"broker-0", "broker-1"})
	checkNotLocal(t, got, local)
	// One ID per batch, one batch per ID, over both instances' reports.
	ids, batches := map[string]string{}, map[string]string{}
	for _, f := range append(findingLines(t, a.out, false), findingLines(t, b.out, false)...) {
		key := fmt.Sprintf("%s/%d %s %s", f.Topic, f.Partition, f.BatchCRC, f.Type)
		if k, ok := ids[f.ID]; ok && k != key {
			t.Errorf("ID %s names %s and %s", f.ID, k, key)
		}
		if id, ok := batches[key]; ok && id != f.ID {
			t.Errorf("%s reported with IDs %s and %s", key, id, f.ID)
		}
		ids[f.ID], batches[key] = key, f.ID
	}
	if !strings.Contains(a.out, `"partitions_revoked"`) && !strings.Contains(b.out, `"partitions_revoked"`) {
		t.Logf("no partition was revoked (the stopped instance may have joined after the first took them all)")
	}
}
