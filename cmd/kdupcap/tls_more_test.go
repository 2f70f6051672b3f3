package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/kdupcap/kdupcap/internal/kafkatest"
	"github.com/kdupcap/kdupcap/internal/testenv"
)

// needKafkaPython ends t (skip, or fail under CI) without kafka-python.
func needKafkaPython(t *testing.T) {
	t.Helper()
	if err := kafkatest.KafkaPythonErr(); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
}

// checkAllDecrypted checks the summary of a decrypted run: nothing
// malformed, every TLS connection listed and decrypted, some Kafka bytes
// decrypted.
func checkAllDecrypted(t *testing.T, sum tlsSummary) {
	t.Helper()
	if sum.Malformed != 0 || sum.Resyncs != 0 {
		t.Errorf("decrypted traffic decoded with %d malformed frames, %d resyncs", sum.Malformed, sum.Resyncs)
	}
	if sum.TLS == nil || sum.TLS.Total == 0 || sum.TLS.Decrypted != sum.TLS.Total || len(sum.TLS.Connections) != sum.TLS.Total {
		t.Fatalf("TLS summary %+v: want every connection listed and decrypted", sum.TLS)
	}
	var total int64
	for _, c := range sum.TLS.Connections {
		// A connection may hold a handshake and nothing more (kafka-python
		// opens one now and then and resets it at once): decrypted, with
		// no byte of Kafka.
		if c.Status != "decrypted" {
			t.Errorf("TLS connection %+v: want decrypted", c)
		}
		total += c.Bytes
	}
	if total == 0 {
		t.Errorf("TLS connections %+v: decrypted, but not a byte of Kafka", sum.TLS.Connections)
	}
}

// keepKeyLogOnFailure copies the key log out of the test's temporary
// directory when the test fails, beside the capture keepOnFailure keeps,
// so that the failure can be replayed (analyze --tls-keylog).
func keepKeyLogOnFailure(t *testing.T, keyPath string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		b, err := os.ReadFile(keyPath)
		if err != nil {
			return
		}
		f, err := os.CreateTemp("", "kdupcap-realtraffic-*.keys")
		if err != nil {
			return
		}
		defer f.Close()
		if _, err := f.Write(b); err == nil {
			t.Logf("failed run's key log kept at %s", f.Name())
		}
	})
}

