package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/internal/kafkatest"
)

// TestRecordedCaptures checks the real-traffic captures committed under
// testdata against the broker's log as read back when each was made (see
// testdata/README.md): each value is the log's batches, by base offset and
// CRC, that hold the same batch more than once (non-idempotent) or the
// batches an idempotent producer re-sent, which the log holds once.
func TestRecordedCaptures(t *testing.T) {
	type batch struct {
		crc     string
		offsets []int64 // where the log holds this batch
	}
	tests := []struct {
		file    string
		topic   string
		verdict string
		batches []batch
	}{
		{
			// log of realtraffic-1 p0: 0+1 1+1/0x715a9f13 2+1/0x715a9f13 3+1/0x2218da60 4+1/0x2218da60 5+1 6+1
			file: "kgo-v13-nonidempotent-timeout.pcap", topic: "realtraffic-1", verdict: "duplicated",
			batches: []batch{{"0x715a9f13", []int64{1, 2}}, {"0x2218da60", []int64{3, 4}}},
		},
		{
			// log of realtraffic-3 p0: 0+1 1+1/0x53638ffb 2+1/0x7bb13e7f 3+1 4+1, every record once
			file: "kgo-v13-idempotent-timeout.pcap", topic: "realtraffic-3", verdict: "deduplicated",
			batches: []batch{{"0x53638ffb", []int64{1}}, {"0x7bb13e7f", []int64{2}}},
		},
		{
			// log of realtraffic-4 p0: ... 2+1/0xaf65e89b ... 4+1/0xaf65e89b 5+1/0xc6aab9a9 ... 7+1/0xc6aab9a9
			file: "kcat-nonidempotent-timeout.pcap", topic: "realtraffic-4", verdict: "duplicated",
			batches: []batch{{"0xaf65e89b", []int64{2, 4}}, {"0xc6aab9a9", []int64{5, 7}}},
		},
		{
			// log of tls-0 p0: 0+1 1+1/0x7a9b6ab9 2+1/0x7a9b6ab9 3+1/0x833f8aa4 4+1/0x833f8aa4 5+1 6+1;
			// TLS 1.3, decrypted with the keys the pcapng carries.
			file: "kgo-tls13-nonidempotent-timeout.pcapng", topic: "tls-0", verdict: "duplicated",
			batches: []batch{{"0x7a9b6ab9", []int64{1, 2}}, {"0x833f8aa4", []int64{3, 4}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			res := cliAnalyze(t, nil, seedPath(tc.file))
			if res.Code != exitOK {
				t.Fatalf("exit %d: %s", res.Code, res.Stderr)
			}
			if len(res.Findings) != len(tc.batches) {
				t.Fatalf("%d findings, the log shows %d re-sent batches", len(res.Findings), len(tc.batches))
			}
			for i, want := range tc.batches {
				f := res.Findings[i]
				if f.Topic != tc.topic || f.Partition != 0 || f.BatchCRC != want.crc || f.Verdict != tc.verdict ||
					!slices.Equal(f.AppendedOffsets, want.offsets) {
					t.Errorf("finding %d: %s/%d crc %s %s at %v, want %s/0 crc %s %s at %v", i,
						f.Topic, f.Partition, f.BatchCRC, f.Verdict, f.AppendedOffsets,
						tc.topic, want.crc, tc.verdict, want.offsets)
				}
			}
		})
	}
}

// loggedBatch is one batch of a recorded log: its base offset and CRC, and
// the indexes i of its records, keyed "key-<i>" with value "<prefix><i>".
type loggedBatch struct {
	base    int64
	crc     uint32
	records []int
}

// recordedLog builds the log of one partition from its batches as
// testdata/README.md records them.
func recordedLog(topic, prefix string, batches []loggedBatch) *kafkatest.Log {
	pl := kafkatest.PartitionLog{Partition: 0}
	for _, b := range batches {
		pl.Batches = append(pl.Batches, kafkatest.Batch{BaseOffset: b.base, NumRecords: int32(len(b.records)),
			ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, CRC: b.crc})
		for j, i := range b.records {
			pl.Records = append(pl.Records, kafkatest.Record{Offset: b.base + int64(j), BatchBaseOffset: b.base,
				Key: fmt.Sprintf("key-%d", i), Value: fmt.Sprintf("%s%d", prefix, i)})
		}
		pl.HighWatermark = b.base + int64(len(b.records))
	}
	return &kafkatest.Log{Topic: topic, Partitions: []kafkatest.PartitionLog{pl}}
}

// nullKeys gives every record of l a null key (librdkafka's, produced
// without one).
func nullKeys(l *kafkatest.Log) *kafkatest.Log {
	for i := range l.Partitions {
		for j := range l.Partitions[i].Records {
			l.Partitions[i].Records[j].Key, l.Partitions[i].Records[j].KeyNull = "", true
		}
	}
	return l
}

// span is the indexes from to to, inclusive.
func span(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// TestRecordedRecordLevel checks the two committed captures of clients that
// re-send records in other bytes (sarama re-batched, kafka-go rebuilt)
// against their logs as testdata/README.md records them, with the checks
// TestRecordLevel makes of a live run (checkRecordFindings): each record
// the log holds twice is found at the log's offsets, with the relation the
// log's batches show, its first copy from the faulted request; nothing else
// is said duplicated. The logs were read back when the captures were made;
// the CRCs and base offsets agree with the capture's bytes read by hand
// (tshark for kafka-go's Produce v8; sarama's v9, which tshark 4.0 does not
// decode, field by field).
func TestRecordedRecordLevel(t *testing.T) {
	tests := []struct {
		file string
		port int
		// faulted is the correlation ID the broker answered
		// REQUEST_TIMED_OUT after the append.
		faulted  int32
		log      *kafkatest.Log
		relation string
		// twice are the log offsets of each record held twice.
		twice [][]int64
	}{
		{
			file: "sarama-nonidempotent-rebatched.pcap", port: 42331, faulted: 1,
			log: recordedLog("rl-sarama-none", "rec-sarama-none-", []loggedBatch{
				{0, 0x2abcbc96, []int{0}},
				{1, 0xc1939ea8, span(0, 3)},
				{5, 0x77ee6241, span(4, 7)},
				{9, 0xe2b72c35, span(8, 11)},
				{13, 0x028ec1dd, span(12, 15)},
				{17, 0xe2f77c64, span(16, 19)},
				{21, 0x4fb9e5e1, span(20, 23)},
			}),
			relation: "rebatched",
			twice:    [][]int64{{0, 1}},
		},
		{
			file: "kafkago-gzip-nonidempotent-rebuilt.pcap", port: 43449, faulted: 3,
			log: recordedLog("rl-kafkago-gzip", "rec-kafkago-gzip-", []loggedBatch{
				{0, 0xca1ed1a4, span(0, 2)},
				{3, 0x805c0c4c, span(3, 5)},
				{6, 0x5f783d62, span(3, 5)},
				{9, 0xf8977654, span(6, 8)},
				{12, 0x37c60ea8, span(9, 11)},
			}),
			relation: "rebuilt",
			twice:    [][]int64{{3, 6}, {4, 7}, {5, 8}},
		},
		{
			// Idempotent: the re-sent records under epoch 1, from
			// sequence 0, beside none of the first batch's (rec-p-0
			// timed out in librdkafka and was not sent again).
			file: "rdkafka211-idempotent-epoch-bump.pcap", port: 40421, faulted: 5,
			log: nullKeys(recordedLog("orders", "rec-p-", []loggedBatch{
				{0, 0xb8e914e9, span(0, 3)},
				{4, 0xb133915d, span(1, 3)},
			})),
			relation: "rebatched",
			twice:    [][]int64{{1, 4}, {2, 5}, {3, 6}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			res := &kafkatest.Result{Log: tc.log, Port: tc.port,
				Events: []kafkatest.Event{{Action: kafkatest.TimedOutAfterAppend, CorrelationID: tc.faulted, Answered: time.Unix(1, 0)}}}
			// The recorded log is what the test relies on: it holds
			// exactly these records twice.
			var held [][]int64
			for _, c := range tc.log.Duplicates() {
				held = append(held, offsetsOf(c.Records))
			}
			if !slices.EqualFunc(held, tc.twice, slices.Equal[[]int64]) {
				t.Fatalf("the recorded log holds records twice at %v, want %v", held, tc.twice)
			}
			a := analyzeRecordLevel(t, seedPath(tc.file), false)
			checkRecordFindings(t, res, a, false, false)
			// The client re-sent other bytes: no batch finding; one
			// re-send, so one record-level finding, listing exactly the
			// records held twice.
			if len(a.Findings) != 0 {
				t.Errorf("%d batch findings, the client re-sent no batch's bytes: %+v", len(a.Findings), a.Findings)
			}
			if len(a.RecordFindings) != 1 {
				t.Fatalf("%d record-level findings, the log shows one re-send", len(a.RecordFindings))
			}
			f := a.RecordFindings[0]
			var got [][]int64
			for _, r := range f.Records {
				got = append(got, r.offsets())
			}
			if f.Type != "record_resend" || f.Verdict != "duplicated" || f.BatchRelation != tc.relation ||
				!slices.EqualFunc(got, tc.twice, slices.Equal[[]int64]) {
				t.Errorf("finding %s %s %s with records at %v, want record_resend duplicated %s at %v",
					f.Type, f.Verdict, f.BatchRelation, got, tc.relation, tc.twice)
			}
		})
	}
}
