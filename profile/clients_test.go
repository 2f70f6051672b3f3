package profile

import (
	"strings"
	"testing"
)

// TestSettingsFor: each client's software name (as it sends it in
// ApiVersions) finds its own setting names; unknown names get the generic
// words, and a name that merely contains another client's is not taken
// for it.
func TestSettingsFor(t *testing.T) {
	tests := []struct {
		software                                                     string
		name                                                         string
		idempotence, brokerTimeout, clientTimeout, inFlight, retries string
		closesOnTimeout                                              bool
	}{
		{"librdkafka", "librdkafka", "enable.idempotence=true", "request.timeout.ms", "socket.timeout.ms", "max.in.flight.requests.per.connection", "retries", true},
		{"confluent-kafka-go", "confluent-kafka-go", "enable.idempotence=true", "request.timeout.ms", "socket.timeout.ms", "max.in.flight.requests.per.connection", "retries", true},
		{"confluent-kafka-python", "confluent-kafka-python", "enable.idempotence=true", "request.timeout.ms", "socket.timeout.ms", "max.in.flight.requests.per.connection", "retries", true},
		{"confluent-kafka-dotnet", "confluent-kafka-dotnet", "EnableIdempotence (enable.idempotence)=true", "RequestTimeoutMs (request.timeout.ms)",
			"SocketTimeoutMs (socket.timeout.ms)", "MaxInFlight (max.in.flight.requests.per.connection)", "MessageSendMaxRetries (retries)", true},
		{"apache-kafka-java", "the Java client", "enable.idempotence=true", "request.timeout.ms", "request.timeout.ms (with delivery.timeout.ms above it)", "max.in.flight.requests.per.connection", "retries", true},
		{"kgo", "kgo", "idempotent writes (without kgo.DisableIdempotentWrite)", "kgo.ProduceRequestTimeout", "kgo.ProduceRequestTimeout plus kgo.RequestTimeoutOverhead", "kgo.MaxProduceRequestsInflightPerBroker", "kgo.RecordRetries", true},
		{"sarama", "sarama", "Producer.Idempotent=true (with Net.MaxOpenRequests=1)", "Producer.Timeout", "Net.ReadTimeout", "Net.MaxOpenRequests", "Producer.Retry.Max", true},
		{"kafka-go", "kafka-go", "", "WriteTimeout (kafka-go sends half of it as the request's timeout)", "WriteTimeout", "", "MaxAttempts", true},
		{"kafkajs", "kafkajs", "idempotent: true", "the timeout of producer.send()", "requestTimeout", "maxInFlightRequests", "retry.retries", false},
		{"kafka-python", "kafka-python", "enable_idempotence=True (kafka-python 2.2+)", "request_timeout_ms", "request_timeout_ms", "max_in_flight_requests_per_connection", "retries", true},
		{"platformatic-kafka", "@platformatic/kafka", "idempotent: true", "timeout", "requestTimeout", "maxInflights", "retries", false},
		{"LibRdKafka", "librdkafka", "enable.idempotence=true", "request.timeout.ms", "socket.timeout.ms", "max.in.flight.requests.per.connection", "retries", true},
		{"my-rdkafka-fork", "librdkafka", "enable.idempotence=true", "request.timeout.ms", "socket.timeout.ms", "max.in.flight.requests.per.connection", "retries", true},
		{"kgo-orders", "the client", "idempotence (enable.idempotence=true in most clients)", "the request timeout", "the client's own request timeout", "max in flight", "retries", false},
		{"", "the client", "idempotence (enable.idempotence=true in most clients)", "the request timeout", "the client's own request timeout", "max in flight", "retries", false},
	}
	for _, tt := range tests {
		t.Run(tt.software, func(t *testing.T) {
			c := settingsFor(tt.software)
			got := []string{c.name, c.idempotence, c.brokerTimeout, c.clientTimeout, c.inFlight, c.retries}
			want := []string{tt.name, tt.idempotence, tt.brokerTimeout, tt.clientTimeout, tt.inFlight, tt.retries}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("field %d is %q, want %q", i, got[i], want[i])
				}
			}
			if c.closesOnTimeout != tt.closesOnTimeout {
				t.Errorf("closesOnTimeout %v, want %v", c.closesOnTimeout, tt.closesOnTimeout)
			}
			if c.closes == "" || c.acksAll == "" || c.transactional == "" && c.name != "kafka-go" {
				t.Errorf("closes %q, acksAll %q, transactional %q: a client with no words for them", c.closes, c.acksAll, c.transactional)
			}
		})
	}
	// Every client's renamed words mention only its own names: the
	// dotnet wrapper never shows a bare librdkafka property.
	d := settingsFor("confluent-kafka-dotnet")
	if !strings.Contains(d.renumber, "TransactionalId (transactional.id)") || !strings.Contains(d.renumber, "MessageTimeoutMs (message.timeout.ms)") ||
		!strings.Contains(d.renumber, "EnableGaplessGuarantee (enable.gapless.guarantee)") {
		t.Errorf("dotnet renumber advice not in its own names: %s", d.renumber)
	}
}

// TestLibrdkafkaVersion: the librdkafka version a wrapper carries, from the
// software version it sends.
func TestLibrdkafkaVersion(t *testing.T) {
	tests := []struct{ software, version, want string }{
		{"librdkafka", "2.0.2", "2.0.2"},
		{"confluent-kafka-go", "2.11.1", "2.11.1"},
		{"confluent-kafka-dotnet", "2.11.1", "2.11.1"},
		{"confluent-kafka-python", "2.11.0-rdkafka-2.11.1", "2.11.1"},
		{"confluent-kafka-python", "2.11.0", ""}, // its own version only
		{"kgo", "v1.22.3", ""},
		{"librdkafka", "", ""},
	}
	for _, tt := range tests {
		if got := librdkafkaVersion(tt.software, tt.version); got != tt.want {
			t.Errorf("librdkafkaVersion(%q, %q) = %q, want %q", tt.software, tt.version, got, tt.want)
		}
	}
	p := &Producer{SoftwareName: "confluent-kafka-python", SoftwareVersion: "2.11.0-rdkafka-2.11.1", LibrdkafkaVersion: "2.11.1"}
	if got := SoftwareText(p); got != "confluent-kafka-python 2.11.0 (librdkafka 2.11.1)" {
		t.Errorf("SoftwareText %q", got)
	}
	p = &Producer{SoftwareName: "confluent-kafka-go", SoftwareVersion: "2.11.1", LibrdkafkaVersion: "2.11.1"}
	if got := SoftwareText(p); got != "confluent-kafka-go (librdkafka 2.11.1)" {
		t.Errorf("SoftwareText %q", got)
	}
	p = &Producer{SoftwareName: "librdkafka", SoftwareVersion: "2.0.2", LibrdkafkaVersion: "2.0.2"}
	if got := SoftwareText(p); got != "librdkafka 2.0.2" {
		t.Errorf("SoftwareText %q", got)
	}
}
