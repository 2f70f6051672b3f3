package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
)

// cliFinding is the part of a finding's JSON Lines object the tests read: a
// batch finding ("duplicate") or a record-level one ("record_resend",
// "record_duplicate", whose keys are a batch finding's plus batch_relation,
// records_omitted, attempts[].batch and records[].copies). Keys a line does
// not carry stay zero.
type cliFinding struct {
	Type            string          `json:"type"`
	ConnID          uint64          `json:"conn_id"`
	Client          string          `json:"client"`
	Broker          string          `json:"broker"`
	ClientID        *string         `json:"client_id"`
	Topic           string          `json:"topic"`
	TopicID         *string         `json:"topic_id"`
	Partition       int32           `json:"partition"`
	ProducerID      int64           `json:"producer_id"`
	ProducerEpoch   int16           `json:"producer_epoch"`
	BaseSequence    int32           `json:"base_sequence"`
	RecordCount     int32           `json:"record_count"`
	BatchCRC        string          `json:"batch_crc"`
	Idempotent      bool            `json:"idempotent"`
	Match           string          `json:"match"`
	Scope           string          `json:"scope"`
	BatchRelation   string          `json:"batch_relation"`
	Verdict         string          `json:"verdict"`
	Reason          string          `json:"reason"`
	AppendedOffsets []int64         `json:"appended_offsets"`
	Evidence        string          `json:"evidence"`
	FetchedOffsets  []int64         `json:"fetched_offsets"`
	Transaction     *cliTransaction `json:"transaction"`
	Attempts        []cliAttempt    `json:"attempts"`
	Records         []cliRecord     `json:"records"`
	RecordsOmitted  int             `json:"records_omitted"`
	ProducerChange  string          `json:"producer_change"`
	// Raw is the line as printed, without its newline, for the tests that
	// compare output byte for byte.
	Raw string `json:"-"`
}

type cliAttempt struct {
	ConnID        uint64       `json:"conn_id"`
	Client        string       `json:"client"`
	Broker        string       `json:"broker"`
	CorrelationID int32        `json:"correlation_id"`
	Time          string       `json:"time"`
	Cause         *string      `json:"cause"`
	CauseError    string       `json:"cause_error"`
	GapMillis     float64      `json:"gap_ms"`
	Response      *cliResponse `json:"response"`
	NoResponse    string       `json:"no_response"`
	// ConnEnd is how the attempt's connection ended, when captured.
	ConnEnd *struct {
		By   string `json:"by"`
		How  string `json:"how"`
		Time string `json:"time"`
	} `json:"conn_end"`
	// Batch is the batch the attempt carried (record-level findings only).
	Batch *struct {
		CRC           string `json:"crc"`
		RecordCount   int    `json:"record_count"`
		ProducerID    *int64 `json:"producer_id"`
		ProducerEpoch *int16 `json:"producer_epoch"`
	} `json:"batch"`
}

type cliResponse struct {
	ErrorCode  int16   `json:"error_code"`
	Error      string  `json:"error"`
	BaseOffset int64   `json:"base_offset"`
	LatencyMs  float64 `json:"latency_ms"`
}

// cliTransaction is a finding's transaction (a transactional producer's).
type cliTransaction struct {
	TransactionalID string  `json:"transactional_id"`
	ProducerID      int64   `json:"producer_id"`
	Epoch           int16   `json:"epoch"`
	Outcome         string  `json:"outcome"`
	Epochs          []int16 `json:"epochs"`
}

// cliRecord is one of a finding's records: decoded by --records N, or a
// record-level finding's (with its copies).
type cliRecord struct {
	Key         *string `json:"key"`
	KeyBase64   string  `json:"key_base64"`
	KeyLen      int     `json:"key_len"`
	Value       *string `json:"value"`
	ValueBase64 string  `json:"value_base64"`
	ValueLen    int     `json:"value_len"`
	Headers     []struct {
		Key         string  `json:"key"`
		Value       *string `json:"value"`
		ValueBase64 string  `json:"value_base64"`
	} `json:"headers"`
	Copies []struct {
		Attempt     int    `json:"attempt"`
		OffsetDelta int32  `json:"offset_delta"`
		Offset      *int64 `json:"offset"`
	} `json:"copies"`
}