// TestTLSKafkaPython captures kafka-python (Debian's python3-kafka 2.0.2,
// a client with its own TLS stack: Python's ssl over OpenSSL 3, its key
// log written through SSLContext.keylog_filename) producing over SSL to
// kfake, its produce responses answered REQUEST_TIMED_OUT after the append.
// Decrypted with that key log, the capture gives the findings the log read
// back calls for, every TLS connection decrypted. OpenSSL negotiates TLS
// 1.3 by default (Go's server then picks the suite: TLS_AES_128_GCM_SHA256
// on a CPU with AES instructions); the TLS
// 1.2 cases choose the suite on the client's side, among them the SHA-384
// PRF and ChaCha20-Poly1305.
//
// kafka-python sends its request_timeout_ms as the produce request's
// TimeoutMillis and waits exactly as long before it closes the connection
// itself: with the two equal, the broker's REQUEST_TIMED_OUT and the
// client's own deadline race (seen on the wire: the answer arrives, the
// client, having given up a few microseconds earlier, resets the
// connection unread and re-sends on a new one). The client's deadline is
// set well above the request's timeout so that the broker answers first
// and kafka-python retries on the same connection.
func TestTLSKafkaPython(t *testing.T) {
	testenv.Capture(t)
	needKafkaPython(t)
	timedOut := []kafkatest.Fault{{Action: kafkatest.TimedOutAfterAppend, Every: 3, Max: 2}}
	for i, tt := range []struct {
		name        string
		maxTLS12    bool
		ciphers     string
		wantVersion string
		wantSuite   string
	}{
		{name: "TLS 1.3 default", wantVersion: "TLS 1.3"},
		{name: "TLS 1.2 default", maxTLS12: true, wantVersion: "TLS 1.2"},
		{name: "TLS 1.2 AES256-GCM-SHA384", maxTLS12: true, ciphers: "ECDHE-ECDSA-AES256-GCM-SHA384",
			wantVersion: "TLS 1.2", wantSuite: "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"},
		{name: "TLS 1.2 CHACHA20-POLY1305", maxTLS12: true, ciphers: "ECDHE-ECDSA-CHACHA20-POLY1305",
			wantVersion: "TLS 1.2", wantSuite: "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"},
		{name: "TLS 1.2 AES256-CBC-SHA", maxTLS12: true, ciphers: "ECDHE-ECDSA-AES256-SHA",
			wantVersion: "TLS 1.2", wantSuite: "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			keyPath := filepath.Join(t.TempDir(), "keys.log")
			tl, err := kafkatest.NewTLS(nil)
			if err != nil {
				t.Fatal(err)
			}
			var pyLog string
			s := kafkatest.Scenario{
				Name: fmt.Sprintf("py%d", i), Topic: fmt.Sprintf("tls-python-%d", i),
				Records: 9, Partitions: 2, Faults: timedOut, TLS: tl,
				Produce: kafkatest.KafkaPythonProduce(kafkatest.KafkaPython{
					TLS: tl, KeyLogPath: keyPath, MaxTLS12: tt.maxTLS12, Ciphers: tt.ciphers,
					ClientID: "kafka-python-tls", Partitions: 2,
					RequestTimeout: 5 * time.Second, ProduceTimeout: 300 * time.Millisecond,
					Log: func(s string) { pyLog = s },
				}),
			}
			keepKeyLogOnFailure(t, keyPath)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("kafka-python's output:\n%s", pyLog)
				}
			})
			res, pcap := runCaptured(t, s, 30*time.Second)
			raw, err := os.ReadFile(pcap)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(raw, []byte(res.Values[0])) {
				t.Fatal("harness: a record value is in the capture in the clear: the traffic is not TLS")
			}
			keys, err := os.ReadFile(keyPath)
			if err != nil {
				t.Fatalf("harness: kafka-python wrote no key log: %v", err)
			}
			wantLabel := "CLIENT_TRAFFIC_SECRET_0 "
			if tt.maxTLS12 {
				wantLabel = "CLIENT_RANDOM "
			}
			if !bytes.Contains(keys, []byte(wantLabel)) {
				t.Fatalf("harness: the key log has no %s line:\n%s", wantLabel, keys)
			}
			checkHarness(t, res, true, false)
			for _, e := range res.Events {
				// Produce v7, as kafka-python 2.0.2 speaks it to kfake.
				if e.Version != 7 {
					t.Errorf("harness: faulted request of Produce v%d, want v7 (kafka-python 2.0.2)", e.Version)
				}
			}

			got := cliAnalyze(t, nil, "--tls-keylog", keyPath, pcap)
			if got.Code != exitOK {
				t.Fatalf("analyze --tls-keylog exited %d: %s", got.Code, got.Stderr)
			}
			t.Logf("%d faults applied, %d findings, log: %s", len(res.Events), len(got.Findings), describeLog(res.Log))
			checkFindings(t, res, got.Findings, false)
			for _, f := range got.Findings {
				if f.ClientID == nil || *f.ClientID != "kafka-python-tls" {
					t.Errorf("finding %s/%d: client.id %v, want kafka-python-tls", f.Topic, f.Partition, f.ClientID)
				}
			}
			sum := tlsOf(t, got.Stdout)
			checkAllDecrypted(t, sum)
			for _, c := range sum.TLS.Connections {
				if c.Version != tt.wantVersion || (tt.wantSuite != "" && c.CipherSuite != tt.wantSuite) {
					t.Errorf("TLS connection %+v: want %s %s", c, tt.wantVersion, tt.wantSuite)
				}
			}
			if !t.Failed() {
				c := sum.TLS.Connections[0]
				t.Logf("%d TLS connections, %s %s", sum.TLS.Total, c.Version, c.CipherSuite)
			}
		})
	}
}

