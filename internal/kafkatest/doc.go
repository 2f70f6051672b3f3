// Package kafkatest makes real Kafka produce traffic with known ground truth,
// for kdupcap's end-to-end tests. It sits beside the flow, not in it: it runs
// an in-process kfake broker on 127.0.0.1, real producers against it, tcpdump
// on loopback to capture what they send, and reads the broker's log back
// afterwards so that tests derive what kdupcap must find from the log itself,
// never from a previous run.
//
// # What it takes and gives
//
//   - [NewCluster] starts a one-broker kfake cluster whose listener wraps every
//     connection: for the produce requests a [Fault] selects, it answers
//     REQUEST_TIMED_OUT after the request's TimeoutMillis while keeping the
//     offset appended at (as Kafka's expired DelayedProduce does), delays the
//     response, or closes the connection unanswered. [Cluster.Events] lists
//     every fault applied.
//   - [StartCapture] runs tcpdump on loopback for the cluster's port;
//     [Capture.Stop] checks that the kernel dropped nothing. [CanCapture] says
//     why it cannot run here (testenv decides whether that skips or fails).
//   - [Produce] writes distinct values through a kgo producer configured by a
//     [Producer] (kgo re-sends the same bytes on a retry); [KcatProduce],
//     [SaramaProduce], [KafkaGoProduce] and [AppTwiceProduce] write through
//     kcat, sarama, kafka-go or an application that produces some records
//     twice, each doc saying what that client does on a retry. [ReadBack]
//     returns a topic's batches and records, and which values the log holds
//     more than once.
//   - [Run] does all of it for one [Scenario] and returns a [Result].
//
// # Imports
//
// It imports kfake, kgo (and its sasl/plain and sasl/scram), kmsg, sarama
// and kafka-go, and of kdupcap's own packages only internal/kwire and
// internal/testenv; it must never import kdupcap's stages (capture, decode,
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
//   - cluster.go: Cluster, NewCluster and its faults, events and legacy
//     versions.
//   - conn.go: the connection wrapper that applies faults to the broker's
//     answers.
//   - frame.go: finding and parsing the frames the wrapper sees.
//   - fault.go: Fault, Action and Event.
//   - capture.go: Capture, StartCapture, CanCapture and CaptureStats: tcpdump.
//   - produce.go: Producer, Produce and Values: the kgo producer.
//   - settings.go: Settings, the kgo producer settings a test varies.
//   - codec.go: Codec, the compression codecs.
//   - kcat.go: KcatProduce and KcatCompressed, through librdkafka's kcat.
//   - sarama.go: SaramaProducer and SaramaProduce, through IBM/sarama.
//   - kafkago.go: KafkaGoWriter and KafkaGoProduce, through segmentio/kafka-go.
//   - apptwice.go: AppTwice and AppTwiceProduce, an app that writes twice.
//   - readback.go: Log, Batch, Record, Copies and ReadBack: the log read back.
//   - scenario.go: Scenario, Result, ProduceFunc and Run.
//   - sasl.go: SASL, the superuser a cluster requires (kfake.EnableSASL)
//     and the producer and read back authenticate as; its kcat settings.
package kafkatest
