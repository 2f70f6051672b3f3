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
				"With enable.idempotence=true these re-sends would have been harmless; raising request.timeout.ms above the p99 latency (9 ms) would have avoided the REQUEST_TIMED_OUT answers.",
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
			name: "connection closed, no end captured",
			p: base(func(p *Producer) {
				p.SoftwareName = "apache-kafka-java"
				p.Causes = []CauseCount{{Cause: detect.CauseConnectionClosed, Count: 2, MinGapMillis: 30000, MaxGapMillis: 30100}}
			}),
			want: []string{"2 re-sends went out on a new connection 30000-30100 ms after the attempt before, whose connection ended with no answer captured; the capture shows no FIN or RST of it, so it does not show who closed it."},
			// Nobody is known to have closed it: no client is blamed.
			wantNot: []string{"closes a connection", "Look at the broker's side"},
		},
		{
			name: "client timeout, the client closed the connection",
			p: base(func(p *Producer) {
				p.Causes = []CauseCount{{Cause: detect.CauseClientTimeout, Error: "client FIN", Count: 3, MinGapMillis: 60000, MaxGapMillis: 60020,
					Ended: 3, MinEndMillis: 60000, MaxEndMillis: 60010, MinAfterEndMillis: 1, MaxAfterEndMillis: 10}}
				p.Overall.P99Millis, p.Overall.MaxMillis = 80000, 90000
			}),
			want: []string{
				"3 re-sends went out on a new connection 60000-60020 ms after the attempt before: the client ended the old connection (client FIN) 60000-60010 ms after the request with no answer captured, after its own timeout (socket.timeout.ms), below the broker's slowest answers (p99 80000 ms, max 90000 ms).",
				"raising socket.timeout.ms above the broker's p99 latency (80000 ms) would have avoided the re-sends after the client's timeout",
			},
			wantNot: []string{"not the client's timeout"},
		},
		{
			name: "client timeout above p99, below max",
			p: base(func(p *Producer) {
				p.Causes = []CauseCount{{Cause: detect.CauseClientTimeout, Count: 3, MinGapMillis: 60000, MaxGapMillis: 60000}}
				p.Overall.P99Millis, p.Overall.MaxMillis = 100, 90000
			}),
			want:    []string{"raising socket.timeout.ms above the broker's slowest answers (90000 ms) would have avoided the re-sends after the client's timeout"},
			wantNot: []string{"above the broker's p99 latency"},
		},
		{
			name: "client timeout the latency does not explain",
			p: base(func(p *Producer) {
				p.Causes = []CauseCount{{Cause: detect.CauseClientTimeout, Count: 3, MinGapMillis: 60000, MaxGapMillis: 60000}}
			}),
			want:    []string{"the client's own timeout (socket.timeout.ms) expired, although the broker answered every other request captured within 9.5 ms: these got no answer at all."},
			wantNot: []string{"raising socket.timeout.ms", "below the broker's slowest answers"},
		},
		{
			name: "client timeout with a client FIN, kafkajs keeps connections open",
			p: base(func(p *Producer) {
				id := "kafkajs"
				p.SoftwareName, p.ClientID, p.SoftwareGuess, p.InferredFrom = "", &id, "kafkajs", `client.id "kafkajs", ApiVersions v2 and Produce v7`
				p.Causes = []CauseCount{{Cause: detect.CauseClientTimeout, Error: "client FIN", Count: 1, MinGapMillis: 30000, MaxGapMillis: 30000}}
			}),
			want: []string{
				`If this is kafkajs, as client.id "kafkajs", ApiVersions v2 and Produce v7 suggest (it sent no software name), the settings named below are kafkajs's.`,
				"the client ended the old connection (client FIN) with no answer captured; kafkajs keeps a connection open when a request passes requestTimeout, so something else made it close the connection",
				"With idempotent: true these re-sends would have been harmless",
			},
			wantNot: []string{"enable.idempotence", "socket.timeout.ms"},
		},
		{
			name: "broker reset the connection: not the client's timeout",
			p: base(func(p *Producer) {
				p.Causes = []CauseCount{{Cause: detect.CauseConnectionClosed, Error: "broker RST", Count: 2, MinGapMillis: 250, MaxGapMillis: 320,
					Ended: 2, MinEndMillis: 150, MaxEndMillis: 200, MinAfterEndMillis: 100, MaxAfterEndMillis: 120}}
			}),
			want: []string{
				"2 re-sends followed the broker's side: it reset the connection (broker RST) 150-200 ms after the request with no answer captured, and the client re-sent 100-120 ms after that (250-320 ms after the attempt before): not the client's timeout.",
				"Look at the broker's side at those times: its logs, and what closes connections in front of it (connections.max.idle.ms on the broker, a load balancer's or proxy's idle timeout).",
			},
			wantNot: []string{"librdkafka closes", "socket.timeout.ms"},
		},
		{
			name: "broker FIN, end time unknown",
			p: base(func(p *Producer) {
				p.Causes = []CauseCount{{Cause: detect.CauseConnectionClosed, Error: "broker FIN", Count: 1, MinGapMillis: 900, MaxGapMillis: 900}}
			}),
			want:    []string{"1 re-send followed the broker's side: it closed the connection (broker FIN) with no answer captured, and the client re-sent 900 ms after the attempt before: not the client's timeout."},
			wantNot: []string{"librdkafka closes"},
		},
		{
			name: "answer lost, not idempotent",
			p: base(func(p *Producer) {
				p.Causes = []CauseCount{{Cause: detect.CauseAnswerLost, Error: "broker RST", Count: 4, MinGapMillis: 300, MaxGapMillis: 400,
					Ended: 4, MinEndMillis: 5, MaxEndMillis: 12, MinAfterEndMillis: 250, MaxAfterEndMillis: 390}}
			}),
			want: []string{
				"4 re-sends followed an answer the broker reset away 5-12 ms later (the client never read it).",
				"With enable.idempotence=true these re-sends would have been harmless.",
				"Look at the broker's side",
			},
		},
		{
			name: "answer lost, idempotent, deduplicated",
			p: base(func(p *Producer) {
				p.ProducerID, p.Idempotent = 7, true
				p.ByVerdict = map[detect.Verdict]int64{detect.Deduplicated: 8}
				p.Causes = []CauseCount{{Cause: detect.CauseAnswerLost, Error: "broker RST", Count: 8, MinGapMillis: 300, MaxGapMillis: 400,
					Ended: 8, MinEndMillis: 3, MaxEndMillis: 3}}
			}),
			want:    []string{"8 re-sends followed an answer the broker reset away 3 ms later (the client never read it), and the broker deduplicated them."},
			wantNot: []string{"Idempotence made these re-sends harmless", "would have been harmless"},
		},
		{
			name: "idempotent, records twice under a new epoch (librdkafka)",
			p: base(func(p *Producer) {
				p.ProducerID, p.Idempotent = 7, true
				p.ByVerdict = map[detect.Verdict]int64{detect.Duplicated: 3, detect.Deduplicated: 5}
				p.Causes = []CauseCount{{Cause: detect.CauseClientTimeout, Error: "client FIN", Count: 8, MinGapMillis: 60000, MaxGapMillis: 60000}}
				p.Renumbered = 3
				p.Changes = []ChangeCount{{Change: detect.ProducerChangeEpoch, ProducerID: 7, ToProducerID: 7, Epoch: 0, ToEpoch: 1,
					Cause: detect.CauseClientTimeout, Error: "client FIN", Count: 3, Duplicated: 3}}
			}),
			want: []string{
				"Idempotence is on, yet the log holds records twice: the producer sent the records of 3 batches again under a new epoch (epoch 0 -> 1 of producer ID 7) after the client's own timeout (client FIN), and the broker deduplicates only within one producer ID and epoch.",
				"librdkafka bumps the epoch",
				"offers the transactional producer (transactional.id) for exactly-once delivery",
				`"use a large message.timeout.ms to minimize the risk of timeouts"`,
				"enable.gapless.guarantee=true (experimental)",
			},
			wantNot: []string{"harmless", "no idempotence"},
		},
		{
			name: "idempotent, new producer ID, not confirmed (Java)",
			p: base(func(p *Producer) {
				p.SoftwareName = "apache-kafka-java"
				p.ProducerID, p.Idempotent = 7, true
				p.ByVerdict = map[detect.Verdict]int64{detect.Unconfirmed: 1}
				p.Resent, p.Resends = 1, 1
				p.Causes = []CauseCount{{Cause: detect.CauseBrokerError, Error: "OUT_OF_ORDER_SEQUENCE_NUMBER", Count: 1}}
				p.Renumbered = 1
				p.Changes = []ChangeCount{{Change: detect.ProducerChangeID, ProducerID: 7, ToProducerID: 9, Epoch: 0, ToEpoch: 0,
					Cause: detect.CauseBrokerError, Error: "OUT_OF_ORDER_SEQUENCE_NUMBER", Count: 1}}
			}),
			want: []string{
				"Idempotence is on, yet a new producer of the same client (another instance: a restart, or the application giving up on the first) sent the records of 1 batch again under a new producer ID (7 -> 9) after OUT_OF_ORDER_SEQUENCE_NUMBER: the broker deduplicates only within one producer ID and epoch, so the log may hold them twice.",
				"The Java client (2.5+, KIP-360) bumps the epoch",
			},
			wantNot: []string{"harmless", "log holds records twice"},
		},
		{
			name: "idempotent kgo renumbered: kgo's own account",
			p: base(func(p *Producer) {
				p.SoftwareName, p.SoftwareVersion = "kgo", "v1.22.3"
				p.ProducerID, p.Idempotent = 7, true
				p.ByVerdict = map[detect.Verdict]int64{detect.Duplicated: 1}
				p.Renumbered = 1
				p.Changes = []ChangeCount{{Change: detect.ProducerChangeEpoch, ProducerID: 7, ToProducerID: 7, Epoch: 2, ToEpoch: 3, Count: 1, Duplicated: 1}}
			}),
			want:    []string{"under a new epoch (epoch 2 -> 3 of producer ID 7), and the broker", "A batch kgo (v1.22.3) wrote is re-sent under the same producer ID, epoch and sequence"},
			wantNot: []string{"harmless"},
		},
		{
			name: "idempotent, written twice: never harmless",
			p: base(func(p *Producer) {
				p.ProducerID, p.Idempotent = 7, true
				p.ByVerdict = map[detect.Verdict]int64{detect.Duplicated: 1, detect.Deduplicated: 7}
			}),
			wantNot: []string{"harmless"},
		},
		{
			name: "kafka-go guessed, acks=0",
			p: base(func(p *Producer) {
				empty := ""
				p.SoftwareName, p.ClientID, p.SoftwareGuess, p.InferredFrom = "", &empty, "kafka-go", `client.id "", ApiVersions v0 and Produce v8`
				p.Acks, p.MaxInFlight, p.Resent, p.Resends, p.Causes, p.ByVerdict = []int16{0}, 0, 0, 0, nil, nil
			}),
			want: []string{
				`If this is kafka-go, as client.id "", ApiVersions v0 and Produce v8 suggest (it sent no software name), the settings named below are kafka-go's.`,
				"With acks=0 the broker answers nothing: the client never re-sends and never learns of a lost write; RequiredAcks: kafka.RequireAll (the Writer's default is RequireNone, acks=0) makes it answer (kafka-go has no idempotent producer, so a re-send can then write a batch twice).",
			},
		},
		{
			name: "kafka-go guessed, duplicates: no idempotence to offer",
			p: base(func(p *Producer) {
				empty := ""
				p.SoftwareName, p.ClientID, p.SoftwareGuess, p.InferredFrom = "", &empty, "kafka-go", `client.id "", ApiVersions v0 and Produce v8`
				p.MaxInFlight = 5
			}),
			want:    []string{"Kafka-go has no idempotent producer, so each re-send can write a batch twice; raising WriteTimeout (kafka-go sends half of it as the request's timeout) above the p99 latency (9 ms)"},
			wantNot: []string{"in flight at once", "enable.idempotence"},
		},
		{
			name: "sarama names",
			p: base(func(p *Producer) {
				p.SoftwareName, p.SoftwareVersion, p.MaxInFlight = "sarama", "v1.61.1", 5
				p.Unretried = []ErrorCount{{Error: "NOT_ENOUGH_REPLICAS", Count: 1}}
			}),
			want: []string{"With Producer.Idempotent=true (with Net.MaxOpenRequests=1) these re-sends would have been harmless; raising Producer.Timeout above",
				"Net.MaxOpenRequests=1 or idempotence keeps the order", "1 batch answered NOT_ENOUGH_REPLICAS was never sent again: Producer.Retry.Max look disabled"},
		},
		{
			name: "confluent-kafka-python names its librdkafka",
			p: base(func(p *Producer) {
				p.SoftwareName, p.SoftwareVersion, p.LibrdkafkaVersion = "confluent-kafka-python", "2.11.0-rdkafka-2.11.1", "2.11.1"
			}),
			want: []string{`confluent-kafka-python 2.11.0 (librdkafka 2.11.1) at 172.19.0.1`, "With enable.idempotence=true", "raising request.timeout.ms"},
		},
		{
			name: "confluent-kafka-dotnet names its own properties",
			p: base(func(p *Producer) {
				p.SoftwareName, p.SoftwareVersion, p.LibrdkafkaVersion = "confluent-kafka-dotnet", "2.11.1", "2.11.1"
			}),
			want: []string{`confluent-kafka-dotnet (librdkafka 2.11.1) at`, "With EnableIdempotence (enable.idempotence)=true these re-sends", "raising RequestTimeoutMs (request.timeout.ms) above"},
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
			// Never one thing twice.
			seen := map[string]bool{}
			for _, sentence := range strings.SplitAfter(got, ". ") {
				if seen[sentence] {
					t.Errorf("diagnosis says %q twice:\n%s", sentence, got)
				}
				seen[sentence] = true
			}
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
