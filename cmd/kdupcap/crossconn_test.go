package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/internal/kafkatest"
	"github.com/kdupcap/kdupcap/internal/testenv"
)

// TestCrossConnection captures kgo re-sending a batch on a new connection:
// after the broker appended it and closed the connection without answering
// (CloseAfterAppend), and after the broker held the answer past kgo's own
// request timeout (Delay), which makes kgo close the connection and retry.
// Expectations come from the log read back: every record the log holds
// twice is covered by a finding of scope client whose attempts used two
// connections and whose verdict is duplicated or unconfirmed (never single,
// deduplicated or rejected); an idempotent producer's log holds every record
// once and no finding says duplicated.
func TestCrossConnection(t *testing.T) {
	testenv.Capture(t)
	kgo := func(idempotent bool) kafkatest.Producer {
		return kafkatest.Producer{
			Idempotent:      idempotent,
			ClientID:        "kgo-crossconn",
			ProduceTimeout:  300 * time.Millisecond,
			TimeoutOverhead: 500 * time.Millisecond,
			PerRequest:      1,
		}
	}
	closed := []kafkatest.Fault{{Action: kafkatest.CloseAfterAppend, Every: 3, Max: 2}}
	// kgo's read deadline is ProduceTimeout + TimeoutOverhead (800ms).
	delayed := []kafkatest.Fault{{Action: kafkatest.Delay, Delay: 2 * time.Second, Every: 3, Max: 1}}
	// The cause of each re-send follows from who ended the connection of
	// the attempt before: the broker (its FIN), or kgo after its own
	// timeout (kgo's FIN).
	brokerFIN := cliCause{"connection_closed", "broker FIN"}
	clientFIN := cliCause{"client_timeout", "client FIN"}
	tests := []struct {
		name       string
		s          kafkatest.Scenario
		idempotent bool
		cause      cliCause
	}{
		{name: "kgo nonidempotent closed after append", s: kafkatest.Scenario{Records: 9, Partitions: 2, Faults: closed, Producer: kgo(false)}, cause: brokerFIN},
		{name: "kgo nonidempotent answer past the request timeout", s: kafkatest.Scenario{Records: 6, Partitions: 2, Faults: delayed, Producer: kgo(false)}, cause: clientFIN},
		{name: "kgo idempotent closed after append", s: kafkatest.Scenario{Records: 9, Partitions: 2, Faults: closed, Producer: kgo(true)}, idempotent: true, cause: brokerFIN},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.s
			s.Name, s.Topic = fmt.Sprintf("x%d", i), fmt.Sprintf("crossconn-%d", i)
			res, pcap := runCaptured(t, s, 30*time.Second)
			if len(res.Events) == 0 {
				t.Fatalf("harness: no fault applied")
			}
			dups := res.Log.Duplicates()
			switch {
			case tt.idempotent && len(dups) > 0:
				t.Fatalf("harness: the broker did not deduplicate an idempotent producer: %+v", dups)
			case !tt.idempotent && len(dups) == 0:
				t.Fatalf("harness: %d faults applied but the log holds no record twice: %+v", len(res.Events), res.Events)
			}

			out := cliAnalyzeOK(t, pcap).Findings
			t.Logf("%d faults %+v, %d findings, log of %s: %s", len(res.Events), res.Events, len(out), s.Topic, describeLog(res.Log))
			checkCrossFindings(t, res, out, tt.idempotent, tt.cause)

			// --scope connection does not see the re-sends on a new
			// connection; --scope client sees the same as the default.
			if n := len(cliAnalyzeOK(t, "--scope", "connection", pcap).Findings); n != 0 {
				t.Errorf("--scope connection: %d findings, want none (every re-send went out on a new connection)", n)
			}
			if n := len(cliAnalyzeOK(t, "--scope", "client", pcap).Findings); n != len(out) {
				t.Errorf("--scope client: %d findings, the default %d", n, len(out))
			}
		})
	}
}

// cliCause is a re-send's cause and cause_error.
type cliCause struct{ cause, err string }

