package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"

	"github.com/kdupcap/kdupcap/detect"
)

// NewJSON returns a Writer of JSON Lines: one object per finding
// ("type":"duplicate"), then one summary object ("type":"summary"). The
// schema is in the README; it is a public contract.
func NewJSON(w io.Writer) Writer { return NewJSONWith(w, Options{}) }

// NewJSONWith is NewJSON printing the findings of o.Verdicts only (all
// when empty); the summary counts every finding.
func NewJSONWith(w io.Writer, o Options) Writer {
	return &jsonWriter{w: w, enc: NewLineEncoder(), opts: o}
}

type jsonWriter struct {
	w    io.Writer
	enc  *LineEncoder
	opts Options
}

// LineEncoder marshals the JSON Lines objects of NewJSON one at a time, so
// that a sink publishing them elsewhere (package emit) gives the same
// bytes. The summary's counts of records (duplicated_records,
// extra_copies, possibly_duplicated_records, and per topic) are those of
// the findings encoded before it. It is not safe for concurrent use.
type LineEncoder struct {
	buf    bytes.Buffer
	enc    *json.Encoder
	counts tally
}

// NewLineEncoder returns an encoder of NewJSON's objects.
func NewLineEncoder() *LineEncoder {
	e := &LineEncoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}

// line returns v's JSON line, ending in a newline; it is valid until the
// next call.
func (e *LineEncoder) line(v any) ([]byte, error) {
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	return e.buf.Bytes(), nil
}

// Finding returns f's line, ending in a newline; it is valid until the
// next call.
func (e *LineEncoder) Finding(f *detect.Finding) ([]byte, error) {
	e.counts.add(f)
	return e.line(toJSONFinding(f))
}

// Summary returns s's line, ending in a newline; it is valid until the next
// call.
func (e *LineEncoder) Summary(s *Summary) ([]byte, error) { return e.line(toJSONSummary(s, &e.counts)) }

// jsonFinding is one finding line.
type jsonFinding struct {
	Type      string  `json:"type"`
	ConnID    uint64  `json:"conn_id"`
	Client    string  `json:"client"`
	Broker    string  `json:"broker"`
	ClientID  *string `json:"client_id"`
	Topic     string  `json:"topic"`
	TopicID   *string `json:"topic_id"`
	Partition int32   `json:"partition"`
	// Cluster: the cluster's name or ID (Finding.Cluster), when known.
	Cluster         string        `json:"cluster,omitempty"`
	ProducerID      int64         `json:"producer_id"`
	ProducerEpoch   int16         `json:"producer_epoch"`
	BaseSequence    int32         `json:"base_sequence"`
	RecordCount     int32         `json:"record_count"`
	BatchCRC        string        `json:"batch_crc"`
	Magic           int8          `json:"magic"`
	Idempotent      bool          `json:"idempotent"`
	Match           string        `json:"match"`
	Scope           string        `json:"scope"`
	Verdict         string        `json:"verdict"`
	Reason          string        `json:"reason"`
	AppendedOffsets []int64       `json:"appended_offsets"`
	Attempts        []jsonAttempt `json:"attempts"`
	AttemptsOmitted int           `json:"attempts_omitted,omitempty"`
	Revision        int           `json:"revision,omitempty"`
	// Records: only with --records, when decode read the batch's records;
	// in a record-level finding, always: the records sent again.
	Records []jsonRecord `json:"records,omitempty"`
	// Record-level findings only.
	BatchRelation  string `json:"batch_relation,omitempty"`
	RecordsOmitted int    `json:"records_omitted,omitempty"`
	// ProducerChange: "epoch" or "producer_id" when an idempotent
	// producer sent the records again under another one.
	ProducerChange string `json:"producer_change,omitempty"`

	// Evidence (Finding.Proof), FetchedOffsets, Transaction: see proof.go.
	Evidence       string           `json:"evidence"`
	FetchedOffsets []int64          `json:"fetched_offsets,omitempty"`
	Transaction    *jsonTransaction `json:"transaction,omitempty"`

	// ID: the finding's stable ID (Finding.StableID), from a fleet
	// correlation.
	ID string `json:"id,omitempty"`
}

