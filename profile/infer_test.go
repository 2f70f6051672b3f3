package profile

import "testing"

// TestInferSoftware: each rule recognises its client's default client.id,
// with the versions it sends, and each has a case its false positive would
// fail: a client.id that only looks like the default, or versions the
// client never sends.
func TestInferSoftware(t *testing.T) {
	s := func(v string) *string { return &v }
	tests := []struct {
		name        string
		clientID    *string
		apiVersions int16
		produce     []int16
		want, from  string
	}{
		{"kafka-python producer", s("kafka-python-producer-1"), 0, []int16{7}, "kafka-python", `client.id "kafka-python-producer-1", ApiVersions v0 and Produce v7`},
		{"kafka-python client", s("kafka-python-2.0.2"), 0, []int16{7}, "kafka-python", `client.id "kafka-python-2.0.2", ApiVersions v0 and Produce v7`},
		{"kafka-python id, ApiVersions v3: not kafka-python 2.0", s("kafka-python-producer-1"), 3, []int16{7}, "", ""},
		{"kafka-python-ish id of an app", s("kafka-python-orders"), 0, []int16{7}, "", ""},
		{"kafkajs", s("kafkajs"), 2, []int16{7}, "kafkajs", `client.id "kafkajs", ApiVersions v2 and Produce v7`},
		{"kafkajs, no ApiVersions captured", s("kafkajs"), -1, []int16{7}, "kafkajs", `client.id "kafkajs" and Produce v7`},
		{"kafkajs id, Produce v9: kafkajs sends up to v7", s("kafkajs"), 2, []int16{9}, "", ""},
		{"kafkajs prefix of an app's id", s("kafkajs-orders"), 2, []int16{7}, "", ""},
		{"kafka-go Conn default", s("orders@host1 (github.com/segmentio/kafka-go)"), 0, []int16{8}, "kafka-go", `client.id "orders@host1 (github.com/segmentio/kafka-go)", ApiVersions v0 and Produce v8`},
		{"kafka-go Writer: empty, v0, Produce v8", s(""), 0, []int16{8}, "kafka-go", `client.id "", ApiVersions v0 and Produce v8`},
		{"empty id, Produce v7: kafka-python or anyone", s(""), 0, []int16{7}, "", ""},
		{"empty id, ApiVersions v2", s(""), 2, []int16{8}, "", ""},
		{"empty id, no ApiVersions", s(""), -1, []int16{8}, "", ""},
		{"sarama", s("sarama"), 0, []int16{3}, "sarama", `client.id "sarama", ApiVersions v0 and Produce v3`},
		{"rdkafka", s("rdkafka"), -1, []int16{7}, "librdkafka", `client.id "rdkafka" and Produce v7`},
		{"kgo", s("kgo"), -1, []int16{9}, "kgo", `client.id "kgo" and Produce v9`},
		{"Java", s("producer-3"), 2, []int16{7}, "apache-kafka-java", `client.id "producer-3", ApiVersions v2 and Produce v7`},
		{"Java-like of an app", s("producer-orders"), 2, []int16{7}, "", ""},
		{"unknown id", s("orders-service"), 2, []int16{7}, "", ""},
		{"null client.id", nil, 2, []int16{7}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, from := inferSoftware(&inferEvidence{clientID: tt.clientID, apiVersions: tt.apiVersions, produce: tt.produce})
			if got != tt.want || from != tt.from {
				t.Errorf("inferred %q from %q, want %q from %q", got, from, tt.want, tt.from)
			}
		})
	}
}

// TestProfilerInfers: Producers guesses the client of a producer that sent
// no software name, from its client.id and the versions decode recorded,
// and never guesses over a software name: a kgo producer named
// "kafkajs-orders" or even "kafkajs" is kgo, for certain.
func TestProfilerInfers(t *testing.T) {
	s := func(v string) *string { return &v }
	tests := []struct {
		name               string
		clientID           *string
		software           string
		apiVersions        int16 // -1: none sent
		produce            int16
		wantGuess, wantTxt string
	}{
		{"kafkajs", s("kafkajs"), "", 2, 7, "kafkajs", `likely kafkajs (inferred from client.id "kafkajs", ApiVersions v2 and Produce v7)`},
		{"kgo named kafkajs-orders", s("kafkajs-orders"), "kgo", 3, 9, "", ""},
		{"kgo named kafkajs", s("kafkajs"), "kgo", 3, 9, "", ""},
		{"kafka-go writer", s(""), "", 0, 8, "kafka-go", `likely kafka-go (inferred from client.id "", ApiVersions v0 and Produce v8)`},
		{"Java before 2.4", s("producer-1"), "", 2, 7, "apache-kafka-java", `likely the Java client (inferred from client.id "producer-1", ApiVersions v2 and Produce v7)`},
		{"unknown", s("orders"), "", 2, 7, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := *conn1
			c.ClientSoftwareName = tt.software
			if tt.software != "" {
				c.ClientSoftwareVersion = "v1.22.3"
			}
			c.ApiVersionsSent, c.ApiVersionsVersion = tt.apiVersions >= 0, max(tt.apiVersions, 0)
			x := ex(&c, 1, 0, 2, 0, 0, plain(1))
			x.ClientID, x.Version = tt.clientID, tt.produce
			pr := New(Options{})
			pr.Produce(x)
			ps := pr.Producers()
			if len(ps) != 1 {
				t.Fatalf("%d producers", len(ps))
			}
			p := &ps[0]
			if p.SoftwareGuess != tt.wantGuess || GuessText(p) != tt.wantTxt {
				t.Errorf("guess %q %q, want %q %q", p.SoftwareGuess, GuessText(p), tt.wantGuess, tt.wantTxt)
			}
			if tt.software != "" && (p.SoftwareName != tt.software || p.InferredFrom != "") {
				t.Errorf("software %q inferred from %q: a software name is certain", p.SoftwareName, p.InferredFrom)
			}
			if want := []int16{tt.produce}; len(p.ProduceVersions) != 1 || p.ProduceVersions[0] != want[0] {
				t.Errorf("produce versions %v", p.ProduceVersions)
			}
			if (len(p.ApiVersions) == 1) != (tt.apiVersions >= 0) {
				t.Errorf("api versions %v", p.ApiVersions)
			}
		})
	}
}
