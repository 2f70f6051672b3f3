package kafkatest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// KafkaPythonPlain configures the plaintext kafka-python 2.0.2 producer
// KafkaPythonPlainProduce runs (Debian's python3-kafka under PythonPath;
// KafkaPythonErr says whether it can run). KafkaPython and
// KafkaPythonProduce (tls_python.go) are the same client over TLS. Zero
// fields take the defaults named, chosen so that a fault makes it re-send
// within a second.
//
// What kafka-python 2.0.2 sends, read from captures against kfake and
// parsed with kmsg (TestNodePythonClients checks each point):
//   - client.id "kafka-python-producer-1" when ClientID is "" (the
//     producer's default, "kafka-python-producer-<n>", n counting the
//     producers of the process); correlation IDs count from 1 on each
//     connection.
//   - ApiVersions v0 only, so no KIP-511 client software name; Metadata
//     v0 and v1, Produce v7. No InitProducerId: it is never idempotent.
//   - The bootstrap connection probes the broker's version (api_version
//     unset): ApiVersions v0, 100ms later Metadata v0 (empty topic list),
//     then Metadata v1 (all topics), and produces nothing. The producer
//     opens a second connection to the partition leader and sends Produce
//     on it at once (no ApiVersions). A connection opened after a close
//     starts with Metadata v1 (the topic), then Produce.
//   - Batches carry producer ID -1, epoch -1 and sequence -1 (kafkajs and
//     platformatic send epoch 0, sequence 0).
//   - On a retry it re-sends the same batch bytes (the batch is built once:
//     same timestamps, same CRC): after REQUEST_TIMED_OUT on the same
//     connection after retry_backoff_ms; after a close, or after its own
//     request_timeout_ms (it then closes the connection itself), on a new
//     connection, after Metadata v1.
//
// kafka-python's settings (KafkaProducer): client_id, acks (1; "all" is
// -1), retries (0: no retry at all), retry_backoff_ms (100),
// request_timeout_ms (30000: both the client's own deadline for a response,
// after which it closes the connection, and the produce request's
// TimeoutMillis), max_in_flight_requests_per_connection (5), linger_ms,
// batch_size; no idempotence (enable_idempotence came with kafka-python
// 2.1). With retries > 0 it re-enqueues the batch of a retriable error
// (REQUEST_TIMED_OUT, a closed connection or its own timeout) and sends it
// again after retry_backoff_ms.
type KafkaPythonPlain struct {
	// ClientID is the request header's client.id; "" leaves
	// kafka-python's default.
	ClientID string
	// RequestTimeout is request_timeout_ms, the client's own deadline for
	// a response; 0 means 2s. ProduceTimeout, when set, is sent instead as
	// the produce request's TimeoutMillis (kafka-python sends
	// request_timeout_ms there; equal, a broker answering at TimeoutMillis
	// races the client's deadline); 0 means 300ms.
	RequestTimeout, ProduceTimeout time.Duration
	// Retries is retries; 0 means 5. RetryBackoff is retry_backoff_ms; 0
	// means 50ms.
	Retries      int
	RetryBackoff time.Duration
	// MaxInFlight is max_in_flight_requests_per_connection; 0 means 1.
	MaxInFlight int
	// PerSend is how many values are handed over before they are waited
	// for together (with linger_ms 5 they share a batch); 0 means 1: each
	// value sent alone (linger 0) and waited for.
	PerSend int
	// Partitions spreads value i to partition i % Partitions; 0 means 1.
	Partitions int32
	// Log receives the program's output (one line a value acknowledged,
	// then kafka-python's warnings), if set.
	Log func(string)
}

// KafkaPythonPlainProduce returns a ProduceFunc that writes the values with
// kafka-python 2.0.2 in plaintext (see KafkaPythonPlain), acks=all, no
// compression, no keys. It fails unless the program acknowledged every
// value. The values must not contain newlines.
func KafkaPythonPlainProduce(p KafkaPythonPlain) ProduceFunc {
	return func(ctx context.Context, addr, topic string, values []string) error {
		for _, v := range values {
			if strings.ContainsAny(v, "\r\n") {
				return fmt.Errorf("kafkatest: kafka-python: value %q holds a newline", v)
			}
		}
		cfg := map[string]any{
			"addr": addr, "topic": topic, "partitions": max(p.Partitions, 1),
			"client_id":          p.ClientID,
			"request_timeout_ms": orDuration(p.RequestTimeout, 2*time.Second).Milliseconds(),
			"produce_timeout_ms": orDuration(p.ProduceTimeout, 300*time.Millisecond).Milliseconds(),
			"retries":            orInt(p.Retries, 5),
			"retry_backoff_ms":   orDuration(p.RetryBackoff, 50*time.Millisecond).Milliseconds(),
			"max_in_flight":      orInt(p.MaxInFlight, 1),
			"per_send":           max(p.PerSend, 1),
		}
		arg, err := json.Marshal(cfg)
		if err != nil {
			return fmt.Errorf("kafkatest: kafka-python config: %w", err)
		}
		cmd := exec.CommandContext(ctx, PythonPath, "-c", kafkaPythonPlainScript, string(arg))
		cmd.Stdin = strings.NewReader(strings.Join(values, "\n") + "\n")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
		if p.Log != nil {
			p.Log(stdout.String() + stderr.String())
		}
		if err != nil {
			return fmt.Errorf("kafkatest: kafka-python: %w: %s", err, stderr.String())
		}
		return checkAcks("kafka-python", stdout.String(), values)
	}
}

// kafkaPythonPlainScript is the program KafkaPythonPlainProduce runs with
// `python3 -c`: its argument is the JSON config, stdin the values one a
// line; it prints "<value> <partition>@<offset>" for each value
// acknowledged, kafka-python's warnings go to stderr.
const kafkaPythonPlainScript = `
import json, logging, sys
from kafka import KafkaProducer

cfg = json.loads(sys.argv[1])
logging.basicConfig(level=logging.WARNING, format="%(name)s %(levelname)s %(message)s")
per = max(cfg["per_send"], 1)
opts = dict(
    bootstrap_servers=cfg["addr"],
    acks="all",
    retries=cfg["retries"],
    retry_backoff_ms=cfg["retry_backoff_ms"],
    linger_ms=0 if per == 1 else 5,
    max_in_flight_requests_per_connection=cfg["max_in_flight"],
    request_timeout_ms=cfg["request_timeout_ms"],
)
if cfg["client_id"]:
    opts["client_id"] = cfg["client_id"]
producer = KafkaProducer(**opts)
# kafka-python sends request_timeout_ms as the produce request's
# TimeoutMillis; the sender's copy of the setting is what goes there.
if cfg["produce_timeout_ms"]:
    producer._sender.config["request_timeout_ms"] = cfg["produce_timeout_ms"]

parts = max(cfg["partitions"], 1)
values = [l for l in sys.stdin.read().split("\n") if l]
for i in range(0, len(values), per):
    chunk = values[i:i + per]
    futs = [producer.send(cfg["topic"], value=v.encode(), partition=(i + j) % parts) for j, v in enumerate(chunk)]
    for v, f in zip(chunk, futs):
        md = f.get(timeout=30)
        print("%s %d@%d" % (v, md.partition, md.offset), flush=True)
producer.flush(timeout=30)
producer.close(timeout=10)
`