type jsonAttempt struct {
	ConnID        uint64        `json:"conn_id"`
	Client        string        `json:"client"`
	Broker        string        `json:"broker"`
	CorrelationID int32         `json:"correlation_id"`
	Time          string        `json:"time"`
	APIVersion    int16         `json:"api_version"`
	Acks          int16         `json:"acks"`
	TimeoutMillis int32         `json:"timeout_ms"`
	Cause         *string       `json:"cause"`
	CauseError    string        `json:"cause_error,omitempty"`
	GapMillis     *float64      `json:"gap_ms,omitempty"`
	Response      *jsonResponse `json:"response"`
	NoResponse    string        `json:"no_response,omitempty"`
	// End: how the attempt's connection ended, when the capture showed it.
	End *jsonConnEnd `json:"conn_end,omitempty"`
	// Batch: in a record-level finding, the batch this attempt carried.
	Batch *jsonAttemptBatch `json:"batch,omitempty"`
	// Host: the capture host that saw the attempt (fleet correlation).
	Host string `json:"host,omitempty"`
}

// jsonConnEnd is decode.ConnEnd: by "client", "broker" or "" (no FIN or
// RST captured), how "fin", "rst", "end_of_capture", "idle" or "evicted".
type jsonConnEnd struct {
	By   string `json:"by,omitempty"`
	How  string `json:"how"`
	Time string `json:"time"`
}

type jsonAttemptBatch struct {
	CRC         string `json:"crc"`
	RecordCount int32  `json:"record_count"`
	// ProducerID, ProducerEpoch and BaseSequence are the batch's, when its
	// producer is idempotent (a re-send across an epoch bump shows here).
	ProducerID    *int64 `json:"producer_id,omitempty"`
	ProducerEpoch *int16 `json:"producer_epoch,omitempty"`
	BaseSequence  *int32 `json:"base_sequence,omitempty"`
}

type jsonResponse struct {
	ErrorCode     int16   `json:"error_code"`
	Error         string  `json:"error"`
	BaseOffset    int64   `json:"base_offset"`
	LogAppendTime int64   `json:"log_append_time"`
	LatencyMillis float64 `json:"latency_ms"`
}

