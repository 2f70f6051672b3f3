package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/internal/kafkatest"
	"github.com/kdupcap/kdupcap/internal/testenv"
)

// identity is the record's key, value and headers as kafkatest.Record's
// Identity encodes them, so that it compares with the log's; ok is false when
// a byte string is shown in base64 (never, for the values these tests
// produce).
func (r cliRecord) identity() (string, bool) {
	if r.KeyBase64 != "" || r.ValueBase64 != "" || r.Value == nil {
		return "", false
	}
	lr := kafkatest.Record{KeyNull: r.Key == nil, Value: *r.Value}
	if r.Key != nil {
		lr.Key = *r.Key
	}
	for _, h := range r.Headers {
		if h.ValueBase64 != "" {
			return "", false
		}
		hv := ""
		if h.Value != nil {
			hv = *h.Value
		}
		lr.Headers = append(lr.Headers, kafkatest.Header{Key: h.Key, Value: hv})
	}
	return lr.Identity(), true
}

// offsets are the log offsets the finding gives the record's copies.
func (r cliRecord) offsets() []int64 {
	var out []int64
	for _, c := range r.Copies {
		if c.Offset != nil {
			out = append(out, *c.Offset)
		}
	}
	slices.Sort(out)
	return out
}

// analyzeRecordLevel runs `kdupcap analyze --format json --records 100 pcap`
// (with --app-duplicates for an application's duplicates, which default
// runs do not look for), which must succeed.
func analyzeRecordLevel(t *testing.T, pcap string, appDuplicates bool) cliResult {
	t.Helper()
	args := []string{"--records", "100", pcap}
	if appDuplicates {
		args = append(args, "--app-duplicates")
	}
	return cliAnalyzeOK(t, args...)
}

// TestRecordLevel captures real producers that re-send records in other
// bytes than the first time (IBM/sarama re-batches retried records with newer
// ones, segmentio/kafka-go rebuilds them with new timestamps), librdkafka
// (kcat) that re-sends the same compressed bytes, and a kgo application that
// produces the same record twice, and checks kdupcap's batch and record-level
// findings against the broker's log read back: every record the log holds
// more than once must be found at the offsets the log holds it, and no
// finding may say duplicated of a record the log holds once.
func TestRecordLevel(t *testing.T) {
	testenv.Capture(t)
	kcat := func(codec kafkatest.Codec) kafkatest.ProduceFunc {
		return kafkatest.KcatCompressed(codec, "enable.idempotence=false", "request.timeout.ms=300",
			"message.timeout.ms=15000", "client.id=kcat-recordlevel")
	}
	sarama := func(codec kafkatest.Codec) kafkatest.ProduceFunc {
		return kafkatest.SaramaProduce(kafkatest.SaramaProducer{Codec: codec, ClientID: "sarama-recordlevel"})
	}
	// kafka-go sends half its WriteTimeout as TimeoutMillis, which the
	// fault waits out before answering: 2s leaves the client's own
	// deadline 1s after the answer, a margin a loaded machine keeps.
	kafkaGo := func(codec kafkatest.Codec) kafkatest.ProduceFunc {
		return kafkatest.KafkaGoProduce(kafkatest.KafkaGoWriter{Codec: codec, PerRequest: 3, WriteTimeout: 2 * time.Second})
	}
	// The first produce request (sarama) or the second (the others) is
	// answered REQUEST_TIMED_OUT after its append; the client's retry is
	// answered normally.
	first := []kafkatest.Fault{{Action: kafkatest.TimedOutAfterAppend, Max: 1}}
	second := []kafkatest.Fault{{Action: kafkatest.TimedOutAfterAppend, Every: 2, Max: 1}}
	tests := []struct {
		name  string
		needs string
		s     kafkatest.Scenario
		// sameBytes: the client re-sends the very bytes, so each re-sent
		// record is covered by a batch finding; otherwise by a
		// record_resend finding.
		sameBytes bool
		// appTwice: no fault; the records held twice were produced twice
		// by the application, each answered with success.
		appTwice bool
	}{
		{name: "sarama none", s: kafkatest.Scenario{Records: 12, Faults: first, Produce: sarama(kafkatest.CodecNone)}},
		{name: "sarama snappy", s: kafkatest.Scenario{Records: 12, Faults: first, Produce: sarama(kafkatest.CodecSnappy)}},
		{name: "kafka-go gzip", s: kafkatest.Scenario{Records: 9, Faults: second, Produce: kafkaGo(kafkatest.CodecGzip)}},
		{name: "kafka-go lz4", s: kafkatest.Scenario{Records: 9, Faults: second, Produce: kafkaGo(kafkatest.CodecLz4)}},
		{name: "kcat gzip", needs: "kcat", sameBytes: true,
			s: kafkatest.Scenario{Records: 5, Faults: second, Produce: kcat(kafkatest.CodecGzip), LegacyVersions: true}},
		{name: "kcat zstd", needs: "kcat", sameBytes: true,
			s: kafkatest.Scenario{Records: 5, Faults: second, Produce: kcat(kafkatest.CodecZstd)}},
		{name: "kgo app twice", appTwice: true,
			s: kafkatest.Scenario{Records: 5, Produce: kafkatest.AppTwiceProduce(kafkatest.AppTwice{ClientID: "kgo-apptwice", Twice: []int{1, 3}})}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			needTool(t, tt.needs)
			t.Parallel()
			s := tt.s
			s.Name, s.Topic = fmt.Sprintf("r%d", i), fmt.Sprintf("recordlevel-%d", i)
			res, pcap := runCaptured(t, s, 20*time.Second)
			t.Logf("%d faults applied, log of %s: %s", len(res.Events), s.Topic, describeLog(res.Log))
			checkRecordHarness(t, res, tt.appTwice)
			a := analyzeRecordLevel(t, pcap, tt.appTwice)
			checkSameForWorkers(t, "--records", "100", "--app-duplicates", pcap)
			t.Logf("%d batch findings, %d record-level findings", len(a.Findings), len(a.RecordFindings))
			checkRecordFindings(t, res, a, tt.sameBytes, tt.appTwice)
			checkLogCounts(t, res.Log, a.Stdout)
		})
	}
}

