package report

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/kdupcap/kdupcap/detect"
)

// The JSON Lines objects the test findings and summary must give, written
// from their fields by the schema (README's "JSON Lines output"), not by
// the code under test: TestJSONRoundTrip compares every line with these.

// num is a JSON number as json.Decoder.UseNumber reads it.
func num[T int | int8 | int16 | int32 | int64 | uint64](v T) json.Number {
	return json.Number(strconv.FormatInt(int64(v), 10))
}

func float(v float64) json.Number { return json.Number(strconv.FormatFloat(v, 'f', -1, 64)) }

// uuid is a topic ID as the schema prints it.
func uuid(id [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", id[0:4], id[4:6], id[6:8], id[8:10], id[10:16])
}

func wantJSONFinding(f detect.Finding) map[string]any {
	m := map[string]any{
		"type": "duplicate", "conn_id": num(f.ConnID), "client": f.Client.String(), "broker": f.Broker.String(),
		"client_id": nil, "topic": f.Topic, "topic_id": nil, "partition": num(f.Partition),
		"producer_id": num(f.ProducerID), "producer_epoch": num(f.ProducerEpoch), "base_sequence": num(f.FirstSequence),
		"record_count": num(f.NumRecords), "batch_crc": fmt.Sprintf("0x%08x", f.BatchCRC), "magic": num(f.Magic),
		"idempotent": f.Idempotent, "match": string(f.Match), "scope": "connection", "verdict": string(f.Verdict),
		"reason": f.Reason, "evidence": "produce_responses",
	}
	if f.ClientID != nil {
		m["client_id"] = *f.ClientID
	}
	if f.TopicID != [16]byte{} {
		m["topic_id"] = uuid(f.TopicID)
		if f.Topic == "" {
			m["topic"] = uuid(f.TopicID) // no Metadata named it
		}
	}
	offsets := []any{}
	for _, o := range f.AppendedOffsets {
		offsets = append(offsets, num(o))
	}
	m["appended_offsets"] = offsets
	var atts []any
	for i, a := range f.Attempts {
		am := map[string]any{
			// An attempt with no connection of its own is on the finding's.
			"conn_id": num(f.ConnID), "client": f.Client.String(), "broker": f.Broker.String(),
			"correlation_id": num(a.CorrelationID), "time": a.Time.UTC().Format("2006-01-02T15:04:05.000000000Z"),
			"api_version": num(a.Version), "acks": num(a.Acks), "timeout_ms": num(a.TimeoutMillis),
			"cause": nil, "response": nil,
		}
		if a.Cause != "" {
			am["cause"] = string(a.Cause)
		}
		if a.CauseError != "" {
			am["cause_error"] = a.CauseError
		}
		if i > 0 {
			am["gap_ms"] = float(a.GapMillis)
		}
		if r := a.Response; r != nil {
			am["response"] = map[string]any{"error_code": num(r.ErrorCode), "error": r.Error, "base_offset": num(r.BaseOffset),
				"log_append_time": num(r.LogAppendTime), "latency_ms": float(r.LatencyMillis)}
		}
		if a.NoResponse != "" {
			am["no_response"] = string(a.NoResponse)
		}
		atts = append(atts, am)
	}
	m["attempts"] = atts
	return m
}

// wantRecords are the summary's counts of records duplicated, worked out
// by hand from the findings: in all and per topic ([records, extra
// copies]).
type wantRecords struct {
	duplicated, extra, possibly int64
	topics                      map[string][2]int64
}

func wantJSONSummary(s Summary, rec wantRecords) map[string]any {
	files := []any{}
	for _, f := range s.Files {
		files = append(files, f)
	}
	conns := []any{}
	for _, c := range s.KafkaConnections {
		ids := []any{}
		for _, id := range c.ClientIDs {
			ids = append(ids, id)
		}
		conns = append(conns, map[string]any{"id": num(c.ID), "client": c.Client.String(), "broker": c.Broker.String(),
			"detected_by": c.DetectedBy, "client_ids": ids, "produce_requests": num(c.ProduceRequests)})
	}
	// Every verdict is listed, 0 when no finding has it.
	verdicts := map[string]any{}
	for _, v := range []string{"duplicated", "deduplicated", "single", "unconfirmed", "rejected"} {
		verdicts[v] = num(s.ByVerdict[v])
	}
	topics := []any{}
	for _, tc := range s.ByTopic {
		topics = append(topics, map[string]any{"topic": tc.Topic, "batches": num(tc.Batches), "records": num(tc.Records),
			"findings": num(tc.Findings), "duplicated": num(tc.Duplicated),
			"duplicated_records": num(rec.topics[tc.Topic][0]), "extra_copies": num(rec.topics[tc.Topic][1])})
	}
	errs := []any{}
	for _, e := range s.Errors {
		errs = append(errs, e)
	}
	return map[string]any{
		"type": "summary", "files": files, "packets": num(s.Packets), "bytes": num(s.Bytes),
		"tcp_connections": num(s.TCPConnections), "gaps": num(s.Gaps), "gap_bytes": num(s.GapBytes),
		"kafka_connections": conns, "frames": num(s.Frames), "produce_requests": num(s.ProduceRequests),
		"produce_responses": num(s.ProduceResponses), "batches": num(s.Batches), "records": num(s.Records),
		"malformed": num(s.Malformed), "resyncs": num(s.Resyncs), "findings": num(s.Findings),
		"by_verdict": verdicts, "topics": topics, "errors": errs,
		"duplicated_records": num(rec.duplicated), "extra_copies": num(rec.extra), "possibly_duplicated_records": num(rec.possibly),
	}
}

// wantJSONStatus adds to m the summary's keys of a failed input, worked
// out by hand from s. (The fixture saw produce requests: no
// nothing_to_judge.)
func wantJSONStatus(m map[string]any, s Summary) {
	if len(s.Errors) > 0 || len(s.FailedInputs) > 0 {
		m["input_failed"] = true
	}
	if len(s.FailedInputs) > 0 {
		var fi []any
		for _, f := range s.FailedInputs {
			o := map[string]any{"file": f.File, "results_up_to_byte": num(f.ResultsUpTo)}
			if f.Decompressed {
				o["decompressed"] = true
			}
			fi = append(fi, o)
		}
		m["failed_inputs"] = fi
	}
}