// jsonSummary is the last line.
type jsonSummary struct {
	Type           string   `json:"type"`
	Files          []string `json:"files"`
	Packets        int64    `json:"packets"`
	Bytes          int64    `json:"bytes"`
	Drops          int64    `json:"drops,omitempty"`
	TCPConnections int64    `json:"tcp_connections"`
	Gaps           int64    `json:"gaps"`
	GapBytes       int64    `json:"gap_bytes"`
	// SnapLen, SnapCut, SnapCutBytes: packets cut by the snap length.
	SnapLen          int64            `json:"snap_len,omitempty"`
	SnapCut          int64            `json:"snap_cut_packets,omitempty"`
	SnapCutBytes     int64            `json:"snap_cut_bytes,omitempty"`
	KafkaConnections []jsonConnection `json:"kafka_connections"`
	// KafkaConnectionsOmitted: taken as Kafka, not listed (live runs).
	KafkaConnectionsOmitted int64 `json:"kafka_connections_omitted,omitempty"`
	Frames                  int64 `json:"frames"`
	ProduceRequests         int64 `json:"produce_requests"`
	ProduceResponses        int64 `json:"produce_responses"`
	Batches                 int64 `json:"batches"`
	Records                 int64 `json:"records"`
	FetchResponses          int64 `json:"fetch_responses,omitempty"`
	FetchedBatches          int64 `json:"fetched_batches,omitempty"`
	Malformed               int64 `json:"malformed"`
	Resyncs                 int64 `json:"resyncs"`
	Findings                int64 `json:"findings"`
	RecordFindings          int64 `json:"record_findings,omitempty"`
	// EchoedRequests, EchoLegs: requests seen on two connections (a
	// proxy, NAT, a capture given twice), counted once.
	EchoedRequests int64         `json:"echoed_requests,omitempty"`
	EchoLegs       []jsonEchoLeg `json:"echo_legs,omitempty"`
	EvictedBatches int64         `json:"evicted_batches,omitempty"`
	// ProducerExchangesOmitted: exchanges of producers past the bound on
	// profiles, in no "producer" line.
	ProducerExchangesOmitted int64         `json:"producer_exchanges_omitted,omitempty"`
	EvictedAgeMillis         float64       `json:"evicted_age_ms,omitempty"`
	ByVerdict                jsonByVerdict `json:"by_verdict"`
	// DuplicatedRecords, ExtraCopies: the records the findings show the
	// log holds more than once, and their copies beyond the first;
	// PossiblyDuplicatedRecords: the records of the unconfirmed findings
	// that may be (Harmful).
	DuplicatedRecords         int64        `json:"duplicated_records"`
	ExtraCopies               int64        `json:"extra_copies"`
	PossiblyDuplicatedRecords int64        `json:"possibly_duplicated_records"`
	Topics                    []jsonTopic  `json:"topics"`
	Dropped                   *jsonDropped `json:"dropped,omitempty"`
	TLS                       *jsonTLS     `json:"tls,omitempty"`
	Errors                    []string     `json:"errors"`
	Interrupted               string       `json:"interrupted,omitempty"`
	InputLimit                int64        `json:"input_limit_bytes,omitempty"`

	// InputFailed, FailedInputs: an input error ended reading early;
	// NothingToJudge: no produce request was seen (summary.go).
	InputFailed    bool              `json:"input_failed,omitempty"`
	FailedInputs   []jsonFailedInput `json:"failed_inputs,omitempty"`
	NothingToJudge *jsonNothing      `json:"nothing_to_judge,omitempty"`

	// Fleet, Attempts: a correlation's hosts, a capture's published
	// attempts (fleet.go).
	Fleet    *jsonFleet    `json:"fleet,omitempty"`
	Attempts *jsonAttempts `json:"attempts_published,omitempty"`
}

type jsonConnection struct {
	ID              uint64   `json:"id"`
	Client          string   `json:"client"`
	Broker          string   `json:"broker"`
	DetectedBy      string   `json:"detected_by"`
	ClientIDs       []string `json:"client_ids"`
	ProduceRequests int64    `json:"produce_requests"`
	SASLMechanism   string   `json:"sasl_mechanism,omitempty"`
	SASLUser        string   `json:"sasl_user,omitempty"`
	SASLFailed      bool     `json:"sasl_failed,omitempty"`
}

type jsonByVerdict struct {
	Duplicated   int64 `json:"duplicated"`
	Deduplicated int64 `json:"deduplicated"`
	Single       int64 `json:"single"`
	Unconfirmed  int64 `json:"unconfirmed"`
	Rejected     int64 `json:"rejected"`
}

type jsonTopic struct {
	Topic      string `json:"topic"`
	Batches    int64  `json:"batches"`
	Records    int64  `json:"records"`
	Findings   int64  `json:"findings"`
	Duplicated int64  `json:"duplicated"`
	// DuplicatedRecords, ExtraCopies: as the summary's, of this topic.
	DuplicatedRecords int64 `json:"duplicated_records"`
	ExtraCopies       int64 `json:"extra_copies"`
}

func (w *jsonWriter) Finding(f detect.Finding) error {
	if !w.opts.shows(&f) {
		w.enc.counts.add(&f)
		return nil
	}
	line, err := w.enc.Finding(&f)
	if err == nil {
		_, err = w.w.Write(line)
	}
	if err != nil {
		return fmt.Errorf("report: writing finding: %w", err)
	}
	return nil
}

