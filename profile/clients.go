package profile

import "strings"

// What kdupcap knows of each Kafka client library: the software name it
// sends in ApiVersions v3+ (KIP-511), its default client.id, and the names
// of the settings a diagnosis advises on, in the words of the client's own
// documentation. Each entry was checked in the client's source or docs
// (the versions named); the captures of testdata/ and of kafkatest show
// what they send.

// clientSettings names a client's own settings, so that a diagnosis says
// what to change in the words of the client's documentation. An empty
// setting means the client has none.
type clientSettings struct {
	// name is the client as a person names it ("librdkafka", "the Java
	// client"); software the names it sends in ApiVersions (lower case).
	name     string
	software []string
	// rdkafka: a wrapper of librdkafka (its settings are librdkafka's).
	rdkafka bool

	idempotence   string // turns idempotence on
	transactional string // makes the producer transactional
	acksAll       string // sets acks=all
	brokerTimeout string // sent as the request's timeout
	clientTimeout string // how long the client waits for an answer
	// closesOnTimeout: the client closes a connection whose request got
	// no answer within clientTimeout; closes says so in a sentence.
	closesOnTimeout bool
	closes          string
	inFlight        string // max requests in flight per connection
	retries         string
	// renumber says, for an idempotent producer whose records the log
	// holds twice because they were sent again under a new epoch or
	// producer ID, when this client does that and what its documentation
	// offers against it.
	renumber string
}

// librdkafkaSettings are librdkafka's (CONFIGURATION.md, INTRODUCTION.md
// "Idempotent Producer" and "Message timeout considerations",
// rdkafka_request.c and rdkafka_idempotence.c, master of 2026-07).
var librdkafkaSettings = clientSettings{
	name:            "librdkafka",
	software:        []string{"librdkafka"},
	rdkafka:         true,
	idempotence:     "enable.idempotence=true",
	transactional:   "transactional.id",
	acksAll:         "acks=all",
	brokerTimeout:   "request.timeout.ms",
	clientTimeout:   "socket.timeout.ms",
	closesOnTimeout: true,
	closes:          "librdkafka closes a connection whose request got no answer within socket.timeout.ms (or the message.timeout.ms left, if less)",
	inFlight:        "max.in.flight.requests.per.connection",
	retries:         "retries",
	renumber: "After messages time out (message.timeout.ms) or a batch fails with a sequence gap, librdkafka bumps the epoch and renumbers the messages it still holds " +
		"(KIP-360 \"drain and bump\"), and the requests that failed with them may already be in the log; " +
		"its documentation offers the transactional producer (transactional.id) for exactly-once delivery, " +
		"recommends to \"use a large message.timeout.ms to minimize the risk of timeouts\", and has enable.gapless.guarantee=true (experimental), " +
		"which stops the producer with a fatal error instead of renumbering after a batch fails for good (timed-out messages excepted)",
}