// TestTLSResumption captures kgo producing over TLS with a client session
// cache (kafkatest.TLS.SessionTickets): every connection after kgo's first
// resumes the session, by a TLS 1.3 PSK or, capped at TLS 1.2, by a session
// ticket (for which Go's client writes no key log line: the resumed
// connection's keys come from the master secret of the connection that
// got the ticket, linked by the ticket seen on the wire). The faults are
// answered REQUEST_TIMED_OUT after the append (kgo re-sends on its
// produce connection, itself resumed: checkFindings), or close the
// connection after the append, so that kgo reconnects, resuming again, and
// re-sends there (checkCrossFindings). The resumed connections are
// decrypted and every re-send is found on one.
func TestTLSResumption(t *testing.T) {
	testenv.Capture(t)
	versions := []struct {
		name        string
		maxVersion  uint16
		suites      []uint16
		wantVersion string
	}{
		{name: "TLS 1.3 PSK", wantVersion: "TLS 1.3"},
		{name: "TLS 1.2 ticket GCM", maxVersion: tls.VersionTLS12,
			suites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}, wantVersion: "TLS 1.2"},
		{name: "TLS 1.2 ticket CBC", maxVersion: tls.VersionTLS12,
			suites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}, wantVersion: "TLS 1.2"},
	}
	faults := []struct {
		name   string
		action kafkatest.Action
	}{
		{"timed out", kafkatest.TimedOutAfterAppend},
		{"closed after append", kafkatest.CloseAfterAppend},
	}
	n := 0
	for _, v := range versions {
		for _, fl := range faults {
			i := n
			n++
			t.Run(v.name+", "+fl.name, func(t *testing.T) {
				res, keyPath, pcap := runTLSCaptured(t, fmt.Sprintf("res%d", i), fmt.Sprintf("tls-resumed-%d", i),
					fl.action, v.maxVersion, v.suites, true)
				got := cliAnalyze(t, nil, "--tls-keylog", keyPath, pcap)
				if got.Code != exitOK {
					t.Fatalf("analyze --tls-keylog exited %d: %s", got.Code, got.Stderr)
				}
				t.Logf("%d faults applied, %d findings, log: %s", len(res.Events), len(got.Findings), describeLog(res.Log))
				if fl.action == kafkatest.CloseAfterAppend {
					checkCrossFindings(t, res, got.Findings, false, cliCause{"connection_closed", "broker FIN"})
				} else {
					checkFindings(t, res, got.Findings, false)
				}
				sum := tlsOf(t, got.Stdout)
				checkAllDecrypted(t, sum)
				resumed := map[string]bool{}
				for _, c := range sum.TLS.Connections {
					if c.Version != v.wantVersion {
						t.Errorf("TLS connection %+v: want %s", c, v.wantVersion)
					}
					if c.Resumed {
						resumed[c.Client] = true
					}
				}
				if len(resumed) == 0 {
					t.Fatalf("no TLS connection resumed: %+v", sum.TLS.Connections)
				}
				if v.maxVersion == tls.VersionTLS12 {
					// Go logs a TLS 1.2 master secret at full handshakes
					// only: fewer lines than connections decrypted means
					// some had their keys from the ticket.
					keys, err := os.ReadFile(keyPath)
					if err != nil {
						t.Fatal(err)
					}
					if n := bytes.Count(keys, []byte("CLIENT_RANDOM ")); n >= sum.TLS.Decrypted {
						t.Errorf("harness: %d CLIENT_RANDOM lines for %d connections: the resumed ones have their own", n, sum.TLS.Decrypted)
					}
				}
				// Every connection after kgo's first resumed: each re-send
				// went out on one.
				for _, f := range got.Findings {
					if a := f.Attempts[len(f.Attempts)-1]; !resumed[a.Client] {
						t.Errorf("finding %s/%d crc %s: re-sent on %s, not a resumed connection (resumed: %v)", f.Topic, f.Partition, f.BatchCRC, a.Client, resumed)
					}
				}
				t.Logf("%d TLS connections, %d resumed", sum.TLS.Total, len(resumed))
			})
		}
	}
}