func (w *jsonWriter) Summary(s Summary) error {
	line, err := w.enc.Summary(&s)
	if err == nil {
		_, err = w.w.Write(line)
	}
	if err != nil {
		return fmt.Errorf("report: writing summary: %w", err)
	}
	return nil
}

func toJSONFinding(f *detect.Finding) jsonFinding {
	j := jsonFinding{
		Type:            string(KindOf(f)),
		Revision:        f.Revision,
		ID:              f.StableID,
		AttemptsOmitted: f.AttemptsOmitted,
		ConnID:          f.ConnID,
		Client:          f.Client.String(),
		Broker:          f.Broker.String(),
		ClientID:        f.ClientID,
		Topic:           TopicName(f),
		Partition:       f.Partition,
		Cluster:         f.Cluster,
		ProducerID:      f.ProducerID,
		ProducerEpoch:   f.ProducerEpoch,
		BaseSequence:    f.FirstSequence,
		RecordCount:     f.NumRecords,
		BatchCRC:        formatCRC(f.BatchCRC),
		Magic:           f.Magic,
		Idempotent:      f.Idempotent,
		Match:           string(f.Match),
		Scope:           string(scopeOf(f)),
		Verdict:         string(f.Verdict),
		Reason:          f.Reason,
		AppendedOffsets: append([]int64{}, f.AppendedOffsets...),
		Attempts:        make([]jsonAttempt, len(f.Attempts)),
		Records:         toJSONRecords(f.Records, KindOf(f) != detect.KindBatch),
		BatchRelation:   string(f.BatchRelation),
		RecordsOmitted:  f.RecordsOmitted,
		ProducerChange:  string(f.ProducerChange),
	}
	if f.TopicID != ([16]byte{}) {
		id := detect.TopicIDString(f.TopicID)
		j.TopicID = &id
	}
	addProof(&j, f)
	for i := range f.Attempts {
		a := &f.Attempts[i]
		ja := &j.Attempts[i]
		conn, client, broker := attemptConn(f, a)
		*ja = jsonAttempt{
			ConnID:        conn,
			Client:        client.String(),
			Broker:        broker.String(),
			CorrelationID: a.CorrelationID,
			Host:          a.Host,
			Time:          formatTime(a.Time),
			APIVersion:    a.Version,
			Acks:          a.Acks,
			TimeoutMillis: a.TimeoutMillis,
		}
		if a.Batch != nil {
			ja.Batch = &jsonAttemptBatch{CRC: formatCRC(a.Batch.CRC), RecordCount: a.Batch.NumRecords}
			if a.Batch.ProducerID >= 0 {
				pid, epoch, seq := a.Batch.ProducerID, a.Batch.ProducerEpoch, a.Batch.BaseSequence
				ja.Batch.ProducerID, ja.Batch.ProducerEpoch, ja.Batch.BaseSequence = &pid, &epoch, &seq
			}
		}
		if e := a.End; e != nil {
			ja.End = &jsonConnEnd{By: string(e.By), How: string(e.How), Time: formatTime(e.Time)}
		}
		if i > 0 {
			gap := a.GapMillis
			ja.GapMillis = &gap
		}
		if a.Cause != "" {
			c := string(a.Cause)
			ja.Cause = &c
			ja.CauseError = a.CauseError
		}
		if r := a.Response; r != nil {
			ja.Response = &jsonResponse{
				ErrorCode:     r.ErrorCode,
				Error:         r.Error,
				BaseOffset:    r.BaseOffset,
				LogAppendTime: r.LogAppendTime,
				LatencyMillis: r.LatencyMillis,
			}
		} else {
			ja.NoResponse = string(a.NoResponse)
			if ja.NoResponse == "" {
				ja.NoResponse = string(detect.NoResponseNotCaptured)
			}
		}
	}
	return j
}

// scopeOf is f's scope; a Finding built by hand without one is taken as on
// one connection.
func scopeOf(f *detect.Finding) detect.Scope {
	if f.Scope == "" {
		return detect.ScopeConnection
	}
	return f.Scope
}

