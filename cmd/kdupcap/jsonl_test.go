package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"testing"
)

// cliFinding is the part of a "duplicate" JSON Lines object the tests read.
type cliFinding struct {
	Type            string       `json:"type"`
	ConnID          uint64       `json:"conn_id"`
	Client          string       `json:"client"`
	Broker          string       `json:"broker"`
	ClientID        *string      `json:"client_id"`
	Topic           string       `json:"topic"`
	TopicID         *string      `json:"topic_id"`
	Partition       int32        `json:"partition"`
	ProducerID      int64        `json:"producer_id"`
	ProducerEpoch   int16        `json:"producer_epoch"`
	BaseSequence    int32        `json:"base_sequence"`
	RecordCount     int32        `json:"record_count"`
	BatchCRC        string       `json:"batch_crc"`
	Idempotent      bool         `json:"idempotent"`
	Match           string       `json:"match"`
	Scope           string       `json:"scope"`
	Verdict         string       `json:"verdict"`
	AppendedOffsets []int64      `json:"appended_offsets"`
	Attempts        []cliAttempt `json:"attempts"`
}

type cliAttempt struct {
	Broker        string       `json:"broker"`
	CorrelationID int32        `json:"correlation_id"`
	Time          string       `json:"time"`
	Cause         *string      `json:"cause"`
	CauseError    string       `json:"cause_error"`
	GapMillis     float64      `json:"gap_ms"`
	Response      *cliResponse `json:"response"`
	NoResponse    string       `json:"no_response"`
}

type cliResponse struct {
	ErrorCode  int16   `json:"error_code"`
	Error      string  `json:"error"`
	BaseOffset int64   `json:"base_offset"`
	LatencyMs  float64 `json:"latency_ms"`
}

// cliSummary is the part of the "summary" object the tests read.
type cliSummary struct {
	Type             string           `json:"type"`
	Packets          int64            `json:"packets"`
	TCPConnections   int64            `json:"tcp_connections"`
	Gaps             int64            `json:"gaps"`
	ProduceRequests  int64            `json:"produce_requests"`
	ProduceResponses int64            `json:"produce_responses"`
	Batches          int64            `json:"batches"`
	Records          int64            `json:"records"`
	Findings         int64            `json:"findings"`
	ByVerdict        map[string]int64 `json:"by_verdict"`
	Errors           []string         `json:"errors"`
	KafkaConnections []struct {
		Client     string   `json:"client"`
		Broker     string   `json:"broker"`
		DetectedBy string   `json:"detected_by"`
		ClientIDs  []string `json:"client_ids"`
	} `json:"kafka_connections"`
}

// cliResult is one analyze run in JSON.
type cliResult struct {
	Code      int
	Findings  []cliFinding
	Producers []cliProducer
	Summary   cliSummary
	Stderr    string
}

// cliAnalyze runs `kdupcap analyze --format json ARGS...` and parses every
// line of its output; a line that is not JSON fails the test.
func cliAnalyze(t *testing.T, stdin io.Reader, args ...string) cliResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"analyze", "--format", "json"}, args...), stdin, &stdout, &stderr)
	res := cliResult{Code: code, Stderr: stderr.String()}
	var sawSummary bool
	res.Findings, res.Producers, res.Summary, sawSummary = parseJSONLines(t, &stdout)
	if !sawSummary {
		t.Fatalf("no summary line in output (exit %d, stderr %s)", code, res.Stderr)
	}
	return res
}

// parseJSONLines reads kdupcap's JSON Lines output: findings, then the
// producers, then one summary, last. Anything else fails the test.
func parseJSONLines(t *testing.T, r io.Reader) (findings []cliFinding, producers []cliProducer, sum cliSummary, sawSummary bool) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	sawProducer := false
	for sc.Scan() {
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(sc.Bytes(), &head); err != nil {
			t.Fatalf("output line is not JSON: %v: %s", err, sc.Text())
		}
		if sawSummary {
			t.Fatalf("line after the summary: %s", sc.Text())
		}
		switch head.Type {
		case "producer":
			// Producer lines come after the findings (producer_test.go).
			var p cliProducer
			if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
				t.Fatalf("producer: %v: %s", err, sc.Text())
			}
			producers = append(producers, p)
			sawProducer = true
		case "duplicate":
			if sawProducer {
				t.Fatalf("finding after a producer line: %s", sc.Text())
			}
			var f cliFinding
			if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
				t.Fatalf("finding: %v: %s", err, sc.Text())
			}
			findings = append(findings, f)
		case "record_resend", "record_duplicate":
			// Record-level findings: TestRecordLevel checks them against
			// the broker log with its own parser.
			if sawProducer {
				t.Fatalf("finding after a producer line: %s", sc.Text())
			}
		case "summary":
			if err := json.Unmarshal(sc.Bytes(), &sum); err != nil {
				t.Fatalf("summary: %v: %s", err, sc.Text())
			}
			sawSummary = true
		default:
			t.Fatalf("line of unknown type %q: %s", head.Type, sc.Text())
		}
	}
	return findings, producers, sum, sawSummary
}
