// Package kafkatest makes real Kafka produce traffic with known ground truth,
// for kdupcap's end-to-end tests. It sits beside the flow, not in it: it runs
// an in-process kfake broker on 127.0.0.1, real producers against it, tcpdump
// on loopback to capture what they send, and reads the broker's log back
// afterwards so that tests derive what kdupcap must find from the log itself,
// never from a previous run.
//
// # What it takes and gives
//
//   - [NewCluster] starts a one-broker kfake cluster, [NewClusterWith] one of
//     [ClusterConfig].Brokers brokers, each listener wrapping every
//     connection: for the produce requests a [Fault] selects, it answers
//     REQUEST_TIMED_OUT after the request's TimeoutMillis while keeping the
//     offset appended at (as Kafka's expired DelayedProduce does), delays the
//     response (past the client's timeout: the client closes), or ends the
//     connection after the append: unanswered with a clean FIN
//     ([CloseAfterAppend]) or an RST ([ResetAfterAppend]), or answered, then
//     reset, with the answer lost past the capture point
//     ([AnswerThenReset]: an in-harness TCP proxy in front of the brokers
//     drops it; [ProxyLeg] maps the proxy's legs, the clients a capture
//     shows, to the real clients). [Cluster.Events] lists every fault
//     applied, with the time the connection ended; [Cluster.Exchanges]
//     every produce request and kfake's answer (NOT_LEADER_OR_FOLLOWER
//     included). [Cluster.MoveLeaders] moves partition leaders between
//     brokers at random intervals ([LeaderMoves]), [Cluster.Moves] lists the
//     moves.
//   - [StartCapture] runs tcpdump on loopback for a port,
//     [StartCapturePorts] for all of a cluster's [Cluster.Ports] in one file;
//     [Capture.Stop] checks that the kernel dropped nothing. [CanCapture] says
//     why it cannot run here (testenv decides whether that skips or fails).
//   - [Produce] writes distinct values through a kgo producer configured by a
//     [Producer] (kgo re-sends the same bytes on a retry); [KcatProduce],
//     [SaramaProduce], [KafkaGoProduce] and [AppTwiceProduce] write through
//     kcat, sarama, kafka-go or an application that produces some records
//     twice, each doc saying what that client does on a retry. [ReadBack]
//     returns a topic's batches and records, and which values the log holds
//     more than once, reading every partition from its current leader.
//   - [RdkafkaProduce] writes through librdkafka 2.11 (confluent-kafka-go,
//     built with cgo from internal/rdkafka, a module of its own, so kdupcap
//     stays static; [RdkafkaErr] says why it cannot run here);
//     [RdkafkaEpochBump] and [RdkafkaRebatch] are recipes that make it
//     write records twice (an idempotent epoch bump, a re-batched retry).
//   - [KafkajsProduce], [PlatformaticProduce] and [KafkaPythonPlainProduce]
//     write through kafkajs 2.2.4 and @platformatic/kafka 1.35.0 (Node.js
//     programs in js/, their packages pinned by js/package-lock.json and
//     installed by `npm ci`) and Debian's kafka-python 2.0.2 in plaintext;
//     [KafkajsErr], [PlatformaticErr] and [KafkaPythonErr] say why one
//     cannot run here; each config's doc says what that client sends.
//   - [Run] does all of it for one [Scenario] (its brokers, faults, proxy
//     and leader moves) and returns a [Result].
//   - [BulkCapture] captures kgo producers writing a large capture of
//     ordinary traffic (a [Bulk]: producers, rate, a few requests answered
//     REQUEST_TIMED_OUT after the append) and returns the re-sends the
//     broker's exchanges and log show ([BulkResult]); [Recut] re-cuts a
//     capture's segments to a smaller MTU. cmd/realcap writes both with a
//     manifest for kdupcap's benchmarks (make bench, bench-big).
//
// # Imports
//
// It imports kfake, kgo (and its sasl/plain and sasl/scram), kmsg, sarama,
// kafka-go and gopacket's pcapgo (Recut), and of kdupcap's own packages
// only internal/kwire and internal/testenv (cmd/realcap internal/gencap
// too, for the bench's manifest); it must never import kdupcap's stages (capture, decode,
// detect, profile, report, pipeline): the harness judges them, it must not
// share their code or their mistakes.
//
// # Bytes and bad input
//
// The connection wrapper copies what it needs from the bytes it sees; a frame
// it cannot parse (or over 64 MiB) is passed through unchanged and not
// faulted. Everything here is for tests: network traffic goes only to
// 127.0.0.1, every wait is bounded by a context or a timeout, and nothing is
// global.
//
// # Files
//
//   - cluster.go: Cluster, ClusterConfig, NewCluster and NewClusterWith,
//     the brokers' addresses and ports, faults, events and legacy versions.
//   - conn.go: the connection wrapper that applies faults to the broker's
//     answers and ends connections with a FIN or an RST.
//   - proxy.go: ProxyLeg and the proxy in front of the brokers that drops
//     AnswerThenReset's answers.
//   - sent_linux.go, sent_other.go: waiting until an answer has left the
//     broker's socket before its RST.
//   - exchange.go: Exchange, the wrapper's record of every produce answer.
//   - moves.go: LeaderMoves, Move, Cluster.MoveLeader and MoveLeaders.
//   - frame.go: finding and parsing the frames the wrapper sees.
//   - fault.go: Fault, Action and Event.
//   - capture.go: Capture, StartCapture, StartCapturePorts, CanCapture and
//     CaptureStats: tcpdump.
//   - produce.go: Producer, Produce and Values: the kgo producer.
//   - settings.go: Settings, the kgo producer settings a test varies.
//   - codec.go: Codec, the compression codecs.
//   - kcat.go: KcatProduce and KcatCompressed, through librdkafka's kcat.
//   - rdkafka.go: Rdkafka, RdkafkaProduce, RdkafkaErr, RdkafkaBuild and
//     the recipes RdkafkaEpochBump and RdkafkaRebatch, through librdkafka
//     2.11 (confluent-kafka-go, internal/rdkafka), built once into a cache.
//   - sarama.go: SaramaProducer and SaramaProduce, through IBM/sarama.
//   - kafkajs.go: KafkaJS, KafkajsProduce, KafkajsErr and JSDir, through
//     kafkajs (js/kafkajs_produce.js), and the Node.js runner.
//   - platformatic.go: Platformatic, PlatformaticProduce and
//     PlatformaticErr, through @platformatic/kafka
//     (js/platformatic_produce.mjs).
//   - kafkapython.go: KafkaPythonPlain and KafkaPythonPlainProduce, through
//     kafka-python in plaintext (tls_python.go has it over TLS).
//   - js/: package.json, package-lock.json and the two Node.js producers;
//     node_modules (git-ignored) is what `npm ci` installs there.
//   - kafkago.go: KafkaGoWriter and KafkaGoProduce, through segmentio/kafka-go.
//   - apptwice.go: AppTwice and AppTwiceProduce, an app that writes twice.
//   - restart.go: Restart and RestartProduce, an app that replaces its
//     idempotent producer and sends a value again from the new one.
//   - readback.go: Log, Batch, Record, Copies and ReadBack: the log read back.
//   - scenario.go: Scenario, Result, ProduceFunc and Run.
//   - bulk.go: Bulk, BulkCapture, BulkResult and BulkResend: a large capture
//     of real producers, for benchmarks.
//   - recut.go: Recut, a capture's TCP segments cut to a smaller MTU.
//   - bulk_test.go: Recut's pieces and the re-sends bulkResends derives.
//   - cmd/realcap: the command writing a bulk capture, its re-cut and
//     their manifests (internal/gencap's Manifest).
//   - sasl.go: SASL, the superuser a cluster requires (kfake.EnableSASL)
//     and the producer and read back authenticate as; its kcat settings.
//   - auth_export.go: SASL.ClusterOpts and ReadBackAuth, for a cluster
//     made by hand with TLS and SASL (kdupcap's --kafka-* tests).
//   - faults_test.go: each connection-ending fault against kgo, proven by
//     the event, the re-send, the log and the FIN or RST in the capture.
//   - brokers_test.go: three brokers whose leaders move under kgo, with and
//     without the proxy: moves, NOT_LEADER_OR_FOLLOWER followed, a complete
//     log, one capture of every broker's port.
package kafkatest
