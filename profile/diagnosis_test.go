package profile

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/kdupcap/kdupcap/detect"
)

// TestDiagnose checks each rule of Diagnose on profiles built by hand: the
// statements it must make (with the numbers of the profile) and those it
// must not.
func TestDiagnose(t *testing.T) {
	id := "rdkafka"
	base := func(mod func(p *Producer)) *Producer {
		p := &Producer{
			ClientIP:       netip.MustParseAddr("172.19.0.1"),
			ClientID:       &id,
			ProducerID:     -1,
			SoftwareName:   "librdkafka",
			Acks:           []int16{-1},
			TimeoutsMillis: []int32{1},
			MaxInFlight:    1,
			Batches:        10,
			Resent:         8,
			Resends:        8,
			ByVerdict:      map[detect.Verdict]int64{detect.Duplicated: 6, detect.Unconfirmed: 2},
			MostCopies:     2,
			Causes:         []CauseCount{{Cause: detect.CauseBrokerError, Error: "REQUEST_TIMED_OUT", Count: 8, MinGapMillis: 100, MaxGapMillis: 100}},
			Overall:        BrokerLatency{Answered: 18, P50Millis: 2, P99Millis: 9, MaxMillis: 9.5, Succeeded: 10, SucceededP50Millis: 4, SucceededP99Millis: 9},
		}
		if mod != nil {
			mod(p)
		}
		return p
	}
	tests := []struct {
		name    string
		p       *Producer
		want    []string
		wantNot []string
	}{
		{
			name: "broker timeout below the replication latency",
			p:    base(nil),
			want: []string{
				`librdkafka at 172.19.0.1, client.id "rdkafka" (acks=all, timeout 1 ms, not idempotent, max in flight 1): 8 of 10 batches re-sent, 6 written twice, 2 unconfirmed`,
				"The broker answered REQUEST_TIMED_OUT 8 times, after appending the batch, because the 1 ms timeout is below its replication latency (p50 4 ms, p99 9 ms).",
				"With enable.idempotence=true these re-sends would have been harmless; raising request.timeout.ms above the p99 latency (9 ms) would have avoided them.",
			},
			wantNot: []string{"in flight at once"},
		},
		{
			name: "broker timeout above the usual latency: a stall",
			p: base(func(p *Producer) {
				p.TimeoutsMillis = []int32{300}
				p.Overall.SucceededP50Millis, p.Overall.SucceededP99Millis = 0.4, 1.2
			}),
			want:    []string{"took p99 1.2 ms, within the 300 ms timeout: replication stalled", "With enable.idempotence=true"},
			wantNot: []string{"raising request.timeout.ms"},
		},
		{
			name: "broker timeout between p50 and p99",
			p: base(func(p *Producer) {
				p.TimeoutsMillis = []int32{5}
			}),
			want: []string{"the 5 ms timeout is above its usual replication latency (p50 4 ms) but below its slowest (p99 9 ms)", "raising request.timeout.ms above the p99 latency (9 ms)"},
		},
		{
			name: "broker timeout, nothing succeeded",
			p: base(func(p *Producer) {
				p.Overall.Succeeded = 0
			}),
			want: []string{"answered no request of this producer without error: its replication latency is above the 1 ms timeout", "raising request.timeout.ms above the broker's replication latency"},
		},
		{
			name: "written more than twice",
			p:    base(func(p *Producer) { p.MostCopies = 3 }),
			want: []string{"6 written more than once (up to 3 times)"},
		},
		{
			name: "client timeout, kgo",
			p: base(func(p *Producer) {
				p.SoftwareName, p.SoftwareVersion = "kgo", "v1.22.3"
				p.Causes = []CauseCount{{Cause: detect.CauseClientTimeout, Count: 8, MinGapMillis: 10000, MaxGapMillis: 10000}}
				p.Overall.P99Millis, p.Overall.MaxMillis = 12000, 15000
			}),
			want: []string{
				"kgo v1.22.3 at 172.19.0.1",
				"8 re-sends went out 10000 ms after the attempt before with no answer captured: the client's own timeout (kgo.ProduceRequestTimeout plus kgo.RequestTimeoutOverhead) expired, below the broker's slowest answers (p99 12000 ms, max 15000 ms).",
				"idempotent writes (without kgo.DisableIdempotentWrite)",
			},
		},
		{
			name: "connection closed, Java",
			p: base(func(p *Producer) {
				p.SoftwareName = "apache-kafka-java"
				p.Causes = []CauseCount{{Cause: detect.CauseConnectionClosed, Count: 2, MinGapMillis: 30000, MaxGapMillis: 30100}}
			}),
			want: []string{"2 re-sends went out on a new connection 30000-30100 ms after the attempt before", "the Java client closes a connection whose request got no answer within request.timeout.ms"},
		},
		{
			name: "leader moved: refused before the append",
			p: base(func(p *Producer) {
				p.ByVerdict = map[detect.Verdict]int64{detect.Single: 8}
				p.Causes = []CauseCount{{Cause: detect.CauseBrokerError, Error: "NOT_LEADER_OR_FOLLOWER", Count: 8}}
			}),
			want:    []string{"none written twice", "8 re-sends followed NOT_LEADER_OR_FOLLOWER: the partition's leader moved"},
			wantNot: []string{"would have been harmless", "REQUEST_TIMED_OUT"},
		},
		{
			name: "five in flight without idempotence",
			p:    base(func(p *Producer) { p.MaxInFlight = 5 }),
			want: []string{"With 5 requests in flight at once and no idempotence, a re-sent batch can also land after later ones; max.in.flight.requests.per.connection=1"},
		},
		{
			name: "idempotent, deduplicated",
			p: base(func(p *Producer) {
				p.ProducerID, p.Idempotent, p.MaxInFlight = 7, true, 5
				p.ByVerdict = map[detect.Verdict]int64{detect.Deduplicated: 8}
			}),
			want:    []string{"idempotent, producer id 7", "none written twice, 8 deduplicated by the broker", "Idempotence made these re-sends harmless"},
			wantNot: []string{"no idempotence", "enable.idempotence=true"},
		},
		{
			name: "acks=0",
			p: base(func(p *Producer) {
				p.Acks, p.MaxInFlight, p.Resent, p.Resends, p.Causes, p.ByVerdict = []int16{0}, 0, 0, 0, nil, nil
			}),
			want:    []string{"(acks=0, timeout 1 ms, not idempotent): 10 batches, none re-sent.", "With acks=0 the broker answers nothing"},
			wantNot: []string{"max in flight"},
		},
		{
			name: "retries disabled",
			p: base(func(p *Producer) {
				p.Resent, p.Resends, p.Causes, p.ByVerdict = 0, 0, nil, nil
				p.Unretried = []ErrorCount{{Error: "REQUEST_TIMED_OUT", Count: 3}}
			}),
			want: []string{"10 batches, none re-sent.", "3 batches answered REQUEST_TIMED_OUT were never sent again: retries look disabled (0) or ran out; the broker answers REQUEST_TIMED_OUT after the append"},
		},
		{
			name: "not a retry",
			p: base(func(p *Producer) {
				p.Causes = []CauseCount{{Cause: detect.CauseNotARetry, Count: 1}}
			}),
			want: []string{"1 send repeated a batch already acknowledged"},
		},
		{
			name: "software unknown, no client.id",
			p: base(func(p *Producer) {
				p.SoftwareName, p.ClientID = "", nil
			}),
			want: []string{"producer at 172.19.0.1 (acks=all", "With idempotence (enable.idempotence=true in most clients)", "raising the request timeout above"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Diagnose(tt.p)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("diagnosis lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(got, w) {
					t.Errorf("diagnosis says %q:\n%s", w, got)
				}
			}
		})
	}
	t.Run("nothing to say", func(t *testing.T) {
		p := base(func(p *Producer) { p.Resent, p.Resends, p.Causes, p.ByVerdict = 0, 0, nil, nil })
		if got := Diagnose(p); got != "" {
			t.Errorf("diagnosis of a producer with no re-send: %s", got)
		}
	})
}