// TestTLSCloseAfterAppend is TestCrossConnection's first case over TLS
// (no session resumption): the broker appends and closes the connection
// without answering, kgo re-sends on a new connection. Decrypted, the
// capture must say what the plaintext one says: the first attempt's
// connection closed, the re-send's cause connection_closed.
func TestTLSCloseAfterAppend(t *testing.T) {
	testenv.Capture(t)
	for i, v := range []struct {
		name       string
		maxVersion uint16
	}{{"TLS 1.3", 0}, {"TLS 1.2", tls.VersionTLS12}} {
		t.Run(v.name, func(t *testing.T) {
			res, keyPath, pcap := runTLSCaptured(t, fmt.Sprintf("cl%d", i), fmt.Sprintf("tls-closed-%d", i),
				kafkatest.CloseAfterAppend, v.maxVersion, nil, false)
			got := cliAnalyze(t, nil, "--tls-keylog", keyPath, pcap)
			if got.Code != exitOK {
				t.Fatalf("analyze --tls-keylog exited %d: %s", got.Code, got.Stderr)
			}
			t.Logf("%d faults applied, %d findings, log: %s", len(res.Events), len(got.Findings), describeLog(res.Log))
			checkCrossFindings(t, res, got.Findings, false, cliCause{"connection_closed", "broker FIN"})
			checkAllDecrypted(t, tlsOf(t, got.Stdout))
		})
	}
}

// runTLSCaptured runs 9 records of a non-idempotent kgo producer, one a
// request over two partitions, against kfake over TLS (MaxVersion and
// CipherSuites as given, a client session cache if tickets), every third
// produce request of a connection faulted with action, twice; the key log
// is the client's. It checks the harness: faults applied, the log holding
// records twice. It returns the run, the key log's path and the capture's.
func runTLSCaptured(t *testing.T, name, topic string, action kafkatest.Action, maxVersion uint16, suites []uint16, tickets bool) (*kafkatest.Result, string, string) {
	t.Helper()
	keyPath := filepath.Join(t.TempDir(), "keys.log")
	keyFile, err := os.Create(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	defer keyFile.Close()
	keepKeyLogOnFailure(t, keyPath)
	tl, err := kafkatest.NewTLS(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	tl.MaxVersion, tl.CipherSuites, tl.SessionTickets = maxVersion, suites, tickets
	overhead := 2 * time.Second
	if action == kafkatest.CloseAfterAppend {
		overhead = 500 * time.Millisecond // as TestCrossConnection
	}
	s := kafkatest.Scenario{
		Name: name, Topic: topic, Records: 9, Partitions: 2, TLS: tl,
		Faults: []kafkatest.Fault{{Action: action, Every: 3, Max: 2}},
		Producer: kafkatest.Producer{ClientID: "kgo-tls-more", PerRequest: 1,
			ProduceTimeout: 300 * time.Millisecond, TimeoutOverhead: overhead},
	}
	res, pcap := runCaptured(t, s, 30*time.Second)
	if err := keyFile.Close(); err != nil {
		t.Fatal(err)
	}
	if len(res.Answered()) == 0 {
		t.Fatalf("harness: no fault applied: %+v", res.Events)
	}
	if len(res.Log.Duplicates()) == 0 {
		t.Fatalf("harness: %d faults applied but the log holds no record twice: %+v", len(res.Events), res.Events)
	}
	return res, keyPath, pcap
}

// TestTLSCutMidConnection captures two kgo producers over TLS, one after
// the other, each re-sending twice after REQUEST_TIMED_OUT answers, then
// drops the capture's first packets, up to just after the first producer's
// first fault was answered: that producer's connections start without
// their handshake, the second's are whole. Decrypted with the whole key
// log, the cut capture names the first producer's produce connection
// "started mid-stream" (with the hint), decodes no malformed Kafka frame,
// and claims no finding on a connection whose handshake is gone: its
// findings are those the log read back calls for of the second
// producer's records, on its connections.
func TestTLSCutMidConnection(t *testing.T) {
	testenv.Capture(t)
	for i, v := range []struct {
		name       string
		maxVersion uint16
		suites     []uint16
	}{
		{name: "TLS 1.3"},
		{name: "TLS 1.2 GCM", maxVersion: tls.VersionTLS12, suites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}},
		{name: "TLS 1.2 CBC", maxVersion: tls.VersionTLS12, suites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}},
	} {
		t.Run(v.name, func(t *testing.T) { testTLSCut(t, fmt.Sprintf("cut%d", i), v.maxVersion, v.suites) })
	}
}