// checkRecordHarness checks that the run did what the test relies on: with a
// fault, it was answered and the log holds some record twice (the client
// re-sent it); without, the log holds records twice all the same (the
// application produced them twice).
func checkRecordHarness(t *testing.T, res *kafkatest.Result, appTwice bool) {
	t.Helper()
	answered := len(res.Answered())
	switch {
	case !appTwice && answered == 0:
		t.Fatalf("harness: no fault answered, the producer never re-sent: %+v", res.Events)
	case appTwice && len(res.Events) > 0:
		t.Fatalf("harness: faults applied to the app-twice producer: %+v", res.Events)
	}
	if len(res.Log.Duplicates()) == 0 {
		t.Fatalf("harness: the log holds no record twice")
	}
}

// logIndex is the log read back, by record identity.
type logIndex struct {
	log    *kafkatest.Log
	copies map[int32]map[string][]kafkatest.Record // partition -> identity -> copies
	at     map[int32]map[int64]kafkatest.Record    // partition -> offset -> record
}

func indexLog(l *kafkatest.Log) logIndex {
	ix := logIndex{log: l, copies: make(map[int32]map[string][]kafkatest.Record), at: make(map[int32]map[int64]kafkatest.Record)}
	for _, p := range l.Partitions {
		ix.copies[p.Partition] = make(map[string][]kafkatest.Record)
		ix.at[p.Partition] = make(map[int64]kafkatest.Record)
		for _, r := range p.Records {
			ix.copies[p.Partition][r.Identity()] = append(ix.copies[p.Partition][r.Identity()], r)
			ix.at[p.Partition][r.Offset] = r
		}
	}
	return ix
}

// offsets are the log offsets of the copies of one record.
func offsetsOf(rs []kafkatest.Record) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.Offset
	}
	return out
}

