package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kdupcap/kdupcap/internal/kafkatest"
	"github.com/kdupcap/kdupcap/internal/testenv"
)

// appendFile is a key log writer that opens its file (append, create) at
// its first line, as a client's SSLKEYLOGFILE does: before the first
// handshake the file does not exist.
type appendFile struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

func (a *appendFile) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return 0, err
		}
		a.f = f
	}
	return a.f.Write(p)
}

func (a *appendFile) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return nil
	}
	return a.f.Close()
}

// TestTLSLive runs `kdupcap live -i lo --tls-keylog FILE` in a child
// process (this test binary, re-executed, as TestLiveStops does) before a
// kgo producer connects over TLS to kfake, whose produce responses are
// answered REQUEST_TIMED_OUT after the append: the client appends its key
// log to FILE as it connects (FILE not there yet when live starts, or
// empty), live follows it, and, stopped with SIGTERM once the producer is
// done, has printed the findings the log read back calls for, its TLS
// connections decrypted.
func TestTLSLive(t *testing.T) {
	if args := os.Getenv("KDUPCAP_TLS_LIVE_ARGS"); args != "" {
		os.Exit(run(strings.Fields(args), nil, os.Stdout, os.Stderr))
	}
	testenv.Root(t)
	for i, tt := range []struct {
		name       string
		empty      bool // FILE exists, empty, when live starts
		python     bool // kafka-python (OpenSSL writes FILE), not kgo
		maxVersion uint16
		suites     []uint16
		want       string
	}{
		{name: "TLS 1.3, key log created by the client", want: "TLS 1.3"},
		{name: "TLS 1.2, key log empty at start", empty: true, maxVersion: tls.VersionTLS12,
			suites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}, want: "TLS 1.2"},
		// Produce v7 names its topics: no Metadata needed to name them.
		{name: "kafka-python TLS 1.3, key log created by OpenSSL", python: true, want: "TLS 1.3"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.python {
				needKafkaPython(t)
			}
			topic := fmt.Sprintf("tls-live-%d", i)
			keyPath := filepath.Join(t.TempDir(), "keys.log")
			if tt.empty {
				if err := os.WriteFile(keyPath, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			keys := &appendFile{path: keyPath}
			defer keys.Close()
			tl, err := kafkatest.NewTLS(keys)
			if err != nil {
				t.Fatal(err)
			}
			tl.MaxVersion, tl.CipherSuites = tt.maxVersion, tt.suites
			broker, err := kafkatest.NewCluster([]kafkatest.Fault{{Action: kafkatest.TimedOutAfterAppend, Every: 3, Max: 2}},
				kfake.SeedTopics(2, topic))
			if err != nil {
				t.Fatal(err)
			}
			defer broker.Close()
			broker.SetTLS(tl.ServerConfig())

			cmd := exec.Command(os.Args[0], "-test.run=^TestTLSLive$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("KDUPCAP_TLS_LIVE_ARGS=live -i lo --port %d --tls-keylog %s --format json --metrics 127.0.0.1:0 --duration 60s",
				broker.Port(), keyPath))
			var stdout, stderr lockedBuffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			stopped := false
			defer func() {
				if !stopped {
					cmd.Process.Kill()
					<-exited
				}
			}()
			// "metrics on" is printed once the socket is open.
			if !waitFor(10*time.Second, func() bool { return strings.Contains(stderr.String(), "metrics on") }) {
				t.Fatalf("live did not start: %s", stderr.String())
			}
			if _, err := os.Stat(keyPath); tt.empty == (err != nil) {
				t.Fatalf("harness: the key log before the producer: %v", err)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			values := kafkatest.Values(fmt.Sprintf("tlslive%d", i), 9)
			produce := func(ctx context.Context, addr, topic string, values []string) error {
				return kafkatest.Produce(ctx, addr, topic, kafkatest.Producer{
					ClientID: "kgo-tls-live", ProduceTimeout: 300 * time.Millisecond, TimeoutOverhead: 2 * time.Second,
					Partitions: 2, PerRequest: 1, TLS: tl,
				}, values)
			}
			if tt.python {
				// See TestTLSKafkaPython for the two timeouts.
				produce = kafkatest.KafkaPythonProduce(kafkatest.KafkaPython{TLS: tl, KeyLogPath: keyPath,
					ClientID: "kafka-python-tls-live", Partitions: 2,
					RequestTimeout: 5 * time.Second, ProduceTimeout: 300 * time.Millisecond})
			}
			if err := produce(ctx, broker.Addr(), topic, values); err != nil {
				t.Fatalf("produce: %v", err)
			}
			events := broker.Events()
			// The findings are decided as the re-sends are answered: wait
			// for them (bounded), then stop live as an operator does.
			waitFor(5*time.Second, func() bool { return strings.Count(stdout.String(), `"type":"duplicate"`) >= len(events) })
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				stopped = true
				if err != nil {
					t.Fatalf("live exit: %v\nstderr: %s", err, stderr.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("live did not stop on SIGTERM: %s", stderr.String())
			}

			// The log, read back after live stopped.
			log, err := kafkatest.ReadBackTLS(ctx, broker.Addr(), topic, tl)
			if err != nil {
				t.Fatal(err)
			}
			res := &kafkatest.Result{Log: log, Events: events, Port: broker.Port(), Values: values}
			checkHarness(t, res, true, false)
			out := parseJSONLines(t, strings.NewReader(stdout.String()))
			if !out.SawSummary {
				t.Fatalf("no summary after SIGTERM: %s\nstderr: %s", stdout.String(), stderr.String())
			}
			t.Logf("%d faults applied, %d findings, log: %s", len(events), len(out.Findings), describeLog(log))
			t.Logf("summary: %s", summaryLine(stdout.String()))
			checkFindings(t, res, out.Findings, false)
			sum := tlsOf(t, stdout.String())
			checkAllDecrypted(t, sum)
			for _, c := range sum.TLS.Connections {
				if c.Version != tt.want || c.Broker != "127.0.0.1:"+strconv.Itoa(broker.Port()) {
					t.Errorf("TLS connection %+v: want %s to the broker", c, tt.want)
				}
			}
			if strings.Contains(stderr.String(), "--tls-keylog") {
				t.Errorf("live warned about its key log: %s", stderr.String())
			}
		})
	}
}