func testTLSCut(t *testing.T, name string, maxVersion uint16, suites []uint16) {
	keyPath := filepath.Join(t.TempDir(), "keys.log")
	keyFile, err := os.Create(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	defer keyFile.Close()
	keepKeyLogOnFailure(t, keyPath)
	tl, err := kafkatest.NewTLS(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	tl.MaxVersion, tl.CipherSuites = maxVersion, suites
	const perProducer = 5 // two faults each: the 3rd and 6th request of its produce connection
	p := kafkatest.Producer{ClientID: "kgo-tls-cut", PerRequest: 1, Partitions: 2, TLS: tl,
		ProduceTimeout: 300 * time.Millisecond, TimeoutOverhead: 2 * time.Second}
	s := kafkatest.Scenario{
		Name: name, Topic: "tls-" + name, Records: 2 * perProducer, Partitions: 2, TLS: tl,
		Faults: []kafkatest.Fault{{Action: kafkatest.TimedOutAfterAppend, Every: 3, Max: 4}},
		Produce: func(ctx context.Context, addr, topic string, values []string) error {
			if err := kafkatest.Produce(ctx, addr, topic, p, values[:perProducer]); err != nil {
				return err
			}
			return kafkatest.Produce(ctx, addr, topic, p, values[perProducer:])
		},
	}
	res, pcap := runCaptured(t, s, 30*time.Second)
	if err := keyFile.Close(); err != nil {
		t.Fatal(err)
	}
	checkHarness(t, res, true, false)
	if len(res.Answered()) != 4 {
		t.Fatalf("harness: %d faults answered, want 2 per producer: %+v", len(res.Answered()), res.Events)
	}
	// The whole capture: every fault found.
	whole := cliAnalyze(t, nil, "--tls-keylog", keyPath, pcap)
	if whole.Code != exitOK {
		t.Fatalf("analyze --tls-keylog exited %d: %s", whole.Code, whole.Stderr)
	}
	checkFindings(t, res, whole.Findings, false)
	checkAllDecrypted(t, tlsOf(t, whole.Stdout))

	// Cut just after the first fault's answer went out.
	cutAt := res.Events[0].Answered
	cut := filepath.Join(t.TempDir(), "cut.pcap")
	keepOnFailure(t, cut)
	dropped, kept := cutCapture(t, pcap, cut, cutAt)
	t.Logf("cut at %s: dropped %d packets; connections with a handshake: %v", cutAt.Format(time.StampMicro), dropped, kept)

	// What the log calls for of the whole connections: the second
	// producer's records, the faults on connections the cut kept whole.
	intact := &kafkatest.Result{Log: keepValues(res.Log, res.Values[perProducer:]), Port: res.Port}
	for _, e := range res.Events {
		if kept[e.Conn] {
			intact.Events = append(intact.Events, e)
		}
	}
	if len(intact.Events) != 2 || len(intact.Log.Duplicates()) == 0 {
		t.Fatalf("harness: the cut kept %d faults (want the second producer's 2) and %d records held twice", len(intact.Events), len(intact.Log.Duplicates()))
	}

	got := cliAnalyze(t, nil, "--tls-keylog", keyPath, cut)
	if got.Code != exitOK {
		t.Fatalf("analyze --tls-keylog of the cut capture exited %d: %s", got.Code, got.Stderr)
	}
	t.Logf("cut capture: %d findings, intact log: %s; TLS %s", len(got.Findings), describeLog(intact.Log), summaryLine(got.Stdout))
	for _, f := range got.Findings {
		for _, a := range f.Attempts {
			if !kept[a.Client] {
				t.Errorf("finding %s/%d crc %s claims attempt %d on %s, a connection whose handshake was cut", f.Topic, f.Partition, f.BatchCRC, a.CorrelationID, a.Client)
			}
		}
	}
	checkFindings(t, intact, got.Findings, false)

	sum := tlsOf(t, got.Stdout)
	if sum.Malformed != 0 {
		t.Errorf("the cut capture decoded with %d malformed frames, want none", sum.Malformed)
	}
	if sum.TLS == nil {
		t.Fatal("no TLS summary")
	}
	broker := "127.0.0.1:" + strconv.Itoa(res.Port)
	// clientOf is the client's end of a TLS connection listed, whichever
	// way the summary names it (see the subtest below for the names).
	clientOf := func(c tlsConnection) string {
		if c.Client == broker {
			return c.Broker
		}
		return c.Client
	}
	mid := 0
	for _, c := range sum.TLS.Connections {
		switch whole := kept[clientOf(c)]; {
		case whole && c.Status != "decrypted":
			t.Errorf("TLS connection %+v: its handshake is in the capture, want decrypted", c)
		case !whole && c.Status != "started mid-stream":
			t.Errorf("TLS connection %+v: its handshake was cut, want started mid-stream", c)
		case !whole:
			mid++
			if c.Bytes != 0 {
				t.Errorf("TLS connection %+v: started mid-stream, yet bytes decrypted", c)
			}
		}
	}
	// The first producer's produce connection carried records after the
	// cut (its second fault and re-send).
	if !slices.ContainsFunc(sum.TLS.Connections, func(c tlsConnection) bool { return clientOf(c) == res.Events[1].Conn }) {
		t.Errorf("the cut produce connection %s is not listed as TLS: %+v", res.Events[1].Conn, sum.TLS.Connections)
	}
	var extra struct {
		TLS struct {
			MidStream int `json:"mid_stream"`
		} `json:"tls"`
	}
	if err := json.Unmarshal([]byte(summaryLine(got.Stdout)), &extra); err != nil {
		t.Fatal(err)
	}
	if mid == 0 || extra.TLS.MidStream != mid {
		t.Errorf("mid_stream %d, %d connections listed started mid-stream; want as many, at least one", extra.TLS.MidStream, mid)
	}
	if !slices.ContainsFunc(sum.TLS.Hints, func(h string) bool { return strings.Contains(h, "can only be decrypted from its handshake") }) {
		t.Errorf("hints %q: want the started mid-stream hint", sum.TLS.Hints)
	}

	// A connection with no SYN and no readable byte: which end is the
	// broker? --port says so. The broker's port moved above every
	// ephemeral port (kfake listens on one, so it is above or below the
	// clients' by chance), the connections must still be named with the
	// broker at --port.
	t.Run("named with --port", func(t *testing.T) {
		const high = 65001
		moved := filepath.Join(t.TempDir(), "cut-port.pcap")
		movePort(t, cut, moved, uint16(res.Port), high)
		got := cliAnalyze(t, nil, "--port", strconv.Itoa(high), "--tls-keylog", keyPath, moved)
		if got.Code != exitOK {
			t.Fatalf("analyze exited %d: %s", got.Code, got.Stderr)
		}
		sum := tlsOf(t, got.Stdout)
		if sum.TLS == nil || sum.TLS.Total == 0 {
			t.Fatalf("no TLS connection: %+v", sum.TLS)
		}
		want := "127.0.0.1:" + strconv.Itoa(high)
		for _, c := range sum.TLS.Connections {
			if c.Broker != want {
				t.Errorf("TLS connection %s (%s) named with broker %s, client %s; --port says the broker is %s", c.Status, c.Version, c.Broker, c.Client, want)
			}
		}
		if len(got.Findings) != len(intact.Events) {
			t.Errorf("%d findings, want %d as before the port moved", len(got.Findings), len(intact.Events))
		}
	})
}

// movePort writes to dst the pcap src with the TCP port from changed to
// to, in both directions, checksums recomputed; other packets unchanged.
func movePort(t *testing.T, src, dst string, from, to uint16) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	r, err := pcapgo.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w := pcapgo.NewWriter(out)
	if err := w.WriteFileHeader(r.Snaplen(), r.LinkType()); err != nil {
		t.Fatal(err)
	}
	for {
		data, ci, err := r.ReadPacketData()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		pkt := gopacket.NewPacket(data, r.LinkType(), gopacket.Default)
		tcp, ok := pkt.Layer(layers.LayerTypeTCP).(*layers.TCP)
		ip, ok4 := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		if !ok || !ok4 {
			// The harness's UDP markers (kafkatest.StartCapture).
			if err := w.WritePacket(ci, data); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if tcp.SrcPort == layers.TCPPort(from) {
			tcp.SrcPort = layers.TCPPort(to)
		}
		if tcp.DstPort == layers.TCPPort(from) {
			tcp.DstPort = layers.TCPPort(to)
		}
		if err := tcp.SetNetworkLayerForChecksum(ip); err != nil {
			t.Fatal(err)
		}
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializePacket(buf, gopacket.SerializeOptions{ComputeChecksums: true}, pkt); err != nil {
			t.Fatal(err)
		}
		ci.CaptureLength, ci.Length = len(buf.Bytes()), len(buf.Bytes())
		if err := w.WritePacket(ci, buf.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
}

// tlsConnection is one of the TLS summary's connections.
type tlsConnection = struct {
	Client      string `json:"client"`
	Broker      string `json:"broker"`
	Version     string `json:"version"`
	CipherSuite string `json:"cipher_suite"`
	SNI         string `json:"sni"`
	Status      string `json:"status"`
	Resumed     bool   `json:"resumed"`
	Bytes       int64  `json:"decrypted_bytes"`
}

// summaryLine is the summary line of JSON output.
func summaryLine(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, `"type":"summary"`) {
			return line
		}
	}
	return ""
}

// cutCapture writes to dst the packets of the pcap src from the first one
// stamped after at, and returns how many it dropped and the clients
// ("ip:port") of the TCP connections whose SYN it kept.
func cutCapture(t *testing.T, src, dst string, at time.Time) (int, map[string]bool) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	r, err := pcapgo.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w := pcapgo.NewWriter(out)
	if err := w.WriteFileHeader(r.Snaplen(), r.LinkType()); err != nil {
		t.Fatal(err)
	}
	dropped, keeping := 0, false
	kept := map[string]bool{}
	for {
		data, ci, err := r.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !keeping && !ci.Timestamp.After(at) {
			dropped++
			continue
		}
		keeping = true
		pkt := gopacket.NewPacket(data, r.LinkType(), gopacket.NoCopy)
		if tcp, ok := pkt.Layer(layers.LayerTypeTCP).(*layers.TCP); ok && tcp.SYN && !tcp.ACK {
			if ip, ok := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ok {
				kept[netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip.SrcIP.To4())), uint16(tcp.SrcPort)).String()] = true
			}
		}
		if err := w.WritePacket(ci, data); err != nil {
			t.Fatal(err)
		}
	}
	if dropped == 0 || !keeping {
		t.Fatalf("harness: the cut at %s keeps every packet or none (%d dropped)", at, dropped)
	}
	return dropped, kept
}

// keepValues is l with only the records whose value is one of values (the
// batches all kept: the findings' appended offsets are checked against
// them).
func keepValues(l *kafkatest.Log, values []string) *kafkatest.Log {
	out := &kafkatest.Log{Topic: l.Topic, TopicID: l.TopicID}
	for _, p := range l.Partitions {
		q := p
		q.Records = nil
		for _, r := range p.Records {
			if slices.Contains(values, r.Value) {
				q.Records = append(q.Records, r)
			}
		}
		out.Partitions = append(out.Partitions, q)
	}
	return out
}
