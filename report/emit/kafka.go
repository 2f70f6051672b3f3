package emit

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/report"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultBuffer is how many records a Kafka sink holds while the
// brokers are slow or away before Finding fails with kgo.ErrMaxBuffered.
const DefaultBuffer = 10000

// maxErrs bounds the distinct errors one returned error names.
const maxErrs = 3

// closeWait bounds how long Close waits, after closing the client, for the
// promises of the records the client failed.
const closeWait = 5 * time.Second

// Kafka is a report.Writer that publishes each finding, and the summary, as one
// record to a Kafka topic with franz-go's kgo client, so that many hosts
// feed one place. A record's value is exactly the JSON object report.NewJSON
// writes on a line (without the newline); a finding's key is
// CLIENT|BROKER|TOPIC|PARTITION|CRC (the batch's identity, so every report
// of one batch lands on one partition), the summary's key is empty.
//
// Records are produced asynchronously into a bounded buffer, so a slow
// emit cluster never stalls the capture: a record that does not fit fails
// at once. Every failed record is counted and its error returned, by the
// next Finding or Summary or by Close; none is dropped silently. Methods
// are safe for concurrent use.
type Kafka struct {
	cl    *kgo.Client
	topic string
	conns *connSet

	mu     sync.Mutex
	enc    *report.LineEncoder
	closed bool

	inflight sync.WaitGroup
	pending  atomic.Int64 // records whose promise has not run

	errMu  sync.Mutex
	failed int64   // records that failed, all told
	sent   int64   // records acknowledged
	unseen int64   // failures not yet returned
	errs   []error // their distinct errors, at most maxErrs
}

// NewKafka returns a Kafka sink producing to topic through seeds. It sets
// the client ID "kdupcap", a buffer of DefaultBuffer records and a
// 30s delivery timeout; opts come after and override them, except the
// dialer: NewKafka dials every connection itself (plain TCP, 10s timeout),
// to know the emitter's own connections (IsOwnConn), so kgo.Dialer and
// kgo.DialTLSConfig cannot be used. The client connects lazily; an
// unreachable cluster shows as failed records.
func NewKafka(seeds []string, topic string, opts ...kgo.Opt) (*Kafka, error) {
	return NewKafkaTLS(seeds, topic, nil, opts...)
}

// NewKafkaTLS is NewKafka with every connection wrapped in TLS with cfg
// (its ServerName set from the broker's host when empty); nil is plain
// TCP. SASL goes in opts (kgo.SASL).
func NewKafkaTLS(seeds []string, topic string, cfg *tls.Config, opts ...kgo.Opt) (*Kafka, error) {
	if len(seeds) == 0 {
		return nil, errors.New("report: kafka: no seed broker")
	}
	if err := checkTopic(topic); err != nil {
		return nil, fmt.Errorf("report: kafka: %w", err)
	}
	k := &Kafka{topic: topic, conns: newConnSet(), enc: report.NewLineEncoder()}
	k.conns.tls = cfg
	all := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.DefaultProduceTopic(topic),
		kgo.ClientID("kdupcap"),
		kgo.MaxBufferedRecords(DefaultBuffer),
		kgo.RecordDeliveryTimeout(30 * time.Second),
	}
	all = append(all, opts...)
	all = append(all, kgo.Dialer(k.conns.dial))
	cl, err := kgo.NewClient(all...)
	if err != nil {
		return nil, fmt.Errorf("report: kafka: %w", err)
	}
	k.cl = cl
	return k, nil
}

// Finding produces f's record.
func (k *Kafka) Finding(f detect.Finding) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return errors.New("report: kafka: finding after Close")
	}
	line, err := k.enc.Finding(&f)
	if err != nil {
		return fmt.Errorf("report: kafka: encoding finding: %w", err)
	}
	key := strings.Join([]string{f.Client.String(), f.Broker.String(), report.TopicName(&f),
		strconv.Itoa(int(f.Partition)), fmt.Sprintf("0x%08x", f.BatchCRC)}, "|")
	k.produce([]byte(key), line)
	return k.takeErr()
}

// Summary produces s's record.
func (k *Kafka) Summary(s report.Summary) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return errors.New("report: kafka: summary after Close")
	}
	line, err := k.enc.Summary(&s)
	if err != nil {
		return fmt.Errorf("report: kafka: encoding summary: %w", err)
	}
	k.produce(nil, line)
	return k.takeErr()
}

// produce hands a copy of line, without its newline, to the client. k.mu is
// held.
func (k *Kafka) produce(key, line []byte) {
	value := bytes.Clone(bytes.TrimSuffix(line, []byte("\n")))
	k.inflight.Add(1)
	k.pending.Add(1)
	k.cl.TryProduce(context.Background(), &kgo.Record{Topic: k.topic, Key: key, Value: value}, k.done)
}

// done is the promise of every record.
func (k *Kafka) done(_ *kgo.Record, err error) {
	defer k.inflight.Done()
	defer k.pending.Add(-1)
	k.errMu.Lock()
	defer k.errMu.Unlock()
	if err == nil {
		k.sent++
		return
	}
	k.failed++
	k.unseen++
	if len(k.errs) < maxErrs && !slices.ContainsFunc(k.errs, func(e error) bool { return e.Error() == err.Error() }) {
		k.errs = append(k.errs, err)
	}
}

// takeErr returns the failures not returned yet, as one error.
func (k *Kafka) takeErr() error {
	k.errMu.Lock()
	defer k.errMu.Unlock()
	if k.unseen == 0 {
		return nil
	}
	args := []any{plural(k.unseen, "record"), k.topic, k.failed}
	for _, e := range k.errs {
		args = append(args, e)
	}
	err := fmt.Errorf("report: kafka: %s to topic %s failed (%d in all): "+
		strings.TrimSuffix(strings.Repeat("%w; ", len(k.errs)), "; "), args...)
	k.unseen, k.errs = 0, nil
	return err
}

// Counts returns how many records were acknowledged and how many failed.
func (k *Kafka) Counts() (sent, failed int64) {
	k.errMu.Lock()
	defer k.errMu.Unlock()
	return k.sent, k.failed
}

// IsOwnConn reports whether a and b are the two ends, in either order, of
// a TCP connection this sink's client dialed (open, or closed within the
// last two minutes), so that a capture can leave the sink's own traffic
// out. A connection is known before its first byte is written.
func (k *Kafka) IsOwnConn(a, b netip.AddrPort) bool { return k.conns.has(a, b) }

// Close waits for every record to be delivered or to fail, until ctx is
// done, then closes the client. It returns the failures not yet returned,
// and ctx's error if records were still buffered. A second Close does
// nothing.
func (k *Kafka) Close(ctx context.Context) error {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return nil
	}
	k.closed = true
	k.mu.Unlock()

	var errs []error
	if err := k.cl.Flush(ctx); err != nil {
		errs = append(errs, fmt.Errorf("report: kafka: flushing: %w", err))
	}
	// Records that failed before they were buffered are not flushed; wait
	// for their promises too, unless ctx is done.
	waited := make(chan struct{})
	go func() { k.inflight.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-ctx.Done():
	}
	k.cl.Close() // fails what is still buffered, calling its promises
	select {
	case <-waited:
	case <-time.After(closeWait):
		errs = append(errs, fmt.Errorf("report: kafka: %s unsettled %v after closing the client", plural(k.pending.Load(), "record"), closeWait))
	}
	if err := k.takeErr(); err != nil {
		errs = append([]error{err}, errs...)
	}
	return errors.Join(errs...)
}

// plural is "1 noun" or "N nouns".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatInt(n, 10) + " " + noun + "s"
}