// clients lists the clients kdupcap names settings for; the first whose
// software name matches is taken.
var clients = []clientSettings{
	librdkafkaSettings,
	// confluent-kafka-go (kafka/config.go): software name
	// "confluent-kafka-go", version the librdkafka version; settings are
	// librdkafka's, in a kafka.ConfigMap.
	rdkafkaWrapper("confluent-kafka-go"),
	// confluent-kafka-python (src/confluent_kafka/src/confluent_kafka.c):
	// "confluent-kafka-python", version "<version>-rdkafka-<librdkafka
	// version>"; settings are librdkafka's, in the config dict.
	rdkafkaWrapper("confluent-kafka-python"),
	// confluent-kafka-dotnet (src/Confluent.Kafka/Library.cs):
	// "confluent-kafka-dotnet", version the librdkafka version; settings
	// are ProducerConfig properties (Config_gen.cs).
	rdkafkaWrapper("confluent-kafka-dotnet",
		"enable.idempotence", "EnableIdempotence",
		"transactional.id", "TransactionalId",
		"request.timeout.ms", "RequestTimeoutMs",
		"socket.timeout.ms", "SocketTimeoutMs",
		"message.timeout.ms", "MessageTimeoutMs",
		"max.in.flight.requests.per.connection", "MaxInFlight",
		"retries", "MessageSendMaxRetries",
		"enable.gapless.guarantee", "EnableGaplessGuarantee",
	),
	// The Java client (ProducerConfig, NetworkClient, TransactionManager):
	// "apache-kafka-java"; it closes a connection on a request timeout,
	// and since KIP-360 (2.5) bumps the epoch and rewrites its in-flight
	// batches under it (startSequencesAtBeginning).
	{
		name:            "the Java client",
		software:        []string{"apache-kafka-java"},
		idempotence:     "enable.idempotence=true",
		transactional:   "transactional.id",
		acksAll:         "acks=all",
		brokerTimeout:   "request.timeout.ms",
		clientTimeout:   "request.timeout.ms (with delivery.timeout.ms above it)",
		closesOnTimeout: true,
		closes:          "the Java client closes a connection whose request got no answer within request.timeout.ms",
		inFlight:        "max.in.flight.requests.per.connection",
		retries:         "retries",
		renumber: "The Java client (2.5+, KIP-360) bumps the epoch after a batch expires (delivery.timeout.ms) or is answered OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID, " +
			"and rewrites its batches in flight under the new epoch; a transactional producer (transactional.id) with read_committed consumers hides the aborted copies, " +
			"and a larger delivery.timeout.ms lets fewer batches expire",
	},
	// franz-go v1.22.3 (pkg/kgo config.go, sink.go): "kgo". A batch it
	// wrote is pinned to its producer ID, epoch and sequence on every
	// re-send (recBatch.pinned); it renumbers only what the broker refused.
	{
		name:            "kgo",
		software:        []string{"kgo", "franz-go"},
		idempotence:     "idempotent writes (without kgo.DisableIdempotentWrite)",
		transactional:   "kgo.TransactionalID",
		acksAll:         "kgo.RequiredAcks(kgo.AllISRAcks())",
		brokerTimeout:   "kgo.ProduceRequestTimeout",
		clientTimeout:   "kgo.ProduceRequestTimeout plus kgo.RequestTimeoutOverhead",
		closesOnTimeout: true,
		closes:          "kgo closes a connection whose request got no answer within kgo.ProduceRequestTimeout plus kgo.RequestTimeoutOverhead",
		inFlight:        "kgo.MaxProduceRequestsInflightPerBroker",
		retries:         "kgo.RecordRetries",
		renumber: "A batch kgo (v1.22.3) wrote is re-sent under the same producer ID, epoch and sequence; kgo renumbers under a new epoch only batches the broker refused " +
			"(OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID); records it failed (kgo.RecordDeliveryTimeout, kgo.RecordRetries) it does not send again, " +
			"so records under a new epoch were most likely produced again by the application after a failure; kgo.TransactionalID gives exactly-once delivery",
	},
	// IBM/sarama v1.61.1 (config.go, async_producer.go, broker.go):
	// "sarama"; it closes a connection after Net.ReadTimeout, and bumps
	// the epoch when it fails a batch to the application.
	{
		name:            "sarama",
		software:        []string{"sarama"},
		idempotence:     "Producer.Idempotent=true (with Net.MaxOpenRequests=1)",
		transactional:   "Producer.Transaction.ID",
		acksAll:         "Producer.RequiredAcks=sarama.WaitForAll",
		brokerTimeout:   "Producer.Timeout",
		clientTimeout:   "Net.ReadTimeout",
		closesOnTimeout: true,
		closes:          "sarama closes a connection whose request got no answer within Net.ReadTimeout",
		inFlight:        "Net.MaxOpenRequests",
		retries:         "Producer.Retry.Max",
		renumber: "When sarama fails a batch to the application (Producer.Retry.Max spent) it bumps the epoch, so records the application then produces again go out under the new epoch; " +
			"Producer.Transaction.ID makes the producer transactional",
	},
	// segmentio/kafka-go v0.4.51 (writer.go, client.go, transport.go):
	// sends no software name (ApiVersions v0); no idempotent producer;
	// one request at a time per connection, which it closes when the
	// WriteTimeout deadline passes; the request's timeout is half of it.
	{
		name:            "kafka-go",
		software:        []string{"kafka-go"},
		acksAll:         "RequiredAcks: kafka.RequireAll (the Writer's default is RequireNone, acks=0)",
		brokerTimeout:   "WriteTimeout (kafka-go sends half of it as the request's timeout)",
		clientTimeout:   "WriteTimeout",
		closesOnTimeout: true,
		closes:          "kafka-go closes a connection whose request got no answer within the Writer's WriteTimeout",
		retries:         "MaxAttempts",
	},
	// kafkajs 2.2.4 (src/network/requestQueue, src/producer, docs):
	// sends no software name (ApiVersions v2), Produce up to v7; a request
	// past requestTimeout is failed and retried on the same connection,
	// which stays open.
	{
		name:          "kafkajs",
		software:      []string{"kafkajs"},
		idempotence:   "idempotent: true",
		transactional: "transactionalId",
		acksAll:       "acks: -1 (the default of producer.send())",
		brokerTimeout: "the timeout of producer.send()",
		clientTimeout: "requestTimeout",
		closes:        "kafkajs keeps a connection open when a request passes requestTimeout",
		inFlight:      "maxInFlightRequests",
		retries:       "retry.retries",
	},
	// kafka-python (kafka/producer/kafka.py, kafka/conn.py): before 2.1.3
	// no software name (ApiVersions v0), from it "kafka-python";
	// request_timeout_ms is both the request's timeout and its own, after
	// which it closes the connection; idempotence from 2.2.
	{
		name:            "kafka-python",
		software:        []string{"kafka-python"},
		idempotence:     "enable_idempotence=True (kafka-python 2.2+)",
		transactional:   "transactional_id",
		acksAll:         "acks='all'",
		brokerTimeout:   "request_timeout_ms",
		clientTimeout:   "request_timeout_ms",
		closesOnTimeout: true,
		closes:          "kafka-python closes a connection whose request got no answer within request_timeout_ms",
		inFlight:        "max_in_flight_requests_per_connection",
		retries:         "retries",
	},
	// @platformatic/kafka (docs/base.md, docs/producer.md,
	// src/network/connection.ts): "platformatic-kafka"; requestTimeout
	// fails a request without closing its connection.
	{
		name:          "@platformatic/kafka",
		software:      []string{"platformatic-kafka"},
		idempotence:   "idempotent: true",
		transactional: "transactionalId",
		acksAll:       "acks: ProduceAcks.ALL on each send()",
		brokerTimeout: "timeout",
		clientTimeout: "requestTimeout",
		closes:        "@platformatic/kafka keeps a connection open when a request passes requestTimeout",
		inFlight:      "maxInflights",
		retries:       "retries",
	},
}

