package profile

import (
	"regexp"
	"strconv"
	"strings"
)

// Clients that send no software name in ApiVersions (kafka-python before
// 2.1.3, kafka-go, kafkajs; librdkafka before 1.4, the Java client before
// 2.4, sarama configured for an old Kafka version) are recognised, as a
// guess, from what they do send: their default client.id, and the API
// versions they use. Each rule names the client.id a client sets when the
// application sets none, checked in the client's source, and the highest
// ApiVersions and Produce versions the client can send: a connection that
// sent more is not that client, whatever its client.id says. A software
// name, when one was captured, is certain and no guess is made.

// inferRule recognises one client by its default client.id.
type inferRule struct {
	software string         // settingsFor's name of the client
	clientID *regexp.Regexp // the default client.id
	// needs, when set, must hold as well (for a client.id so plain that
	// it alone says little); it returns the extra evidence it used.
	needs func(e *inferEvidence) (string, bool)
	// maxApiVersions and maxProduce are the highest versions the client
	// sends; -1: any.
	maxApiVersions, maxProduce int16
}

// inferEvidence is what a producer's requests show of its client.
type inferEvidence struct {
	clientID *string
	// apiVersions: the highest ApiVersions version sent before produce
	// on any of its connections, -1 when none was captured; produce the
	// Produce versions of its requests, ascending.
	apiVersions int16
	produce     []int16
}

// inferRules are tried in order; the first that matches is the guess.
var inferRules = []inferRule{
	// kafka-python: KafkaProducer's client_id defaults to
	// "kafka-python-producer-<n>" (kafka/producer/kafka.py), other
	// clients' to "kafka-python-<version>" (kafka/client_async.py);
	// before 2.1.3 ApiVersions v0-v2 and Produce up to v8 (2.0.2 sends v7).
	{software: "kafka-python", clientID: regexp.MustCompile(`^kafka-python-(producer-[0-9]+|[0-9][0-9A-Za-z.+-]*)$`), maxApiVersions: 2, maxProduce: 8},
	// kafkajs: clientId defaults to "kafkajs" (src/network/connection.js);
	// ApiVersions v0-v2 and Produce v0-v7 (src/protocol/requests).
	{software: "kafkajs", clientID: regexp.MustCompile(`^kafkajs$`), maxApiVersions: 2, maxProduce: 7},
	// kafka-go: a Conn or Dialer without ClientID sends
	// "<program>@<host> (github.com/segmentio/kafka-go)"
	// (conn.go DefaultClientID); ApiVersions v0-v2, Produce v0-v8
	// (protocol/).
	{software: "kafka-go", clientID: regexp.MustCompile(`\(github\.com/segmentio/kafka-go\)$`), maxApiVersions: 2, maxProduce: 8},
	// kafka-go's Writer sends an empty client.id (Transport.ClientID), an
	// ApiVersions v0 and, against a broker of Kafka 2.4 or later, Produce
	// v8: an empty client.id alone says little, so all three are needed.
	{software: "kafka-go", clientID: regexp.MustCompile(`^$`), needs: kafkaGoWriter, maxApiVersions: 0, maxProduce: 8},
	// sarama: Config.ClientID defaults to "sarama" (config.go).
	{software: "sarama", clientID: regexp.MustCompile(`^sarama$`), maxApiVersions: -1, maxProduce: -1},
	// librdkafka: client.id defaults to "rdkafka" (CONFIGURATION.md).
	{software: "librdkafka", clientID: regexp.MustCompile(`^rdkafka$`), maxApiVersions: -1, maxProduce: -1},
	// franz-go: kgo.ClientID defaults to "kgo".
	{software: "kgo", clientID: regexp.MustCompile(`^kgo$`), maxApiVersions: -1, maxProduce: -1},
	// The Java client: client.id defaults to "producer-<n>" (without
	// transactional.id; ProducerConfig).
	{software: "apache-kafka-java", clientID: regexp.MustCompile(`^producer-[0-9]+$`), maxApiVersions: -1, maxProduce: -1},
}

// kafkaGoWriter holds for what kafka-go's Writer sends besides its empty
// client.id: an ApiVersions v0 and Produce v8.
func kafkaGoWriter(e *inferEvidence) (string, bool) {
	if e.apiVersions != 0 || len(e.produce) == 0 || e.produce[len(e.produce)-1] != 8 {
		return "", false
	}
	return "ApiVersions v0 and Produce v8", true
}

// inferSoftware guesses the client of a producer that sent no software
// name: the settingsFor name of the client and what the guess rests on
// ("client.id \"kafkajs\", ApiVersions v2 and Produce v7"); empty when no
// rule matches or the versions rule the match out.
func inferSoftware(e *inferEvidence) (software, from string) {
	if e.clientID == nil {
		return "", ""
	}
	id := *e.clientID
	for i := range inferRules {
		r := &inferRules[i]
		if !r.clientID.MatchString(id) {
			continue
		}
		if r.maxApiVersions >= 0 && e.apiVersions > r.maxApiVersions {
			continue
		}
		if r.maxProduce >= 0 && len(e.produce) > 0 && e.produce[len(e.produce)-1] > r.maxProduce {
			continue
		}
		from := "client.id " + strconv.Quote(id)
		if r.needs != nil {
			extra, ok := r.needs(e)
			if !ok {
				continue
			}
			return r.software, from + ", " + extra
		}
		var vs []string
		if e.apiVersions >= 0 {
			vs = append(vs, "ApiVersions v"+strconv.Itoa(int(e.apiVersions)))
		}
		if n := len(e.produce); n > 0 {
			vs = append(vs, "Produce "+versionsText(e.produce))
		}
		switch len(vs) {
		case 1:
			from += " and " + vs[0]
		case 2:
			from += ", " + vs[0] + " and " + vs[1]
		}
		return r.software, from
	}
	return "", ""
}

// versionsText is "v7" or "v7/v9".
func versionsText(vs []int16) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = "v" + strconv.Itoa(int(v))
	}
	return strings.Join(parts, "/")
}

// GuessText says p's SoftwareGuess as the guess it is: `likely kafkajs
// (inferred from client.id "kafkajs", ApiVersions v2 and Produce v7)`;
// empty when there is none.
func GuessText(p *Producer) string {
	if p.SoftwareGuess == "" {
		return ""
	}
	name := settingsFor(p.SoftwareGuess).name
	if name == genericSettings.name {
		name = p.SoftwareGuess
	}
	return "likely " + name + " (inferred from " + p.InferredFrom + ")"
}