func checkCrossFindings(t *testing.T, res *kafkatest.Result, findings []cliFinding, idempotent bool, want cliCause) {
	t.Helper()
	broker := "127.0.0.1:" + strconv.Itoa(res.Port)
	for i, f := range findings {
		where := fmt.Sprintf("finding %d (%s/%d crc %s, scope %s, verdict %s, offsets %v)", i, f.Topic, f.Partition, f.BatchCRC, f.Scope, f.Verdict, f.AppendedOffsets)
		if f.Topic != res.Log.Topic {
			t.Errorf("%s: topic %q, want %q", where, f.Topic, res.Log.Topic)
			continue
		}
		conns := map[uint64]bool{}
		for _, a := range f.Attempts {
			conns[a.ConnID] = true
			if a.Broker != broker || a.Client == "" {
				t.Errorf("%s: attempt %d on connection %d %s -> %s, want the broker %s", where, a.CorrelationID, a.ConnID, a.Client, a.Broker, broker)
			}
		}
		if f.Scope != "client" || len(conns) < 2 {
			t.Errorf("%s: attempts on %d connections, scope %q: want scope client over two or more", where, len(conns), f.Scope)
		}
		if f.Attempts[0].ConnID != f.ConnID || f.Attempts[0].Client != f.Client {
			t.Errorf("%s: finding on connection %d %s, first attempt on %d %s", where, f.ConnID, f.Client, f.Attempts[0].ConnID, f.Attempts[0].Client)
		}
		first := f.Attempts[0]
		if first.Response != nil {
			t.Errorf("%s: first attempt answered %+v, want none (the broker closed, or kgo gave up)", where, first.Response)
		}
		if c := f.Attempts[1].Cause; c == nil || *c != want.cause || f.Attempts[1].CauseError != want.err {
			t.Errorf("%s: resend cause %v %q, want %s %q", where, c, f.Attempts[1].CauseError, want.cause, want.err)
		}
		// The first attempt's connection end is shown, by the side that
		// ended it, before the re-send.
		if e := first.ConnEnd; e == nil || e.By+" "+strings.ToUpper(e.How) != want.err || e.Time > f.Attempts[1].Time {
			t.Errorf("%s: first attempt's connection end %+v, want %s before the re-send at %s", where, e, want.err, f.Attempts[1].Time)
		}
		if f.Idempotent != idempotent {
			t.Errorf("%s: idempotent %v, want %v", where, f.Idempotent, idempotent)
		}
		pl, ok := res.Log.Partition(f.Partition)
		if !ok {
			t.Errorf("%s: no such partition in the log", where)
			continue
		}
		// The faulted batches are held twice, so "held twice" is not
		// checked per record here but below, against the log's duplicates.
		checkAppended(t, where, pl, f, func(kafkatest.Record) bool { return true })
		switch {
		case idempotent && f.Verdict != "deduplicated" && f.Verdict != "unconfirmed":
			t.Errorf("%s: idempotent producer, the log holds every record once: want deduplicated or unconfirmed", where)
		case !idempotent && f.Verdict != "duplicated" && f.Verdict != "unconfirmed":
			t.Errorf("%s: the log holds the batch twice: want duplicated or unconfirmed", where)
		}
	}

	// Every record the log holds twice is in a finding: same partition,
	// the CRC of its batches, and every appended offset one of its copies.
	for _, c := range res.Log.Duplicates() {
		pl, _ := res.Log.Partition(c.Partition)
		var bases []int64
		crcs := map[string]bool{}
		for _, r := range c.Records {
			bases = append(bases, r.BatchBaseOffset)
			if b, ok := pl.BatchAt(r.BatchBaseOffset); ok {
				crcs[fmt.Sprintf("0x%08x", b.CRC)] = true
			}
		}
		if !slices.ContainsFunc(findings, func(f cliFinding) bool {
			return f.Partition == c.Partition && crcs[f.BatchCRC] && len(f.AppendedOffsets) > 0 &&
				!slices.ContainsFunc(f.AppendedOffsets, func(o int64) bool { return !slices.Contains(bases, o) })
		}) {
			t.Errorf("the log holds %q %d times in %s/%d (batches at %v): no finding covers it", c.Value, len(c.Records), res.Log.Topic, c.Partition, bases)
		}
	}
	// One finding per faulted request: each carried one batch, re-sent on
	// a new connection.
	if len(findings) != len(res.Events) {
		t.Errorf("%d findings, want one per fault: %d", len(findings), len(res.Events))
	}
}