// genericSettings are the words used when the client is not known.
var genericSettings = clientSettings{
	name:          "the client",
	idempotence:   "idempotence (enable.idempotence=true in most clients)",
	transactional: "a transactional producer",
	acksAll:       "acks=all",
	brokerTimeout: "the request timeout",
	clientTimeout: "the client's own request timeout",
	closes:        "the client closes a connection after its own request timeout, or the broker closed it",
	inFlight:      "max in flight",
	retries:       "retries",
}

// rdkafkaWrapper is librdkafka's settings under the name of a wrapper,
// renamed where it has names of its own: renames holds pairs, a librdkafka
// property and the wrapper's name of it, each shown as "Name (property)".
func rdkafkaWrapper(software string, renames ...string) clientSettings {
	s := librdkafkaSettings
	s.name, s.software = software, []string{software}
	if len(renames) == 0 {
		return s
	}
	r := strings.NewReplacer(pairs(renames)...)
	rename := r.Replace
	for _, f := range []*string{&s.idempotence, &s.transactional, &s.brokerTimeout, &s.clientTimeout, &s.closes, &s.inFlight, &s.retries, &s.renumber} {
		*f = rename(*f)
	}
	return s
}

// pairs turns property/name pairs into strings.NewReplacer's old/new
// pairs: each property becomes "Name (property)".
func pairs(renames []string) []string {
	out := make([]string, 0, len(renames))
	for i := 0; i+1 < len(renames); i += 2 {
		out = append(out, renames[i], renames[i+1]+" ("+renames[i]+")")
	}
	return out
}

// settingsFor returns the settings of the client whose ApiVersions
// software name is software, generic names when it is not known.
func settingsFor(software string) clientSettings {
	s := strings.ToLower(strings.TrimSpace(software))
	for _, c := range clients {
		for _, name := range c.software {
			if s == name {
				return c
			}
		}
	}
	// Names a client may send with a prefix or suffix of its own.
	switch {
	case strings.Contains(s, "rdkafka"):
		return librdkafkaSettings
	case strings.Contains(s, "franz-go"):
		return settingsFor("kgo")
	}
	return genericSettings
}

// librdkafkaVersion is the librdkafka version a librdkafka wrapper carries,
// read off the software version it sends: confluent-kafka-go and
// confluent-kafka-dotnet send the librdkafka version itself,
// confluent-kafka-python "<its version>-rdkafka-<librdkafka version>";
// librdkafka its own. Empty when software is no librdkafka or the version
// does not say.
func librdkafkaVersion(software, version string) string {
	c := settingsFor(software)
	if !c.rdkafka || version == "" {
		return ""
	}
	if _, v, ok := strings.Cut(version, "-rdkafka-"); ok {
		return v
	}
	if strings.ToLower(strings.TrimSpace(software)) == "confluent-kafka-python" {
		return "" // a version of its own, without librdkafka's
	}
	return version
}
