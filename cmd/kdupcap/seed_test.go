package main

import (
	"path/filepath"
	"testing"
)

func seedPath(name string) string { return filepath.Join("..", "..", "testdata", name) }

// TestSeedCaptures checks the two real librdkafka captures against what their
// bytes say (read by hand from the hex, as operators do today).
func TestSeedCaptures(t *testing.T) {
	t.Run("nonidempotent", func(t *testing.T) {
		res := cliAnalyze(t, nil, seedPath("seed-nonidempotent-retry.pcap"))
		checkSeedFinding(t, res) // 27 answered 7 at 112, 28 not: unconfirmed
		f := res.Findings[0]
		if f.Topic != "test" || f.Partition != 0 || f.ClientID == nil || *f.ClientID != "rdkafka" ||
			f.ProducerID != -1 || f.Idempotent || f.Match != "bytes" || f.RecordCount != 1 {
			t.Errorf("finding fields: %+v", f)
		}
		if f.Client != "172.19.0.1:55464" || f.Broker != "172.19.0.4:19092" {
			t.Errorf("connection %s -> %s", f.Client, f.Broker)
		}
		if a := f.Attempts[0]; a.Response != nil && a.Response.Error != "REQUEST_TIMED_OUT" {
			t.Errorf("attempt 27 answered %q", a.Response.Error)
		}
		if b := f.Attempts[1]; b.Cause == nil || *b.Cause != "broker_error" || b.CauseError != "REQUEST_TIMED_OUT" {
			t.Errorf("attempt 28 cause %v %q", b.Cause, b.CauseError)
		}
		if res.Summary.Findings != 1 || res.Summary.ByVerdict["unconfirmed"] != 1 {
			t.Errorf("summary %+v", res.Summary)
		}
	})
	t.Run("idempotent", func(t *testing.T) {
		res := cliAnalyze(t, nil, seedPath("seed-idempotent-retry.pcap"))
		if res.Code != exitOK {
			t.Fatalf("exit %d: %s", res.Code, res.Stderr)
		}
		if len(res.Findings) != 1 {
			t.Fatalf("want 1 finding, got %d", len(res.Findings))
		}
		f := res.Findings[0]
		if f.ProducerID != 0 || f.ProducerEpoch != 0 || f.BaseSequence != 1 || !f.Idempotent || f.Topic != "test" {
			t.Errorf("finding fields: %+v", f)
		}
		if f.Verdict != "deduplicated" {
			t.Errorf("verdict %q, want deduplicated", f.Verdict)
		}
		if len(f.AppendedOffsets) != 1 || f.AppendedOffsets[0] != 204 {
			t.Errorf("appended offsets %v, want [204]", f.AppendedOffsets)
		}
		if len(f.Attempts) != 2 {
			t.Fatalf("want 2 attempts, got %+v", f.Attempts)
		}
		a, b := f.Attempts[0], f.Attempts[1]
		if a.CorrelationID != 6 || b.CorrelationID != 7 {
			t.Errorf("correlation IDs %d, %d", a.CorrelationID, b.CorrelationID)
		}
		if a.Response == nil || a.Response.ErrorCode != 7 || a.Response.BaseOffset != 204 {
			t.Errorf("attempt 6 response %+v", a.Response)
		}
		if b.Response == nil || b.Response.ErrorCode != 0 || b.Response.BaseOffset != 204 {
			t.Errorf("attempt 7 response %+v", b.Response)
		}
	})
}