// TestScopeFlag: --scope takes connection, client or both (the default) on
// analyze and live, and refuses anything else as a usage error.
func TestScopeFlag(t *testing.T) {
	seed := filepath.Join("..", "..", "testdata", "seed-nonidempotent-retry.pcap")
	tests := []struct {
		arg  string // "" : no --scope
		want detect.Scope
		ok   bool
	}{
		{"", detect.ScopeBoth, true},
		{"both", detect.ScopeBoth, true},
		{"connection", detect.ScopeConnection, true},
		{"client", detect.ScopeClient, true},
		{"clients", "", false},
		{"Connection", "", false},
	}
	for _, tt := range tests {
		t.Run("scope="+tt.arg, func(t *testing.T) {
			var args []string
			if tt.arg != "" {
				args = []string{"--scope", tt.arg}
			}
			acfg, aerr := parseAnalyzeFlags(append(slices.Clone(args), seed), io.Discard)
			lcfg, lerr := parseLiveFlags(append(slices.Clone(args), "-i", "lo"), io.Discard, false)
			if !tt.ok {
				if aerr == nil || lerr == nil {
					t.Fatalf("analyze error %v, live error %v: want both to refuse %q", aerr, lerr, tt.arg)
				}
				var stdout, stderr bytes.Buffer
				if code := run(append([]string{"analyze"}, append(args, seed)...), nil, &stdout, &stderr); code != exitUsage {
					t.Errorf("analyze --scope %s exited %d, want %d: %s", tt.arg, code, exitUsage, stderr.String())
				}
				return
			}
			if aerr != nil || lerr != nil {
				t.Fatalf("analyze error %v, live error %v", aerr, lerr)
			}
			if acfg.opts.Scope != tt.want || lcfg.opts.Scope != tt.want {
				t.Errorf("scope analyze %q live %q, want %q", acfg.opts.Scope, lcfg.opts.Scope, tt.want)
			}
			// The seed's resend is on one connection: --scope client
			// leaves it out, the others find it.
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"analyze", "--format", "json"}, append(args, seed)...), nil, &stdout, &stderr); code != exitOK {
				t.Fatalf("analyze exited %d: %s", code, stderr.String())
			}
			got := bytes.Count(stdout.Bytes(), []byte(`"type":"duplicate"`))
			if want := map[bool]int{true: 0, false: 1}[tt.want == detect.ScopeClient]; got != want {
				t.Errorf("%d findings, want %d", got, want)
			}
		})
	}
}

// TestRecordedCrossConnection checks the committed capture of kgo re-sending
// on a new connection after the broker closed the old one past the append
// (testdata/README.md): the log holds batches 0xf52dd7ef at offsets 1 and 2
// and 0x093f198b at 3 and 4; the capture shows only the re-sends' answers
// (2 and 4), so each is unconfirmed, scope client, over two connections.
func TestRecordedCrossConnection(t *testing.T) {
	want := []struct {
		crc    string
		offset int64
	}{{"0xf52dd7ef", 2}, {"0x093f198b", 4}}
	got := cliAnalyzeOK(t, seedPath("kgo-v13-nonidempotent-closed-after-append.pcap")).Findings
	if len(got) != len(want) {
		t.Fatalf("%d findings, the log shows %d batches held twice", len(got), len(want))
	}
	for i, w := range want {
		f := got[i]
		if f.Topic != "crossconn-0" || f.Partition != 0 || f.BatchCRC != w.crc || f.Verdict != "unconfirmed" ||
			f.Scope != "client" || !slices.Equal(f.AppendedOffsets, []int64{w.offset}) || len(f.Attempts) != 2 ||
			f.Attempts[0].ConnID == f.Attempts[1].ConnID || f.Attempts[0].NoResponse != "connection closed" ||
			f.Attempts[1].Cause == nil || *f.Attempts[1].Cause != "connection_closed" {
			t.Errorf("finding %d: %+v, want crossconn-0/0 crc %s unconfirmed at [%d], scope client, re-sent on a new connection after the close",
				i, f, w.crc, w.offset)
		}
	}
}
