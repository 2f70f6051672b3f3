package kafkatest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// NodeRun is what the Node.js producers (KafkaJS, Platformatic) share:
// how the values are sent and where the program and its output are.
type NodeRun struct {
	// PerSend is how many values one send() call carries (one batch a
	// partition, one request); each call is waited for. 0 means 1.
	PerSend int
	// Partitions spreads value i to partition i % Partitions; 0 means 1.
	Partitions int32
	// Dir is the directory holding the scripts and node_modules; "" means
	// this package's js directory (JSDir).
	Dir string
	// Log receives the program's output (one line a value acknowledged,
	// then the client's warnings or error), if set.
	Log func(string)
}

// KafkaJS configures the kafkajs 2.2.4 producer KafkajsProduce runs
// (js/kafkajs_produce.js, under Node.js). Zero fields take the defaults
// named, chosen so that a fault makes it re-send within a second.
//
// What kafkajs 2.2.4 sends, read from captures against kfake and parsed
// with kmsg (TestNodePythonClients checks each point):
//   - client.id "kafkajs" when ClientID is "" (its clientId default);
//     correlation IDs count from 0 on each connection.
//   - ApiVersions v2 (the highest it knows), so no KIP-511 client software
//     name or version; Metadata v6 (allow_auto_topic_creation false here),
//     InitProducerId v1 (transaction timeout 60000), Produce v7.
//   - Each new connection opens with ApiVersions, Metadata (the topic),
//     then produces; idempotent, the first one opens ApiVersions,
//     Metadata (all topics), InitProducerId, Metadata (the topic), Produce.
//   - Non-idempotent batches carry producer ID -1, epoch 0, sequence 0;
//     idempotent ones the producer ID, epoch 0 and sequences from 0.
//   - On a retry it rebuilds the batch: the same records in the same order,
//     new timestamps (Date.now() when the request is encoded), so a new CRC;
//     an idempotent re-send keeps its sequence (kfake deduplicates it, the
//     log holds it once). After REQUEST_TIMED_OUT (TimedOutAfterAppend) it
//     sends Metadata, then re-sends on the same connection after the
//     backoff; after its own requestTimeout (Delay) it re-sends on the same
//     connection at once, the first request still unanswered; after a
//     close (CloseAfterAppend) on a new connection, which opens with
//     ApiVersions and Metadata again.
//
// kafkajs's settings: new Kafka({clientId, requestTimeout (30000ms: its
// own deadline for any response; enforceRequestTimeout true), retry:
// {retries (5), initialRetryTime (300ms), maxRetryTime (30000ms), factor
// (0.2), multiplier (2)}}); producer({idempotent (false; true needs acks
// -1 and retries >= 1, and warns unless retries is unbounded),
// maxInFlightRequests (unbounded), transactionalId, retry});
// send({acks (-1), timeout (30000ms: the request's TimeoutMillis),
// compression}). It retries the whole send() on any error it calls
// retriable: REQUEST_TIMED_OUT and other retriable broker errors, a closed
// connection, its own request timeout.
type KafkaJS struct {
	// ClientID is the request header's client.id; "" leaves kafkajs's
	// default ("kafkajs").
	ClientID string
	// Idempotent makes the producer idempotent (kafkajs warns that
	// Retries limits it).
	Idempotent bool
	// RequestTimeout is kafkajs's requestTimeout: its own deadline for a
	// response, after which it re-sends on the same connection; 0 means
	// 2s.
	RequestTimeout time.Duration
	// ProduceTimeout is send()'s timeout, the produce request's
	// TimeoutMillis (what TimedOutAfterAppend waits out); 0 means 300ms.
	ProduceTimeout time.Duration
	// Retries is retry.retries; 0 means 5. RetryBackoff is its
	// initialRetryTime and maxRetryTime (no growth); 0 means 50ms.
	Retries      int
	RetryBackoff time.Duration
	// MaxInFlight is maxInFlightRequests; 0 means 1.
	MaxInFlight int
	// NodeRun says how the values are sent and where the program's
	// output goes (kafkajs's warnings after the acknowledgements).
	NodeRun
}

