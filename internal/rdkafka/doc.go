// Command rdproduce is a librdkafka 2.11 producer for kdupcap's test harness:
// confluent-kafka-go v2.11.1 with the static librdkafka 2.11.1 it vendors.
// It is its own Go module so that the cgo it needs never reaches kdupcap's
// module: the main module's ./... stops at this directory's go.mod, and the
// kdupcap binary stays static. internal/kafkatest builds it (CGO_ENABLED=1,
// gcc) and runs it (kafkatest.RdkafkaProduce).
//
// Usage:
//
//	rdproduce -b 127.0.0.1:9092 -t orders [-p 0] [-X key=value]... \
//		[-async] [-interval 0s] [-wait 60s] [-debug msg,protocol,eos] < values
//
// Each line of stdin is one value. -p -1 lets librdkafka's partitioner
// choose. -X passes any librdkafka setting (enable.idempotence,
// socket.timeout.ms, message.timeout.ms, linger.ms, batch.num.messages,
// retries, retry.backoff.ms, client.id, acks, compression.type, ...); with
// none, librdkafka's defaults apply. Without -async each value's delivery
// report is waited for before the next value is produced; with -async every
// value is produced (with -interval between them) and then all reports are
// awaited. One JSON line a delivery report goes to stdout, in the order the
// reports came: {"value","partition","offset","error","code"} (error and
// code only for a failed delivery; code is librdkafka's, e.g. -192 for
// Local: Message timed out). librdkafka's logs (-debug contexts included)
// and client errors go to stderr. A failed delivery is a report, not a
// failure: rdproduce exits non-zero only when it cannot produce or some
// report does not come within -wait.
//
// # Files
//
//   - main.go: the flags, the producer and the delivery reports.
package main
