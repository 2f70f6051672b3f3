package main

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/internal/kafkatest"
	"github.com/kdupcap/kdupcap/internal/testenv"
)

// analyzeProducers runs `kdupcap analyze --format json pcap` and returns its
// producer lines (the output as a whole is checked by cliAnalyze).
func analyzeProducers(t *testing.T, pcap string) []cliProducer {
	t.Helper()
	res := cliAnalyze(t, nil, pcap)
	if res.Code != exitOK {
		t.Fatalf("analyze exited %d: %s", res.Code, res.Stderr)
	}
	return res.Producers
}

// kgoVersion is the client software version kgo sends: its module's version
// in the build, as kgo reads it.
func kgoVersion(t *testing.T) string {
	t.Helper()
	info, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("no build info")
	}
	for _, d := range info.Deps {
		if d.Path == "github.com/twmb/franz-go" {
			return d.Version
		}
	}
	t.Fatal("franz-go not in the build info")
	return ""
}

// librdkafkaVersion is the librdkafka version kcat is linked with, from
// `kcat -V`.
func librdkafkaVersion(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("kcat", "-V").CombinedOutput()
	if err != nil {
		t.Fatalf("kcat -V: %v: %s", err, out)
	}
	m := regexp.MustCompile(`librdkafka ([0-9][0-9A-Za-z.-]*)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("kcat -V names no librdkafka version: %s", out)
	}
	return string(m[1])
}

// TestProducerSettings runs real producers with different settings (kgo and
// librdkafka through kcat: acks 0, 1 and all, idempotent or not, one or five
// requests in flight, no compression, gzip, snappy and zstd) against kfake, captures
// them, and checks that the producer profile kdupcap infers from the capture
// equals what each was configured with, that the software name and version
// are what the client sends in ApiVersions, and that the batch counts equal
// the broker's log read back.
func TestProducerSettings(t *testing.T) {
	testenv.Capture(t)
	// Every produce response is held 50ms, one after the other, so that a
	// producer allowed five requests in flight has five in flight: records
	// come 4ms apart, a dozen per answer, and the five-in-flight runs
	// produce 60 records, so that requests pile up for several answers
	// after kgo's idempotent producer, which keeps one request in flight
	// until its first answer (kgo sink.go, firstRespCheck), has warmed up,
	// even on a loaded machine (30 records left too few after a slow start).
	const delay = 50 * time.Millisecond
	slow := []kafkatest.Fault{{Action: kafkatest.Delay, Delay: delay, Max: 1000}}
	// Values padded so that compression shrinks them: clients send a batch
	// uncompressed when compressing does not make it smaller.
	padded := func(f kafkatest.ProduceFunc) kafkatest.ProduceFunc {
		return func(ctx context.Context, addr, topic string, values []string) error {
			out := make([]string, len(values))
			for i, v := range values {
				out[i] = v + "-" + strings.Repeat("padding", 40)
			}
			return f(ctx, addr, topic, out)
		}
	}
	kgo := func(idempotent bool, s kafkatest.Settings) kafkatest.ProduceFunc {
		s.Spacing = 4 * time.Millisecond
		p := kafkatest.Producer{Idempotent: idempotent, ClientID: "kgo-settings", Partitions: 2, Settings: s}
		return padded(func(ctx context.Context, addr, topic string, values []string) error {
			return kafkatest.Produce(ctx, addr, topic, p, values)
		})
	}
	kcat := func(x ...string) kafkatest.ProduceFunc {
		return padded(kafkatest.KcatProduce(append([]string{"client.id=kcat-settings", "message.timeout.ms=15000"}, x...)...))
	}
	type want struct {
		software    string
		acks        int16
		idempotent  bool
		maxInFlight int
		// atLeast, if set, accepts any max in flight from atLeast to
		// maxInFlight: what is seen in flight is a lower bound of the
		// setting, reached only when the client has enough to send.
		atLeast int
		codec   string
	}
	tests := []struct {
		name  string
		needs string
		s     kafkatest.Scenario
		want  want
	}{
		{
			name: "kgo acks=0 gzip",
			s:    kafkatest.Scenario{Records: 6, Partitions: 2, Produce: kgo(false, kafkatest.Settings{Acks: "0", Compression: kafkatest.CodecGzip})},
			want: want{software: "kgo", acks: 0, maxInFlight: 0, codec: "gzip"},
		},
		{
			name: "kgo acks=1 snappy five in flight",
			s: kafkatest.Scenario{Records: 60, Partitions: 2, Faults: slow,
				Produce: kgo(false, kafkatest.Settings{Acks: "1", Compression: kafkatest.CodecSnappy, MaxInFlight: 5})},
			want: want{software: "kgo", acks: 1, maxInFlight: 5, codec: "snappy"},
		},
		{
			name: "kgo acks=all one in flight",
			s: kafkatest.Scenario{Records: 6, Partitions: 2, Faults: slow,
				Produce: kgo(false, kafkatest.Settings{MaxInFlight: 1})},
			want: want{software: "kgo", acks: -1, maxInFlight: 1, codec: "none"},
		},
		{
			name: "kgo idempotent five in flight",
			s: kafkatest.Scenario{Records: 60, Partitions: 2, Faults: slow,
				Produce: kgo(true, kafkatest.Settings{Compression: kafkatest.CodecGzip})},
			want: want{software: "kgo", acks: -1, idempotent: true, maxInFlight: 5, codec: "gzip"},
		},
		{
			// Against kfake, librdkafka compresses with zstd only: it takes
			// gzip, snappy and lz4 as unsupported by the broker's
			// ApiVersions and sends those batches uncompressed.
			name:  "kcat acks=1 zstd one in flight",
			needs: "kcat",
			s: kafkatest.Scenario{Records: 5, Faults: slow,
				Produce: kcat("acks=1", "enable.idempotence=false", "compression.codec=zstd")},
			want: want{software: "librdkafka", acks: 1, maxInFlight: 1, codec: "zstd"},
		},
		{
			name:  "kcat idempotent five in flight",
			needs: "kcat",
			s: kafkatest.Scenario{Records: 16, Faults: slow,
				Produce: kcat("enable.idempotence=true", "max.in.flight.requests.per.connection=5")},
			// librdkafka keeps 4 requests in flight in most runs, 5 in
			// some (kgo reaches 5 every time, above).
			want: want{software: "librdkafka", acks: -1, idempotent: true, maxInFlight: 5, atLeast: 3, codec: "none"},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			needTool(t, tt.needs)
			s := tt.s
			s.Name, s.Topic = fmt.Sprintf("ps%d", i), fmt.Sprintf("settings-%d", i)
			res, pcap := runCaptured(t, s, 20*time.Second)
			ps := analyzeProducers(t, pcap)
			t.Logf("log of %s: %s", s.Topic, describeLog(res.Log))
			if len(ps) != 1 {
				t.Fatalf("%d producers, want 1: %+v", len(ps), ps)
			}
			p := ps[0]
			w := tt.want
			version := ""
			switch w.software {
			case "kgo":
				version = kgoVersion(t)
			case "librdkafka":
				version = librdkafkaVersion(t)
			}
			if p.SoftwareName != w.software || p.SoftwareVersion != version {
				t.Errorf("software %q %q, want %q %q", p.SoftwareName, p.SoftwareVersion, w.software, version)
			}
			if !slices.Equal(p.Acks, []int16{w.acks}) {
				t.Errorf("acks %v, want [%d]", p.Acks, w.acks)
			}
			if p.Idempotent != w.idempotent || (p.ProducerID >= 0) != w.idempotent {
				t.Errorf("idempotent %v (producer id %d), want %v", p.Idempotent, p.ProducerID, w.idempotent)
			}
			switch {
			case w.atLeast > 0 && (p.MaxInFlight < w.atLeast || p.MaxInFlight > w.maxInFlight):
				t.Errorf("max in flight %d, want %d to %d", p.MaxInFlight, w.atLeast, w.maxInFlight)
			case w.atLeast == 0 && p.MaxInFlight != w.maxInFlight:
				t.Errorf("max in flight %d, want %d", p.MaxInFlight, w.maxInFlight)
			}
			if !slices.Equal(p.Codecs, []string{w.codec}) {
				t.Errorf("codecs %v, want [%s]", p.Codecs, w.codec)
			}
			for _, part := range res.Log.Partitions {
				for _, b := range part.Batches {
					if got := b.Codec().String(); got != w.codec {
						t.Errorf("log batch at %d/%d compressed with %s, configured %s", part.Partition, b.BaseOffset, got, w.codec)
					}
				}
			}
			checkProducerAgainstLog(t, p, res, len(s.Faults) > 0, delay)
		})
	}
}

// checkProducerAgainstLog compares a producer profile with the broker's log:
// every batch in the log once (no fault here makes a re-send), its records,
// its producer ID; and, when every response was held delay, the latency.
func checkProducerAgainstLog(t *testing.T, p cliProducer, res *kafkatest.Result, delayed bool, delay time.Duration) {
	t.Helper()
	var batches, records int64
	var maxRecords int32
	for _, part := range res.Log.Partitions {
		for _, b := range part.Batches {
			batches++
			records += int64(b.NumRecords)
			maxRecords = max(maxRecords, b.NumRecords)
			if b.ProducerID != p.ProducerID {
				t.Errorf("log batch at %d/%d has producer id %d, the profile %d", part.Partition, b.BaseOffset, b.ProducerID, p.ProducerID)
			}
		}
	}
	if records != int64(len(res.Values)) {
		t.Errorf("the log holds %d records, %d were produced", records, len(res.Values))
	}
	if p.Resends != 0 || p.Batches != batches || p.Sends != batches {
		t.Errorf("profile: %d batches, %d sent, %d re-sends; the log holds %d batches", p.Batches, p.Sends, p.Resends, batches)
	}
	if mean := float64(records) / float64(batches); strconv.FormatFloat(p.RecordsMean, 'f', 3, 64) != strconv.FormatFloat(mean, 'f', 3, 64) || p.RecordsMax != maxRecords {
		t.Errorf("records per batch mean %v max %d, the log's %v max %d", p.RecordsMean, p.RecordsMax, mean, maxRecords)
	}
	if p.Acks[0] == 0 {
		if len(p.Latency) != 0 {
			t.Errorf("acks=0 has latency %+v", p.Latency)
		}
		if p.Diagnosis == "" {
			t.Error("acks=0 producer without a diagnosis")
		}
		return
	}
	if p.Diagnosis != "" {
		t.Errorf("a producer with no re-send and no error has a diagnosis: %s", p.Diagnosis)
	}
	if len(p.Latency) != 1 || p.Latency[0].Answered != p.Requests {
		t.Fatalf("latency %+v, want one broker answering all %d requests", p.Latency, p.Requests)
	}
	if l := p.Latency[0]; delayed && (l.P50Millis < 0.95*float64(delay.Milliseconds()) || l.MaxMillis < float64(delay.Milliseconds())) {
		t.Errorf("every answer was held %v, yet latency p50 %v ms, max %v ms", delay, l.P50Millis, l.MaxMillis)
	}
}

// capturedProducer is what a committed capture holds of its one producer,
// counted without kdupcap: the batches its produce requests carry (the
// capture's bytes, read with a hand decoder and tshark), and the batches
// sent again and how (testdata/README.md: the logs read back, the faults
// applied).
type capturedProducer struct {
	sends, resent, resends int64
	verdicts               map[string]int64
}

var capturedProducers = map[string]capturedProducer{
	// 27 and 28, the same batch; 28 unanswered.
	"seed-nonidempotent-retry.pcap": {2, 1, 1, map[string]int64{"unconfirmed": 1}},
	// 6 and 7, the same sequence; 7 answered at 6's offset.
	"seed-idempotent-retry.pcap": {2, 1, 1, map[string]int64{"deduplicated": 1}},
	// The log's 11 batches, two of them twice.
	"kgo-v13-nonidempotent-timeout.pcap": {11, 2, 2, map[string]int64{"duplicated": 2}},
	// 9 batches in the log, 2 re-sent and deduplicated.
	"kgo-v13-idempotent-timeout.pcap": {11, 2, 2, map[string]int64{"deduplicated": 2}},
	// 7 records, one a batch, two of them twice: 9 batches.
	"kcat-nonidempotent-timeout.pcap": {9, 2, 2, map[string]int64{"duplicated": 2}},
	// The log's 11 batches, two of them twice; the captures show one copy.
	"kgo-v13-nonidempotent-closed-after-append.pcap": {11, 2, 2, map[string]int64{"unconfirmed": 2}},
	// 7 batches: key-0 alone, then re-batched with key-1..3, then 5 more.
	"sarama-nonidempotent-rebatched.pcap": {7, 1, 1, map[string]int64{"duplicated": 1}},
	// 5 batches of 3 records, the second rebuilt once.
	"kafkago-gzip-nonidempotent-rebuilt.pcap": {5, 1, 1, map[string]int64{"duplicated": 1}},
	// The log's 11 batches (tshark decrypts 11 produce requests), two of
	// them twice.
	"kgo-tls13-nonidempotent-timeout.pcapng": {11, 2, 2, map[string]int64{"duplicated": 2}},
	// 6 records, the third sent again on a new connection after its
	// answer was reset away: 7 produce requests (tshark counts 7).
	"kgo-v13-nonidempotent-answer-lost.pcap": {7, 1, 1, map[string]int64{"duplicated": 1}},
	// Two produce requests: 4 records under epoch 0, 3 of them again
	// under epoch 1 (one record-level finding).
	"rdkafka211-idempotent-epoch-bump.pcap": {2, 1, 1, map[string]int64{"duplicated": 1}},
}

// TestProducersAddUp: on every testdata capture, the producer lines say
// what the capture holds (capturedProducers, counted without kdupcap) and
// agree with the findings and the summary of the same run: every batch sent
// is some producer's, every finding some producer's re-sent batch, and each
// producer that re-sent has a diagnosis naming its counts.
func TestProducersAddUp(t *testing.T) {
	for _, file := range captureFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			res := cliAnalyze(t, nil, file)
			ps := res.Producers
			want, ok := capturedProducers[filepath.Base(file)]
			if !ok {
				t.Fatalf("no producer facts for %s: count its batches and re-sends and add them to capturedProducers", file)
			}
			if len(ps) != 1 {
				t.Fatalf("%d producers, the capture holds one", len(ps))
			}
			p := ps[0]
			if p.Sends != want.sends || res.Summary.Batches != want.sends || p.Resent != want.resent || p.Resends != want.resends ||
				p.Batches != want.sends-want.resends || !maps.Equal(nonzero(p.ByVerdict), want.verdicts) {
				t.Errorf("producer: %d sends (summary %d batches), %d batches, %d re-sent, %d re-sends, verdicts %v; "+
					"the capture: %d sends, %d batches, %d re-sent, %d re-sends, verdicts %v",
					p.Sends, res.Summary.Batches, p.Batches, p.Resent, p.Resends, p.ByVerdict,
					want.sends, want.sends-want.resends, want.resent, want.resends, want.verdicts)
			}
			var sends, resent, resends int64
			verdicts := map[string]int64{}
			for _, p := range ps {
				sends += p.Sends
				resent += p.Resent
				resends += p.Resends
				for v, n := range p.ByVerdict {
					verdicts[v] += n
				}
				if p.Resends > 0 {
					head := fmt.Sprintf("%d of %d batches re-sent", p.Resent, p.Batches)
					if !strings.Contains(p.Diagnosis, head) {
						t.Errorf("diagnosis does not say %q: %s", head, p.Diagnosis)
					}
				}
			}
			attempts := int64(0)
			for _, f := range res.Findings {
				attempts += int64(len(f.Attempts) - 1)
			}
			// Record-level re-sends count as re-sent batches too; an
			// application's duplicates do not.
			found := int64(len(res.Findings))
			for _, f := range analyzeRecordLevel(t, file, false).RecordFindings {
				if f.Type == "record_resend" {
					found++
					attempts += int64(len(f.Attempts) - 1)
				}
			}
			if sends != res.Summary.Batches || resent != found || resends != attempts {
				t.Errorf("producers: %d sends, %d re-sent, %d re-sends; summary %d batches, %d findings with %d re-sends",
					sends, resent, resends, res.Summary.Batches, found, attempts)
			}
			for v, n := range res.Summary.ByVerdict {
				if verdicts[v] != n {
					t.Errorf("verdict %s: producers %d, summary %d", v, verdicts[v], n)
				}
			}
		})
	}
}

// nonzero is m without its zero counts.
func nonzero(m map[string]int64) map[string]int64 {
	out := make(map[string]int64)
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}