// attemptConn is the connection a was sent on; an Attempt built by hand
// without one is taken as on the finding's.
func attemptConn(f *detect.Finding, a *detect.Attempt) (uint64, netip.AddrPort, netip.AddrPort) {
	if a.ConnID == 0 && !a.Client.IsValid() {
		return f.ConnID, f.Client, f.Broker
	}
	return a.ConnID, a.Client, a.Broker
}

func toJSONSummary(s *Summary, c *tally) jsonSummary {
	j := jsonSummary{
		Type:                     "summary",
		Files:                    append([]string{}, s.Files...),
		Packets:                  s.Packets,
		Bytes:                    s.Bytes,
		Drops:                    s.Drops,
		TCPConnections:           s.TCPConnections,
		Gaps:                     s.Gaps,
		GapBytes:                 s.GapBytes,
		SnapLen:                  s.SnapLen,
		SnapCut:                  s.SnapCut,
		SnapCutBytes:             s.SnapCutBytes,
		KafkaConnections:         make([]jsonConnection, len(s.KafkaConnections)),
		KafkaConnectionsOmitted:  s.KafkaConnectionsOmitted,
		Frames:                   s.Frames,
		ProduceRequests:          s.ProduceRequests,
		ProduceResponses:         s.ProduceResponses,
		Batches:                  s.Batches,
		Records:                  s.Records,
		FetchResponses:           s.FetchResponses,
		FetchedBatches:           s.FetchedBatches,
		Malformed:                s.Malformed,
		Resyncs:                  s.Resyncs,
		Findings:                 s.Findings,
		RecordFindings:           s.RecordFindings,
		EchoedRequests:           s.EchoedRequests,
		EchoLegs:                 toJSONEchoLegs(s.EchoLegs),
		EvictedBatches:           s.EvictedBatches,
		ProducerExchangesOmitted: s.ProducerExchangesOmitted,
		EvictedAgeMillis:         float64(s.EvictedAge.Microseconds()) / 1000,
		ByVerdict: jsonByVerdict{
			Duplicated:   s.ByVerdict[string(detect.Duplicated)],
			Deduplicated: s.ByVerdict[string(detect.Deduplicated)],
			Single:       s.ByVerdict[string(detect.Single)],
			Unconfirmed:  s.ByVerdict[string(detect.Unconfirmed)],
			Rejected:     s.ByVerdict[string(detect.Rejected)],
		},
		DuplicatedRecords:         c.total.Duplicated,
		ExtraCopies:               c.total.Extra,
		PossiblyDuplicatedRecords: c.total.Possibly,
		Topics:                    make([]jsonTopic, len(s.ByTopic)),
		Dropped:                   toJSONDropped(s.Dropped),
		TLS:                       toJSONTLS(s.TLS),
		Errors:                    append([]string{}, s.Errors...),
		Interrupted:               s.Interrupted,
		InputLimit:                s.InputLimit,
	}
	addJSONStatus(&j, s)
	j.Fleet, j.Attempts = toJSONFleet(s.Fleet), toJSONAttempts(s.Attempts)
	for i, c := range s.KafkaConnections {
		j.KafkaConnections[i] = jsonConnection{
			ID:              c.ID,
			Client:          c.Client.String(),
			Broker:          c.Broker.String(),
			DetectedBy:      c.DetectedBy,
			ClientIDs:       append([]string{}, c.ClientIDs...),
			ProduceRequests: c.ProduceRequests,
			SASLMechanism:   c.SASLMechanism,
			SASLUser:        c.SASLUser,
			SASLFailed:      c.SASLFailed,
		}
	}
	for i, t := range s.ByTopic {
		rc := topicRecords(s.ByTopic, i, c)
		j.Topics[i] = jsonTopic{Topic: t.Topic, Batches: t.Batches, Records: t.Records, Findings: t.Findings, Duplicated: t.Duplicated,
			DuplicatedRecords: rc.Duplicated, ExtraCopies: rc.Extra}
	}
	return j
}
