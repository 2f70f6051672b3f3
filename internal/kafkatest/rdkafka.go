package kafkatest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Rdkafka configures RdkafkaProduce: librdkafka 2.11.1 through
// confluent-kafka-go v2.11.1. With no Config it sends client.id "rdkafka"
// (librdkafka's default) in every request header and, in ApiVersions v3,
// client.software.name "confluent-kafka-go" and client.software.version
// "2.11.1" (confluent-kafka-go sets both, the version from librdkafka's;
// librdkafka's own default name is "librdkafka", rd_kafka_conf_finalize).
// It speaks Produce v10 to kfake, acks=all, TimeoutMillis =
// request.timeout.ms (30000), and also sends GetTelemetrySubscriptions and
// PushTelemetry.
//
// # When librdkafka 2.11 bumps its epoch
//
// Read in librdkafka v2.11.1's source. The idempotent producer (not
// transactional) gets its producer ID once, with InitProducerId at start
// (rd_kafka_idemp_start, rd_kafka_idemp_pid_fsm); it bumps the epoch
// itself, with no request: rd_kafka_idemp_drain_epoch_bump waits until no
// partition has a request in flight, then rd_kafka_idemp_drain_done sets
// epoch+1 (rd_kafka_pid_bump, wrapping at 32767), and each partition, when
// it next sends (rd_kafka_toppar_pid_change), numbers its queued messages
// from sequence 0 again (rd_kafka_toppar_reset_base_msgid). A broker cannot
// tell such a re-send from new data. Its callers, for the idempotent
// producer:
//
//   - rdkafka_broker.c, rd_kafka_toppar_producer_serve: the message
//     timeout scan (rd_kafka_broker_toppar_msgq_scan, once a second and on
//     every broker state change, before any re-send) failed at least one
//     queued message with _MSG_TIMED_OUT (message.timeout.ms, alias
//     delivery.timeout.ms, default 300000). Messages that were sent, timed
//     out and put back for a retry count as queued. This is the only
//     trigger kfake and these faults reach (recipe a), and it fires whatever
//     enable.gapless.guarantee says.
//   - rdkafka_request.c, rd_kafka_handle_idempotent_Produce_error:
//     OUT_OF_ORDER_SEQUENCE_NUMBER for a request that is not the first
//     unacknowledged one ("skipped sequence numbers": an earlier request
//     failed), retried under the new epoch; UNKNOWN_PRODUCER_ID for a first
//     send (no retries yet) at the expected sequence, retried too
//     (otherwise UNKNOWN_PRODUCER_ID is fatal).
//   - rdkafka_request.c, rd_kafka_handle_Produce_error: a produce error
//     whose action is permanent (rd_kafka_err_action: every broker error
//     not listed as retriable, e.g. MESSAGE_TOO_LARGE, INVALID_RECORD,
//     TOPIC_AUTHORIZATION_FAILED) with enable.gapless.guarantee=false
//     ("message sequence gap"); with it true the producer fails fatally
//     instead.
//   - rdkafka_txnmgr.c: transactional producers only (abort, then an
//     InitProducerId that asks the coordinator for the bump).
//
// A retriable error (REQUEST_TIMED_OUT, a request that timed out in flight
// after socket.timeout.ms, a closed connection) bumps nothing: the
// partition drains and re-sends the same batch, same epoch and sequence,
// and the broker deduplicates (kfake answers the original offset). So the
// bump duplicates only what message.timeout.ms catches: a batch was
// appended, its answer did not arrive before its oldest message's
// message.timeout.ms, and it still held messages younger than that. A
// produce request's own deadline is the lesser of socket.timeout.ms and its
// first message's remaining message.timeout.ms, so that happens when the
// last attempt's deadline is the message timeout. Settings that avoid it:
// message.timeout.ms well above the time a batch can wait for its answers
// (socket.timeout.ms times the attempts you allow, plus linger.ms), or
// message.timeout.ms=0 (infinite); a small linger.ms and batch size narrow
// the age spread inside one batch.
//
// New producer ID: the idempotent producer never asks for one after the
// first. InitProducerId is sent again only after a failed InitProducerId,
// or after rd_kafka_idemp_drain_reset, which only a transactional fencing
// or enable.gapless.guarantee calls, and the latter after a fatal error
// that stops the PID state machine. Against kfake no recipe here gets a new
// producer ID: every capture holds one InitProducerId. A new ID comes only
// from a new producer instance (a restarted application).
//
// # Recipes (measured against kfake on this machine)
//
// (a) Idempotent epoch bump (RdkafkaEpochBump): enable.idempotence=true,
// linger.ms=1800, message.timeout.ms=3000, 4 values produced Async 500ms
// apart, so one batch holds them all, the oldest 1.5s older than the
// youngest; a Delay fault (10s, Max 1) holds its answer. The request's
// deadline is the first value's message timeout (3s after it was
// produced, 1.2s after the send): librdkafka closes the connection, the
// scan fails value 0 with _MSG_TIMED_OUT (-192) and bumps the epoch, and on
// the new connection it re-sends values 1..3 (the original batch without
// its expired head, a reconstructed MessageSet) as epoch 1, sequence 0. The
// log: values 0..3 at offsets 0..3 (producer P, epoch 0, sequence 0, 4
// records), then values 1..3 again at 4..6 (producer P, epoch 1, sequence
// 0, 3 records); Duplicates() is values 1..3. Reports: value 0 failed
// (-192) although the log holds it, values 1..3 delivered at 4..6. 5 of 5
// runs, each 3.3-3.5s. The capture: Produce v10 on the second connection
// (correlation ID 5, epoch 0, sequence 0, 4 records) never answered, the
// client's FIN 1.25s later, a new connection (ApiVersions corr 6, Produce
// corr 7: epoch 1, sequence 0, 3 records, answered base offset 4).
// Lowering socket.timeout.ms instead (1000, Delay 3s,
// message.timeout.ms=30000) gives no bump: the retry keeps epoch 0 and its
// sequence and kfake deduplicates.
//
// (b) New producer ID: not reached (see above).
//
// (c) Non-idempotent re-batched retry (RdkafkaRebatch):
// enable.idempotence=false, max.in.flight.requests.per.connection=1,
// request.timeout.ms=300, 6 values produced Async 100ms apart, a
// TimedOutAfterAppend fault (Max 1) on the first produce request (value
// 0 alone). Value 1's request, built while value 0's was in flight, goes
// out as soon as the error arrives; value 0 comes back to the partition
// queue (rd_kafka_toppar_retry_msgq; only the idempotent producer keeps a
// retry's batch boundaries, through rkm_u.producer.last_msgid) and leaves
// 100ms later (retry.backoff.ms) at the head of a new batch with the newer
// values, on the same connection. The log: value 0 at 0, value 1 at 1,
// values 0, 2, 3, 4 at 2..5 (one batch, a new CRC), value 5 at 6 (in 1 of
// 5 runs 5 joined the batch: 0, 2..5 at 2..6); Duplicates() is value 0 at
// offsets 0 and 2, every report delivered (value 0 at 2); producer ID -1.
// 5 of 5 runs, each 0.65-0.75s. The capture: Produce corr 4 answered error
// 7 at base offset 0 after 300ms, corr 5 (value 1), corr 6 (4 records),
// corr 7 (value 5). With a Delay fault past socket.timeout.ms=500 instead,
// the client closes the connection and re-sends on a new one: in 4 of 5
// runs value 0 went in one batch with all five newer values, in 1 of 5 alone
// (the same bytes and CRC), then the others.
type Rdkafka struct {
	// Config are librdkafka settings, "key=value", passed as they are:
	// with none, librdkafka 2.11's defaults apply (acks=all, linger.ms=5,
	// enable.idempotence=false, client.id "rdkafka").
	Config []string
	// Partition is the partition every value goes to; -1 lets librdkafka's
	// partitioner choose.
	Partition int32
	// Async produces every value (Interval apart) and then awaits all
	// delivery reports; otherwise each value's report is awaited before
	// the next value is produced.
	Async bool
	// Interval is the pause after each produce call.
	Interval time.Duration
	// Debug is librdkafka's debug setting (e.g. "msg,protocol,eos"); its
	// logs go to Log.
	Debug string
	// Log receives librdkafka's log lines (stderr), if set.
	Log func(string)
	// Reports receives every delivery report, in the order they came, if
	// set.
	Reports func(RdkafkaReport)
	// AllowFailed makes failed deliveries no error of the ProduceFunc (so
	// that Run still reads the log back); they are still reported.
	AllowFailed bool
}

