package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/capture/live"
	"github.com/kdupcap/kdupcap/internal/kafkatest"
	"github.com/kdupcap/kdupcap/internal/testenv"
	"github.com/kdupcap/kdupcap/pipeline"
)

// TestSASLRealTraffic captures real producers authenticating with SASL
// (franz-go kgo with PLAIN, SCRAM-SHA-256 and PLAIN re-authenticating on
// its connection, librdkafka's kcat with PLAIN over SASL_PLAINTEXT)
// against kfake with produce responses answered REQUEST_TIMED_OUT after
// the append, and checks that kdupcap analyze names the user of every
// connection and producer, finds what the broker's log read back says,
// decodes nothing as malformed, and prints the password nowhere: not in
// the JSON or the tables on stdout, not on stderr, not in the --write-dups
// file.
func TestSASLRealTraffic(t *testing.T) {
	testenv.Capture(t)
	timedOut := []kafkatest.Fault{{Action: kafkatest.TimedOutAfterAppend, Every: 3, Max: 2}}
	kgo := func(idempotent bool) kafkatest.Producer {
		return kafkatest.Producer{
			Idempotent:      idempotent,
			ClientID:        "kgo-sasl",
			ProduceTimeout:  300 * time.Millisecond,
			TimeoutOverhead: 2 * time.Second,
		}
	}
	tests := []struct {
		name       string
		needs      string
		auth       kafkatest.SASL
		s          kafkatest.Scenario
		idempotent bool
	}{
		{
			name: "kgo PLAIN nonidempotent timed out",
			auth: kafkatest.SASL{Mechanism: "PLAIN", User: "svc-plain", Password: "pl41n-Pa55word-never-printed"},
			s:    kafkatest.Scenario{Records: 9, Partitions: 2, Faults: timedOut, Producer: kgo(false)},
		},
		{
			name:       "kgo SCRAM-SHA-256 idempotent timed out",
			auth:       kafkatest.SASL{Mechanism: "SCRAM-SHA-256", User: "svc-scram", Password: "scr4m-Pa55word-never-printed"},
			s:          kafkatest.Scenario{Records: 9, Partitions: 2, Faults: timedOut, Producer: kgo(true)},
			idempotent: true,
		},
		{
			name: "kgo SCRAM-SHA-256 nonidempotent timed out",
			auth: kafkatest.SASL{Mechanism: "SCRAM-SHA-256", User: "svc,scram=2", Password: "scr4m-Pa55word-2-never-printed"},
			s:    kafkatest.Scenario{Records: 9, Faults: timedOut, Producer: kgo(false)},
		},
		{
			name: "kgo PLAIN re-authenticating (KIP-368)",
			auth: kafkatest.SASL{Mechanism: "PLAIN", User: "svc-reauth", Password: "re4uth-Pa55word-never-printed", ReauthAfter: time.Second},
			s: kafkatest.Scenario{Records: 10, Faults: timedOut, Producer: func() kafkatest.Producer {
				p := kgo(false)
				p.Spacing = 300 * time.Millisecond
				return p
			}()},
		},
		{
			name:  "kcat PLAIN SASL_PLAINTEXT nonidempotent timed out",
			needs: "kcat",
			auth:  kafkatest.SASL{Mechanism: "PLAIN", User: "svc-kcat", Password: "kc4t-Pa55word-never-printed"},
			// librdkafka 2.0.2 authenticates only with SaslHandshake v0
			// offered, which kfake's v1-only handshake is not.
			s: kafkatest.Scenario{Records: 7, Faults: timedOut, LegacyVersions: true},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			needTool(t, tt.needs)
			s := tt.s
			auth := tt.auth
			s.SASL = &auth
			s.Name, s.Topic = fmt.Sprintf("sasl%d", i), fmt.Sprintf("sasl-%d", i)
			if tt.needs == "kcat" {
				s.Produce = kafkatest.KcatProduce(append(auth.KcatSettings(), "enable.idempotence=false",
					"request.timeout.ms=300", "message.timeout.ms=15000", "client.id=kcat-sasl")...)
			}
			res, pcap := runCaptured(t, s, 30*time.Second)
			raw, err := os.ReadFile(pcap)
			if err != nil {
				t.Fatal(err)
			}
			if auth.Mechanism == "PLAIN" && !bytes.Contains(raw, []byte(auth.Password)) {
				t.Fatalf("harness: the capture does not hold the PLAIN password: the test would prove nothing")
			}

			// JSON, with --write-dups.
			dups := filepath.Join(t.TempDir(), "dups.pcapng")
			var stdout, stderr bytes.Buffer
			if code := run([]string{"analyze", "--format", "json", "--write-dups", dups, pcap}, nil, &stdout, &stderr); code != exitOK {
				t.Fatalf("kdupcap analyze exited %d: %s", code, stderr.String())
			}
			jsonOut := stdout.String()
			out := parseJSONLines(t, strings.NewReader(jsonOut))
			t.Logf("%d faults applied, %d findings, log of %s: %s", len(res.Events), len(out.Findings), s.Topic, describeLog(res.Log))
			checkHarness(t, res, true, tt.idempotent)
			checkFindings(t, res, out.Findings, tt.idempotent)
			checkSASLJSON(t, jsonOut, auth)
			if len(out.Findings) > 0 {
				// The evidence, SASL packets left out, gives the same
				// findings.
				checkRoundTrip(t, 0, pcap, rawLines(out.Findings))
			}

			// The tables.
			var table, tableErr bytes.Buffer
			if code := run([]string{"analyze", pcap}, nil, &table, &tableErr); code != exitOK {
				t.Fatalf("kdupcap analyze (table) exited %d: %s", code, tableErr.String())
			}
			for _, want := range []string{"SASL USER", auth.User + " (" + auth.Mechanism + ")", "   sasl user " + auth.User + "\n"} {
				if !strings.Contains(table.String(), want) {
					t.Errorf("the tables do not show %q:\n%s", want, table.String())
				}
			}

			dupBytes, err := os.ReadFile(dups)
			if err != nil && len(out.Findings) > 0 {
				t.Fatalf("--write-dups: %v", err)
			}
			evidence := liveEvidence(t, pcap, res.Port)
			if len(out.Findings) > 0 && evidence == "" {
				t.Errorf("live --evidence wrote no file for %d findings", len(out.Findings))
			}
			for what, b := range map[string]string{
				"JSON stdout": jsonOut, "JSON stderr": stderr.String(),
				"table stdout": table.String(), "table stderr": tableErr.String(),
				"--write-dups file": string(dupBytes), "live --evidence files": evidence,
			} {
				if strings.Contains(b, auth.Password) {
					t.Errorf("the password is in the %s", what)
				}
			}
		})
	}
}

