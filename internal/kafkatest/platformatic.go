package kafkatest

import (
	"context"
	"time"
)

// Platformatic configures the @platformatic/kafka 1.x producer
// PlatformaticProduce runs (js/platformatic_produce.mjs, under Node.js;
// 1.35.0, the newest 1.x: 2.x needs Node >= 22.22). Zero fields take the
// defaults named, chosen so that a fault makes it re-send within a second.
//
// What @platformatic/kafka 1.35.0 sends, read from captures against kfake
// and parsed with kmsg (TestNodePythonClients checks each point):
//   - client.id: what ClientID says; platformatic has no default (its
//     clientId option is required), "" here sends "platformatic-kafka".
//     Correlation IDs count from 1 on each connection.
//   - ApiVersions v3 with the KIP-511 client software name
//     "platformatic-kafka" and version "1.35.0"; Metadata v12
//     (allow_auto_topic_creation false here), InitProducerId v5 (its
//     transaction timeout is the timeout option), Produce v11.
//   - The first connection opens with ApiVersions, Metadata (the topic),
//     then produces; idempotent, ApiVersions, InitProducerId, Metadata,
//     Produce. A later connection (after a close) produces at once: no
//     ApiVersions, no Metadata.
//   - Non-idempotent batches carry producer ID -1, epoch 0, sequence 0;
//     idempotent ones the producer ID, epoch 0 and sequences from 0.
//   - On a retry it re-sends the same batch bytes (same timestamps, which
//     it stores in the message on the first encoding, so the same CRC):
//     after REQUEST_TIMED_OUT on the same connection after retryDelay, no
//     Metadata first; after a close on a new connection. An idempotent
//     re-send keeps its sequence (kfake deduplicates it). Its own request
//     timeout (requestTimeout, Delay) is not retried: send() fails with
//     "Request timed out" although the broker appended the batch.
//
// Its settings (Producer options): clientId (required), timeout (5000ms:
// the produce request's TimeoutMillis), connectTimeout (5000ms),
// requestTimeout (30000ms: the connection's own deadline for a response),
// retries (3; true means forever), retryDelay (1000ms, or a function),
// maxInflights (5), idempotent (false; true forces maxInflights 1, acks -1
// and, when retries <= 1, unbounded retries), acks (send() ignores the
// constructor's and defaults to 1, leader only, unless idempotent: pass
// acks on every send), compression, repeatOnStaleMetadata (true). It
// retries a produce whose every error is retriable (REQUEST_TIMED_OUT,
// NOT_LEADER, a closed connection), never its own timeout.
type Platformatic struct {
	// ClientID is the request header's client.id; "" means
	// "platformatic-kafka".
	ClientID string
	// Idempotent makes the producer idempotent (maxInflights 1).
	Idempotent bool
	// Timeout is the client's timeout option, sent as the produce
	// request's TimeoutMillis (what TimedOutAfterAppend waits out); 0
	// means 300ms.
	Timeout time.Duration
	// RequestTimeout is the connection's requestTimeout, the client's own
	// deadline for a response (send() fails when it fires, no retry); 0
	// leaves platformatic's 30s.
	RequestTimeout time.Duration
	// Retries is retries; 0 means 5. RetryBackoff is retryDelay; 0 means
	// 50ms.
	Retries      int
	RetryBackoff time.Duration
	// MaxInFlight is maxInflights; 0 means 1.
	MaxInFlight int
	// NodeRun says how the values are sent and where the program's
	// output goes (any error after the acknowledgements).
	NodeRun
}

// PlatformaticProduce returns a ProduceFunc that writes the values with
// @platformatic/kafka under Node.js (see Platformatic and PlatformaticErr),
// acks=-1 passed on every send, no compression, no keys. It fails unless
// the program acknowledged every value. The values must not contain
// newlines.
func PlatformaticProduce(p Platformatic) ProduceFunc {
	return func(ctx context.Context, addr, topic string, values []string) error {
		id := p.ClientID
		if id == "" {
			id = "platformatic-kafka"
		}
		cfg := map[string]any{
			"addr": addr, "topic": topic, "partitions": max(p.Partitions, 1),
			"clientId":         id,
			"idempotent":       p.Idempotent,
			"timeoutMs":        orDuration(p.Timeout, 300*time.Millisecond).Milliseconds(),
			"requestTimeoutMs": p.RequestTimeout.Milliseconds(),
			"retries":          orInt(p.Retries, 5),
			"retryMs":          orDuration(p.RetryBackoff, 50*time.Millisecond).Milliseconds(),
			"maxInflights":     orInt(p.MaxInFlight, 1),
			"perSend":          max(p.PerSend, 1),
		}
		return runNode(ctx, "platformatic", p.Dir, "platformatic_produce.mjs", cfg, values, p.Log)
	}
}

// PlatformaticErr says why PlatformaticProduce cannot run here (no node on
// PATH, or @platformatic/kafka not installed under JSDir or failing to load
// on this Node.js: run `npm ci` there), or nil.
func PlatformaticErr() error {
	return nodeModuleErr("", "@platformatic/kafka", `await import("@platformatic/kafka")`)
}