// RdkafkaReport is one delivery report: what librdkafka believes became of
// a value.
type RdkafkaReport struct {
	Value     string `json:"value"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// Error is "" for a delivery librdkafka counts as done, else its
	// message (e.g. "Local: Message timed out"); Code is its error code
	// (e.g. -192, RD_KAFKA_RESP_ERR__MSG_TIMED_OUT).
	Error string `json:"error,omitempty"`
	Code  int    `json:"code,omitempty"`
}

// RdkafkaErr says why RdkafkaProduce cannot run here, or nil: no go
// command, no C compiler (cgo), no source of internal/rdkafka, or its module
// (confluent-kafka-go) not downloadable. Tests pass it to
// testenv.Unavailable.
func RdkafkaErr() error {
	_, err := rdkafkaToolchain()
	return err
}

// RdkafkaBuild builds rdproduce (internal/rdkafka) now, unless the cache
// holds it already. RdkafkaProduce builds it on first use otherwise, within
// its run's ctx: a cold build (cgo, the static librdkafka) takes about 15s,
// so a test with a short ctx builds first.
func RdkafkaBuild(ctx context.Context) error {
	_, err := rdkafkaBinary(ctx)
	return err
}

// RdkafkaProduce returns a ProduceFunc that writes the values through
// librdkafka 2.11.1 (confluent-kafka-go v2.11.1, internal/rdkafka), built
// once per source and toolchain into a cache directory (see RdkafkaErr for
// what that needs, RdkafkaBuild to build it ahead). Each value is one
// message to r.Partition, with no key. It fails when a delivery failed,
// unless r.AllowFailed. The values must not contain newlines.
func RdkafkaProduce(r Rdkafka) ProduceFunc {
	return func(ctx context.Context, addr, topic string, values []string) error {
		bin, err := rdkafkaBinary(ctx)
		if err != nil {
			return err
		}
		args := []string{"-b", addr, "-t", topic, "-p", strconv.Itoa(int(r.Partition))}
		for _, x := range r.Config {
			args = append(args, "-X", x)
		}
		if r.Async {
			args = append(args, "-async")
		}
		if r.Interval > 0 {
			args = append(args, "-interval", r.Interval.String())
		}
		if r.Debug != "" {
			args = append(args, "-debug", r.Debug)
		}
		if dl, ok := ctx.Deadline(); ok {
			// rdproduce gives up a little before ctx, so that its
			// reports and logs are kept.
			if wait := time.Until(dl) - 500*time.Millisecond; wait > 0 {
				args = append(args, "-wait", wait.String())
			}
		}
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Stdin = strings.NewReader(strings.Join(values, "\n") + "\n")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		runErr := cmd.Run()
		if r.Log != nil {
			sc := bufio.NewScanner(&stderr)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				r.Log(sc.Text())
			}
		}
		var failed []string
		sc := bufio.NewScanner(&stdout)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var rep RdkafkaReport
			if err := json.Unmarshal(sc.Bytes(), &rep); err != nil {
				return fmt.Errorf("kafkatest: rdkafka: delivery report %q: %w", sc.Text(), err)
			}
			if r.Reports != nil {
				r.Reports(rep)
			}
			if rep.Error != "" {
				failed = append(failed, fmt.Sprintf("%s: %s", rep.Value, rep.Error))
			}
		}
		if runErr != nil {
			return fmt.Errorf("kafkatest: rdkafka %s: %w: %s", strings.Join(args, " "), runErr, lastLines(stderr.String(), 20))
		}
		if len(failed) > 0 && !r.AllowFailed {
			return fmt.Errorf("kafkatest: rdkafka: %d deliveries failed: %s", len(failed), strings.Join(failed, "; "))
		}
		return nil
	}
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// rdkafkaTools is what building internal/rdkafka takes.
type rdkafkaTools struct {
	goCmd string // the go command
	dir   string // internal/rdkafka
}

// rdkafkaLocate finds internal/rdkafka's source and the go command.
func rdkafkaLocate() (rdkafkaTools, error) {
	var t rdkafkaTools
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return t, errors.New("kafkatest: rdkafka: no source path for internal/kafkatest")
	}
	t.dir = filepath.Join(filepath.Dir(self), "..", "rdkafka")
	if _, err := os.Stat(filepath.Join(t.dir, "go.mod")); err != nil {
		return t, fmt.Errorf("kafkatest: rdkafka: source of internal/rdkafka: %w", err)
	}
	var err error
	if t.goCmd, err = exec.LookPath("go"); err != nil {
		return t, fmt.Errorf("kafkatest: rdkafka: %w", err)
	}
	return t, nil
}

// rdkafkaToolchain is rdkafkaLocate, then it finds the C compiler and
// downloads internal/rdkafka's modules: all that building it takes.
func rdkafkaToolchain() (rdkafkaTools, error) {
	t, err := rdkafkaLocate()
	if err != nil {
		return t, err
	}
	out, err := t.goEnv("CC")
	if err != nil {
		return t, err
	}
	cc := strings.Fields(out)
	if len(cc) == 0 {
		cc = []string{"gcc"}
	}
	if _, err := exec.LookPath(cc[0]); err != nil {
		return t, fmt.Errorf("kafkatest: rdkafka: cgo needs a C compiler (install gcc): %w", err)
	}
	cmd := exec.Command(t.goCmd, "mod", "download")
	cmd.Dir = t.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return t, fmt.Errorf("kafkatest: rdkafka: go mod download in %s: %w: %s", t.dir, err, bytes.TrimSpace(out))
	}
	return t, nil
}

func (t rdkafkaTools) goEnv(names ...string) (string, error) {
	cmd := exec.Command(t.goCmd, append([]string{"env"}, names...)...)
	cmd.Dir = t.dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("kafkatest: rdkafka: go env %s: %w", strings.Join(names, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// key hashes what the binary is made of: the module's go.mod, go.sum and Go
// files, and the toolchain.
func (t rdkafkaTools) key() (string, error) {
	h := sha256.New()
	env, err := t.goEnv("GOVERSION", "GOOS", "GOARCH", "CC")
	if err != nil {
		return "", err
	}
	h.Write([]byte(env))
	files, err := filepath.Glob(filepath.Join(t.dir, "*.go"))
	if err != nil {
		return "", err
	}
	for _, f := range append([]string{filepath.Join(t.dir, "go.mod"), filepath.Join(t.dir, "go.sum")}, files...) {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("kafkatest: rdkafka: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// rdkafkaBinary returns the path of the built rdproduce, building it if the
// cache lacks it: under os.UserCacheDir()/kdupcap-rdkafka/<key> (the temp
// directory if there is no cache directory). A build writes a file of its
// own and renames it into place, so concurrent builds (of tests that did
// not call RdkafkaBuild first) waste time but never leave a partial binary.
func rdkafkaBinary(ctx context.Context) (string, error) {
	t, err := rdkafkaLocate()
	if err != nil {
		return "", err
	}
	key, err := t.key()
	if err != nil {
		return "", err
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "kdupcap-rdkafka", key)
	bin := filepath.Join(dir, "rdproduce")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if _, err := rdkafkaToolchain(); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("kafkatest: rdkafka: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "rdproduce-*.tmp")
	if err != nil {
		return "", fmt.Errorf("kafkatest: rdkafka: %w", err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name()) // fails once renamed
	cmd := exec.CommandContext(ctx, t.goCmd, "build", "-o", tmp.Name(), ".")
	cmd.Dir = t.dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("kafkatest: rdkafka: go build in %s: %w: %s", t.dir, err, bytes.TrimSpace(out))
	}
	if err := os.Rename(tmp.Name(), bin); err != nil {
		return "", fmt.Errorf("kafkatest: rdkafka: %w", err)
	}
	return bin, nil
}

// RdkafkaRecipe is a Scenario and the Rdkafka settings that make librdkafka
// write some records twice. Run it as
//
//	s := rec.Scenario
//	s.Produce = RdkafkaProduce(rec.Rdkafka)
//
// after setting rec.Rdkafka's Log, Reports or Debug as wanted.
type RdkafkaRecipe struct {
	Scenario Scenario
	Rdkafka  Rdkafka
}

// RdkafkaEpochBump is the idempotent epoch bump recipe (see Rdkafka): 4
// records on topic "orders", 500ms apart, in one batch (linger.ms=1800),
// whose response a Delay fault holds past the first record's
// message.timeout.ms (3000). The log holds the batch (epoch 0, sequence 0),
// then again the records that had not yet expired (epoch 1, sequence 0);
// the first record is reported timed out (-192) although the log holds it.
func RdkafkaEpochBump(name string) RdkafkaRecipe {
	return RdkafkaRecipe{
		Scenario: Scenario{Name: name, Topic: "orders", Records: 4,
			Faults: []Fault{{Action: Delay, Max: 1, Delay: 10 * time.Second}}},
		Rdkafka: Rdkafka{
			Config:      []string{"enable.idempotence=true", "linger.ms=1800", "message.timeout.ms=3000"},
			Async:       true,
			Interval:    500 * time.Millisecond,
			AllowFailed: true,
		},
	}
}

// RdkafkaEpochBumpAnswered is the idempotent epoch bump of RdkafkaEpochBump
// with the first attempt's answer on the wire: 4 records on topic
// "orders", 1s apart, lingering 3.2s into one batch; that request is
// appended and answered REQUEST_TIMED_OUT after its TimeoutMillis
// (request.timeout.ms=700, TimedOutAfterAppend) at its base offset. The
// messages wait retry.backoff.ms=2000 to be retried (until about 5.9s),
// during which the first one's message.timeout.ms (4.5s after it was
// produced) expires: librdkafka's timeout scan (once a second) fails it,
// bumps the epoch and sends the records still held again under epoch 1
// from sequence 0, which the broker appends again; the last record (due
// at 7.5s) always survives to be re-sent. The capture shows both appends
// (the log holds the re-sent records twice). The margins are wide because
// the scan runs once a second: with a 1s backoff the retry could beat the
// scan on a loaded machine and keep the epoch (the broker then
// deduplicates).
func RdkafkaEpochBumpAnswered(name string) RdkafkaRecipe {
	return RdkafkaRecipe{
		Scenario: Scenario{Name: name, Topic: "orders", Records: 4,
			Faults: []Fault{{Action: TimedOutAfterAppend, Max: 1}}},
		Rdkafka: Rdkafka{
			Config: []string{"enable.idempotence=true", "linger.ms=3200", "message.timeout.ms=4500",
				"request.timeout.ms=700", "retry.backoff.ms=2000", "retry.backoff.max.ms=2000"},
			Async:       true,
			Interval:    time.Second,
			AllowFailed: true,
		},
	}
}

// RdkafkaRebatch is the non-idempotent re-batched retry recipe (see
// Rdkafka): 6 records on topic "orders", 100ms apart, one request in
// flight; the first produce request (one record) is appended and answered
// REQUEST_TIMED_OUT after its TimeoutMillis (request.timeout.ms=300,
// TimedOutAfterAppend). librdkafka retries the record on the same
// connection in a new batch together with newer records: the log holds it
// twice, alone and then at the head of a bigger batch.
func RdkafkaRebatch(name string) RdkafkaRecipe {
	return RdkafkaRecipe{
		Scenario: Scenario{Name: name, Topic: "orders", Records: 6,
			Faults: []Fault{{Action: TimedOutAfterAppend, Max: 1}}},
		Rdkafka: Rdkafka{
			Config:   []string{"enable.idempotence=false", "max.in.flight.requests.per.connection=1", "request.timeout.ms=300"},
			Async:    true,
			Interval: 100 * time.Millisecond,
		},
	}
}