// cliProducer is a "producer" JSON Lines object.
type cliProducer struct {
	Type             string           `json:"type"`
	Client           string           `json:"client"`
	ClientID         *string          `json:"client_id"`
	ProducerID       int64            `json:"producer_id"`
	Idempotent       bool             `json:"idempotent"`
	TransactionalIDs []string         `json:"transactional_ids"`
	SoftwareName     string           `json:"software_name"`
	SoftwareVersion  string           `json:"software_version"`
	SoftwareGuess    string           `json:"software_guess"`
	InferredFrom     string           `json:"software_inferred_from"`
	Acks             []int16          `json:"acks"`
	TimeoutsMillis   []int32          `json:"timeout_ms"`
	MaxInFlight      int              `json:"max_in_flight"`
	Codecs           []string         `json:"codecs"`
	Requests         int64            `json:"requests"`
	Sends            int64            `json:"sends"`
	Batches          int64            `json:"batches"`
	RecordsMean      float64          `json:"records_per_batch_mean"`
	RecordsMax       int32            `json:"records_per_batch_max"`
	Resent           int64            `json:"resent"`
	Resends          int64            `json:"resends"`
	ByVerdict        map[string]int64 `json:"by_verdict"`
	Diagnosis        string           `json:"diagnosis"`
	Latency          []struct {
		Broker    string  `json:"broker"`
		Answered  int64   `json:"answered"`
		P50Millis float64 `json:"p50_ms"`
		P99Millis float64 `json:"p99_ms"`
		MaxMillis float64 `json:"max_ms"`
		Succeeded int64   `json:"succeeded"`
	} `json:"latency"`
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
	FetchResponses   int64            `json:"fetch_responses"`
	FetchedBatches   int64            `json:"fetched_batches"`
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

// cliOutput is kdupcap's JSON Lines output, its lines sorted by type.
type cliOutput struct {
	Findings       []cliFinding // batch findings: "duplicate"
	RecordFindings []cliFinding // record-level: "record_resend", "record_duplicate"
	Producers      []cliProducer
	Summary        cliSummary
	SawSummary     bool
}

// cliResult is one analyze run in JSON.
type cliResult struct {
	cliOutput
	Code   int
	Stdout string // as written, for the fields cliOutput does not read
	Stderr string
}

// cliAnalyze runs `kdupcap analyze --format json ARGS...` and parses every
// line of its output with parseJSONLines; the output must end with a
// summary, whatever the exit code.
func cliAnalyze(t *testing.T, stdin io.Reader, args ...string) cliResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"analyze", "--format", "json"}, args...), stdin, &stdout, &stderr)
	res := cliResult{Code: code, Stdout: stdout.String(), Stderr: stderr.String()}
	res.cliOutput = parseJSONLines(t, &stdout)
	if !res.SawSummary {
		t.Fatalf("no summary line in output (exit %d, stderr %s)", code, res.Stderr)
	}
	return res
}

// cliAnalyzeOK is cliAnalyze of ARGS without stdin, which must exit 0.
func cliAnalyzeOK(t *testing.T, args ...string) cliResult {
	t.Helper()
	res := cliAnalyze(t, nil, args...)
	if res.Code != exitOK {
		t.Fatalf("kdupcap analyze %v exited %d: %s", args, res.Code, res.Stderr)
	}
	return res
}

// rawLines are the findings' lines as printed.
func rawLines(fs []cliFinding) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Raw
	}
	return out
}

