// Package reporttest holds the synthetic summary the tests of report's
// sinks (packages emit and metrics) write, beside the findings of package
// fixture. The summary is a copy of the one of report's own tests, which
// cannot import this package (report_test.go is in package report, and
// this package imports report); keep the two the same.
package reporttest

import (
	"net/netip"
	"testing"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/report"
	"github.com/kdupcap/kdupcap/report/internal/fixture"
)

// Findings are fixture.Findings.
func Findings() []detect.Finding { return fixture.Findings() }

// Summary is the summary of a run of two captures that gave Findings.
func Summary() report.Summary {
	return report.Summary{
		Files:   []string{"seed-nonidempotent-retry.pcap", "seed-idempotent-retry.pcap"},
		Packets: 1234, Bytes: 567890, TCPConnections: 5, Gaps: 1, GapBytes: 1448,
		KafkaConnections: []report.Connection{
			{ID: 1, Client: netip.MustParseAddrPort("172.18.0.1:40312"), Broker: netip.MustParseAddrPort("172.18.0.3:19092"),
				DetectedBy: "sniff", ClientIDs: []string{"rdkafka"}, ProduceRequests: 30},
			{ID: 2, Client: netip.MustParseAddrPort("[::1]:51000"), Broker: netip.MustParseAddrPort("[::1]:9092"),
				DetectedBy: "port", ProduceRequests: 3},
		},
		Frames: 80, ProduceRequests: 33, ProduceResponses: 31, Batches: 40, Records: 400, Malformed: 2, Resyncs: 1,
		Findings:  4,
		ByVerdict: map[string]int64{"unconfirmed": 1, "deduplicated": 1, "duplicated": 1, "single": 1},
		ByTopic: []report.TopicCount{
			{Topic: "orders", Batches: 10, Records: 200, Findings: 1, Duplicated: 1},
			{Topic: "test", Batches: 30, Records: 200, Findings: 2},
		},
		Errors: []string{"capture: seed-idempotent-retry.pcap: truncated at byte 4096"},
	}
}

// Write hands w each of fs, then s, and fails t at the first error.
func Write(t testing.TB, w report.Writer, fs []detect.Finding, s report.Summary) {
	t.Helper()
	for _, f := range fs {
		if err := w.Finding(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Summary(s); err != nil {
		t.Fatal(err)
	}
}