// KafkajsProduce returns a ProduceFunc that writes the values with kafkajs
// 2.2.4 under Node.js (see KafkaJS and KafkajsErr), acks=-1, no
// compression, no keys. It fails unless the program acknowledged every
// value. The values must not contain newlines.
func KafkajsProduce(p KafkaJS) ProduceFunc {
	return func(ctx context.Context, addr, topic string, values []string) error {
		cfg := map[string]any{
			"addr": addr, "topic": topic, "partitions": max(p.Partitions, 1),
			"clientId":         p.ClientID,
			"idempotent":       p.Idempotent,
			"requestTimeoutMs": orDuration(p.RequestTimeout, 2*time.Second).Milliseconds(),
			"produceTimeoutMs": orDuration(p.ProduceTimeout, 300*time.Millisecond).Milliseconds(),
			"retries":          orInt(p.Retries, 5),
			"retryMs":          orDuration(p.RetryBackoff, 50*time.Millisecond).Milliseconds(),
			"maxInFlight":      orInt(p.MaxInFlight, 1),
			"perSend":          max(p.PerSend, 1),
		}
		return runNode(ctx, "kafkajs", p.Dir, "kafkajs_produce.js", cfg, values, p.Log)
	}
}

// KafkajsErr says why KafkajsProduce cannot run here (no node on PATH, or
// no kafkajs module under JSDir: run `npm ci` there), or nil.
func KafkajsErr() error {
	return nodeModuleErr("", "kafkajs", `await import("kafkajs")`)
}

// JSDir returns the directory of this package's Node.js producers
// (internal/kafkatest/js in the source tree), where `npm ci` installs their
// node_modules. It is found from this file's path at build time, so it is
// right for tests run in the source tree.
func JSDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "js"
	}
	return filepath.Join(filepath.Dir(file), "js")
}

// nodeModuleErr checks that node runs and that the script src loads the
// module name from dir (JSDir if "").
func nodeModuleErr(dir, name, src string) error {
	node, err := exec.LookPath("node")
	if err != nil {
		return fmt.Errorf("kafkatest: %s needs Node.js: %w", name, err)
	}
	if dir == "" {
		dir = JSDir()
	}
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		return fmt.Errorf("kafkatest: %s: no package.json in %s: %w", name, dir, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--input-type=module", "-e", src)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kafkatest: %s not installed in %s (run `npm ci` there): %v: %s", name, dir, err, errorLine(out))
	}
	return nil
}

// runNode runs the script (in dir, JSDir if "") with cfg as JSON in its
// argument and the values on stdin, one a line, and checks that it printed
// one acknowledgement a value.
func runNode(ctx context.Context, name, dir, script string, cfg map[string]any, values []string, log func(string)) error {
	for _, v := range values {
		if strings.ContainsAny(v, "\r\n") {
			return fmt.Errorf("kafkatest: %s: value %q holds a newline", name, v)
		}
	}
	if dir == "" {
		dir = JSDir()
	}
	arg, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("kafkatest: %s config: %w", name, err)
	}
	cmd := exec.CommandContext(ctx, "node", script, string(arg))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KAFKAJS_NO_PARTITIONER_WARNING=1")
	cmd.Stdin = strings.NewReader(strings.Join(values, "\n") + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if log != nil {
		log(stdout.String() + stderr.String())
	}
	if err != nil {
		return fmt.Errorf("kafkatest: %s (%s): %w: %s", name, script, err, stderr.String())
	}
	return checkAcks(name, stdout.String(), values)
}

// checkAcks checks that out holds a line "<value> <partition>@<offset>" for
// every value, in order.
func checkAcks(name, out string, values []string) error {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if out == "" {
		lines = nil
	}
	if len(lines) != len(values) {
		return fmt.Errorf("kafkatest: %s acknowledged %d values, want %d", name, len(lines), len(values))
	}
	var errs []error
	for i, l := range lines {
		if v, _, _ := strings.Cut(l, " "); v != values[i] {
			errs = append(errs, fmt.Errorf("kafkatest: %s: acknowledgement %d is %q, want value %q", name, i, l, values[i]))
		}
	}
	return errors.Join(errs...)
}

// errorLine returns the first line of a Node.js error output that names
// the error, else its first line.
func errorLine(b []byte) string {
	lines := strings.Split(string(bytes.TrimSpace(b)), "\n")
	for _, l := range lines {
		if strings.Contains(l, "Error") {
			return strings.TrimSpace(l)
		}
	}
	return lines[0]
}

func orDuration(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func orInt(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}