// relation is what the log says of the batches holding the copies rs: "same"
// when they are one batch's bytes (one CRC), "rebuilt" when each holds the
// same records, "rebatched" when one holds other records too.
func (ix logIndex) relation(partition int32, rs []kafkatest.Record) string {
	pl, _ := ix.log.Partition(partition)
	var crcs []uint32
	var sets []string
	for _, r := range rs {
		b, _ := pl.BatchAt(r.BatchBaseOffset)
		crcs = append(crcs, b.CRC)
		var ids []string
		for _, o := range pl.Records {
			if o.BatchBaseOffset == r.BatchBaseOffset {
				ids = append(ids, o.Identity())
			}
		}
		slices.Sort(ids)
		sets = append(sets, strings.Join(ids, "\x00"))
	}
	switch {
	case len(slices.Compact(crcs)) == 1:
		return "same"
	case len(slices.Compact(sets)) == 1:
		return "rebuilt"
	}
	return "rebatched"
}

// checkRecordFindings compares the findings with the log:
//   - every record the log holds k >= 2 times is covered: by a batch finding
//     (verdict duplicated, its appended offsets holding each copy's batch)
//     when the client re-sent the same bytes; by a record_resend finding
//     (verdict duplicated, the batch relation the log shows) whose record's
//     copies sit at the log's offsets otherwise; by a record_duplicate
//     finding at the log's offsets for an application that produced it twice;
//   - no finding says duplicated of a record the log holds once, and every
//     offset a finding gives a record holds that record in the log;
//   - each attempt's batch CRC is that of the log's batch at the base offset
//     its response names, and the attempt that carried the first copy of a
//     re-sent record is the faulted request (its correlation ID is a fault
//     event's, its answer REQUEST_TIMED_OUT);
//   - re-sends are never record_duplicate, an application's duplicates never
//     record_resend.
func checkRecordFindings(t *testing.T, res *kafkatest.Result, a cliResult, sameBytes, appTwice bool) {
	t.Helper()
	ix := indexLog(res.Log)
	broker := "127.0.0.1:" + strconv.Itoa(res.Port)
	faulted := make(map[int32]bool)
	for _, e := range res.Answered() {
		faulted[e.CorrelationID] = true
	}

	// Batch findings: every appended offset is a log batch of the same CRC;
	// a duplicated one names only batches whose records the log holds twice.
	for i, f := range a.Findings {
		where := fmt.Sprintf("batch finding %d (%s/%d crc %s, verdict %s, offsets %v)", i, f.Topic, f.Partition, f.BatchCRC, f.Verdict, f.AppendedOffsets)
		if f.Topic != res.Log.Topic {
			t.Errorf("%s: topic %q, want %q", where, f.Topic, res.Log.Topic)
			continue
		}
		pl, ok := res.Log.Partition(f.Partition)
		if !ok {
			t.Errorf("%s: no such partition in the log", where)
			continue
		}
		checkAppended(t, where, pl, f, func(r kafkatest.Record) bool { return len(ix.copies[f.Partition][r.Identity()]) >= 2 })
		if appTwice && f.Verdict == "duplicated" {
			t.Errorf("%s: the application sent new bytes each time, no batch was re-sent", where)
		}
	}

	// Record-level findings: every offset given holds the record; a
	// duplicated one lists only records the log holds more than once.
	for i, f := range a.RecordFindings {
		where := fmt.Sprintf("%s finding %d (%s/%d, %s, verdict %s)", f.Type, i, f.Topic, f.Partition, f.BatchRelation, f.Verdict)
		if f.Topic != res.Log.Topic {
			t.Errorf("%s: topic %q, want %q", where, f.Topic, res.Log.Topic)
			continue
		}
		if f.Broker != broker {
			t.Errorf("%s: broker %q, want %q", where, f.Broker, broker)
		}
		if appTwice && f.Type == "record_resend" {
			t.Errorf("%s: no attempt failed, nothing was re-sent", where)
		}
		if !appTwice && f.Type == "record_duplicate" {
			t.Errorf("%s: the application produced every record once; the copies are re-sends", where)
		}
		if len(f.Attempts) < 2 {
			t.Errorf("%s: %d attempts, want at least 2", where, len(f.Attempts))
		}
		pl, _ := res.Log.Partition(f.Partition)
		for j, at := range f.Attempts {
			if at.Response == nil || at.Batch == nil || (at.Response.ErrorCode != 0 && at.Response.ErrorCode != 7) {
				continue
			}
			if b, ok := pl.BatchAt(at.Response.BaseOffset); !ok {
				t.Errorf("%s: attempt %d answered base offset %d, not a batch in the log", where, j, at.Response.BaseOffset)
			} else if crc := fmt.Sprintf("0x%08x", b.CRC); crc != at.Batch.CRC {
				t.Errorf("%s: attempt %d batch CRC %s, the log's batch at %d has %s", where, j, at.Batch.CRC, at.Response.BaseOffset, crc)
			}
		}
		for _, r := range f.Records {
			id, ok := r.identity()
			if !ok {
				t.Errorf("%s: record %+v shown in base64, the test's records are text", where, r)
				continue
			}
			held := ix.copies[f.Partition][id]
			for _, o := range r.offsets() {
				if lr, ok := ix.at[f.Partition][o]; !ok || lr.Identity() != id {
					t.Errorf("%s: record %q at offset %d, the log holds %q there", where, deref(r.Value), o, lr.Value)
				}
			}
			if f.Verdict == "duplicated" && len(r.offsets()) >= 2 && len(held) < 2 {
				t.Errorf("%s: duplicated, but the log holds %q %d times", where, deref(r.Value), len(held))
			}
			for _, c := range r.Copies {
				if c.Attempt < 0 || c.Attempt >= len(f.Attempts) {
					t.Errorf("%s: record %q copy names attempt %d of %d", where, deref(r.Value), c.Attempt, len(f.Attempts))
				}
			}
		}
	}

	// Coverage: every record the log holds twice or more.
	for _, p := range res.Log.Partitions {
		for _, c := range p.Copies() {
			if len(c.Records) < 2 {
				continue
			}
			id, want := c.Records[0].Identity(), offsetsOf(c.Records)
			what := fmt.Sprintf("the log holds %q %d times in %s/%d (offsets %v)", c.Value, len(c.Records), res.Log.Topic, p.Partition, want)
			if sameBytes {
				if !slices.ContainsFunc(a.Findings, func(f cliFinding) bool {
					return f.Partition == p.Partition && f.Verdict == "duplicated" &&
						!slices.ContainsFunc(c.Records, func(r kafkatest.Record) bool { return !slices.Contains(f.AppendedOffsets, r.BatchBaseOffset) })
				}) {
					t.Errorf("%s: no duplicated batch finding with those batches' base offsets", what)
				}
				continue
			}
			typ, rel := "record_resend", ix.relation(p.Partition, c.Records)
			if appTwice {
				typ = "record_duplicate"
			}
			var found *cliFinding
			var rec cliRecord
			for i, f := range a.RecordFindings {
				if f.Type != typ || f.Partition != p.Partition {
					continue
				}
				for _, r := range f.Records {
					if rid, _ := r.identity(); rid == id && slices.Equal(r.offsets(), want) {
						found, rec = &a.RecordFindings[i], r
					}
				}
			}
			if found == nil {
				t.Errorf("%s: no %s finding whose record has copies at those offsets (record findings: %d)", what, typ, len(a.RecordFindings))
				continue
			}
			where := fmt.Sprintf("%s: %s finding", what, typ)
			if !appTwice {
				if found.Verdict != "duplicated" {
					t.Errorf("%s: verdict %q, want duplicated", where, found.Verdict)
				}
				if found.BatchRelation != rel {
					t.Errorf("%s: batch_relation %q, the log's batches say %q", where, found.BatchRelation, rel)
				}
				// The copy at the lowest offset came from the faulted
				// request, answered REQUEST_TIMED_OUT.
				first := false
				for _, cp := range rec.Copies {
					if cp.Offset == nil || *cp.Offset != want[0] || cp.Attempt < 0 || cp.Attempt >= len(found.Attempts) {
						continue
					}
					first = true
					at := found.Attempts[cp.Attempt]
					if !faulted[at.CorrelationID] {
						t.Errorf("%s: first copy from correlation ID %d, the faulted requests were %v", where, at.CorrelationID, res.Events)
					}
					if at.Response == nil || at.Response.ErrorCode != 7 {
						t.Errorf("%s: first copy's attempt %+v, want answered REQUEST_TIMED_OUT (7)", where, at)
					}
				}
				if !first {
					t.Errorf("%s: no copy at the log's first offset %d", where, want[0])
				}
			}
			if int(found.RecordCount) < len(found.Records) {
				t.Errorf("%s: record_count %d below the %d records listed", where, found.RecordCount, len(found.Records))
			}
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}
