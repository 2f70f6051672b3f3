package main

import (
	"slices"
	"testing"
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