// saslSummary is what the SASL test reads of the summary line.
type saslSummary struct {
	Type             string `json:"type"`
	Malformed        int64  `json:"malformed"`
	Resyncs          int64  `json:"resyncs"`
	KafkaConnections []struct {
		ID              uint64 `json:"id"`
		ProduceRequests int64  `json:"produce_requests"`
		SASLMechanism   string `json:"sasl_mechanism"`
		SASLUser        string `json:"sasl_user"`
		SASLFailed      bool   `json:"sasl_failed"`
	} `json:"kafka_connections"`
	Errors []string `json:"errors"`
}

// saslProducer is what the SASL test reads of a producer line.
type saslProducer struct {
	Type      string   `json:"type"`
	ClientID  *string  `json:"client_id"`
	SASLUsers []string `json:"sasl_users"`
}

// checkSASLJSON checks the summary's connections and the producer lines of
// a capture where every connection authenticated as auth.
func checkSASLJSON(t *testing.T, out string, auth kafkatest.SASL) {
	t.Helper()
	var sum saslSummary
	var producers []saslProducer
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var typ struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(sc.Bytes(), &typ); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		switch typ.Type {
		case "summary":
			if err := json.Unmarshal(sc.Bytes(), &sum); err != nil {
				t.Fatal(err)
			}
		case "producer":
			var p saslProducer
			if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
				t.Fatal(err)
			}
			producers = append(producers, p)
		}
	}
	if sum.Malformed != 0 || sum.Resyncs != 0 || len(sum.Errors) != 0 {
		t.Errorf("malformed %d, resyncs %d, errors %q: SASL frames taken as junk", sum.Malformed, sum.Resyncs, sum.Errors)
	}
	if len(sum.KafkaConnections) == 0 {
		t.Fatal("no Kafka connection")
	}
	produced := false
	for _, c := range sum.KafkaConnections {
		if c.SASLMechanism != auth.Mechanism || c.SASLUser != auth.User || c.SASLFailed {
			t.Errorf("connection %d: mechanism %q user %q failed %v, want %q %q", c.ID, c.SASLMechanism, c.SASLUser, c.SASLFailed, auth.Mechanism, auth.User)
		}
		produced = produced || c.ProduceRequests > 0
	}
	if !produced {
		t.Error("no connection carried produce requests")
	}
	if len(producers) == 0 {
		t.Fatal("no producer line")
	}
	for _, p := range producers {
		if !slices.Equal(p.SASLUsers, []string{auth.User}) {
			t.Errorf("producer %v: sasl_users %q, want [%q]", p.ClientID, p.SASLUsers, auth.User)
		}
	}
}

// liveEvidence runs the capture through a live run with --evidence, the
// packets read from the file as a ring would hand them over, and returns
// the evidence files' bytes, concatenated.
func liveEvidence(t *testing.T, pcap string, port int) string {
	t.Helper()
	src, err := capture.Open(pcap)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dir := t.TempDir()
	l, err := pipeline.NewLive(pipeline.LiveOptions{Options: pipeline.Options{Ports: []uint16{uint16(port)}},
		Name: "test", EvidenceDir: dir, Warnings: io.Discard}, fileSource{src})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Run(context.Background()); err != io.EOF {
		t.Fatalf("live run over %s: %v", pcap, err)
	}
	l.Finish()
	files, _ := filepath.Glob(filepath.Join(dir, "*.pcap"))
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return string(all)
}

// fileSource is a capture file as a live source.
type fileSource struct{ src *capture.Source }

func (f fileSource) Next() (capture.Packet, error) { return f.src.Next() }
func (f fileSource) Stats() live.Stats             { return live.Stats{} }
