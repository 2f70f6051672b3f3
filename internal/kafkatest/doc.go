// Package kafkatest makes real Kafka produce traffic with known ground truth,
// for kdupcap's end-to-end tests. It sits beside the flow, not in it: it runs
// an in-process kfake broker on 127.0.0.1, real franz-go (kgo) producers
// against it, tcpdump on loopback to capture what they send, and reads the
// broker's log back afterwards so that tests derive what kdupcap must find from
// the log itself, never from a previous run.
//
// # What it takes and gives
//
//   - [NewCluster] starts a one-broker kfake cluster whose listener wraps every
//     connection. The wrapper watches the framed requests and responses and,
//     for the produce requests a [Fault] selects, answers REQUEST_TIMED_OUT
//     after the request's own TimeoutMillis while keeping the base offset the
//     broker appended at (as Kafka's expired DelayedProduce does), delays the
//     response, or closes the connection after the append without answering.
//     [Cluster.Events] lists every fault applied.
//   - [StartCapture] runs tcpdump on the loopback interface for the cluster's
//     port; [Capture.Stop] stops it and checks that the kernel dropped nothing.
//   - [Produce] writes records with distinct values through a kgo producer
//     configured by a [Producer]; [ReadBack] fetches every partition of a topic
//     and returns its batches and records, and which values the log holds more
//     than once, decompressing compressed batches and keeping each record's
//     key, headers and timestamp (a record's identity is its key, value and
//     headers). [KcatProduce] and [KcatCompressed] write through librdkafka's
//     kcat instead, [SaramaProduce] through IBM/sarama, [KafkaGoProduce]
//     through segmentio/kafka-go, and [AppTwiceProduce] is a kgo application
//     that produces some records twice. Their doc comments say what each
//     client does on a retry, as measured here: librdkafka and kgo re-send
//     the same bytes, kafka-go rebuilds the batch (new timestamps, new CRC),
//     sarama re-batches the retried records with newer ones.
//   - [Run] does all of it for one [Scenario] and returns a [Result]: the
//     faults applied, the capture file and the log read back.
//
// # Imports
//
// It imports kfake, kgo, kmsg, sarama and kafka-go, and must never import
// kdupcap's own packages (capture, decode, detect, report): the harness
// judges them, it must not share their code or their mistakes.
//
// # Bytes and bad input
//
// The connection wrapper copies what it needs from the bytes it sees; a frame
// it cannot parse is passed through unchanged and not faulted. Everything here
// is for tests: network traffic goes only to 127.0.0.1, every wait is bounded
// by a context or a timeout, and nothing is global.
package kafkatest