// parseJSONLines reads kdupcap's JSON Lines output with readJSONLines; an
// error fails the test.
func parseJSONLines(t *testing.T, r io.Reader) cliOutput {
	t.Helper()
	out, err := readJSONLines(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// readJSONLines reads kdupcap's JSON Lines output: findings of any type,
// then the producers, then one summary, last. A line that is not JSON, of
// an unknown type or out of that order is an error; SawSummary says whether
// the summary came (a stopped live run may lack it).
func readJSONLines(r io.Reader) (cliOutput, error) {
	var out cliOutput
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	sawProducer := false
	for sc.Scan() {
		line := sc.Bytes()
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			return out, fmt.Errorf("output line is not JSON: %w: %s", err, line)
		}
		if out.SawSummary {
			return out, fmt.Errorf("line after the summary: %s", line)
		}
		var err error
		switch head.Type {
		case "duplicate", "record_resend", "record_duplicate":
			if sawProducer {
				return out, fmt.Errorf("finding after a producer line: %s", line)
			}
			f := cliFinding{Raw: string(line)}
			err = json.Unmarshal(line, &f)
			if head.Type == "duplicate" {
				out.Findings = append(out.Findings, f)
			} else {
				out.RecordFindings = append(out.RecordFindings, f)
			}
		case "producer":
			var p cliProducer
			err = json.Unmarshal(line, &p)
			out.Producers = append(out.Producers, p)
			sawProducer = true
		case "summary":
			err = json.Unmarshal(line, &out.Summary)
			out.SawSummary = true
		default:
			return out, fmt.Errorf("line of unknown type %q: %s", head.Type, line)
		}
		if err != nil {
			return out, fmt.Errorf("%s line: %w: %s", head.Type, err, line)
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("reading the output: %w", err)
	}
	return out, nil
}

// TestReadJSONLines: the parser the CLI tests share keeps each line as
// printed and refuses output out of kdupcap's order.
func TestReadJSONLines(t *testing.T) {
	const (
		dup  = `{"type":"duplicate","topic":"t","attempts":[{"conn_id":2,"client":"c","broker":"b","correlation_id":7}]}`
		rec  = `{"type":"record_resend","batch_relation":"rebuilt","record_count":1,"attempts":[{"batch":{"crc":"0x01","record_count":3}}],"records":[{"value":"v","copies":[{"attempt":1,"offset_delta":0,"offset":4}]}]}`
		prod = `{"type":"producer","client":"c"}`
		sum  = `{"type":"summary","findings":2}`
	)
	out, err := readJSONLines(strings.NewReader(rec + "\n" + dup + "\n" + prod + "\n" + sum + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Findings) != 1 || out.Findings[0].Raw != dup || len(out.RecordFindings) != 1 || out.RecordFindings[0].Raw != rec ||
		len(out.Producers) != 1 || !out.SawSummary || out.Summary.Findings != 2 {
		t.Fatalf("%+v", out)
	}
	if a := out.Findings[0].Attempts[0]; a.ConnID != 2 || a.Client != "c" || a.Broker != "b" || a.CorrelationID != 7 {
		t.Errorf("attempt %+v", a)
	}
	r := out.RecordFindings[0]
	if r.BatchRelation != "rebuilt" || r.Attempts[0].Batch == nil || r.Attempts[0].Batch.RecordCount != 3 ||
		len(r.Records) != 1 || *r.Records[0].Value != "v" || *r.Records[0].Copies[0].Offset != 4 {
		t.Errorf("record finding %+v", r)
	}
	// A live run stopped before its summary.
	if out, err := readJSONLines(strings.NewReader(dup + "\n")); err != nil || out.SawSummary || len(out.Findings) != 1 {
		t.Errorf("no summary: %+v, %v", out, err)
	}

	bad := []struct {
		name, in, err string
	}{
		{"finding after a producer", dup + "\n" + prod + "\n" + rec + "\n" + sum + "\n", "finding after a producer"},
		{"line after the summary", dup + "\n" + sum + "\n" + dup + "\n", "after the summary"},
		{"two summaries", sum + "\n" + sum + "\n", "after the summary"},
		{"unknown type", dup + "\n" + `{"type":"other"}` + "\n" + sum + "\n", "unknown type"},
		{"not JSON", dup + "\nduplicate\n" + sum + "\n", "not JSON"},
		{"wrong key type", `{"type":"duplicate","partition":"0"}` + "\n", "duplicate line"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := readJSONLines(strings.NewReader(tt.in)); err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("error %v, want one saying %q", err, tt.err)
			}
		})
	}
}
