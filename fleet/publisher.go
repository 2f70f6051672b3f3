package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kdupcap/kdupcap/decode"
)

// Defaults of PublisherOptions.
const (
	DefaultMaxBuffered      = 100000
	DefaultMaxBufferedBytes = 64 << 20
	DefaultDeliveryTimeout  = 30 * time.Second
)

// PublisherOptions configure a Publisher.
type PublisherOptions struct {
	// Seeds are the brokers ("HOST:PORT") of the cluster Topic is on.
	Seeds []string
	Topic string
	// Client is how to connect (TLS, SASL).
	Client ClientOptions
	// Encoder names the host and run, and which batches carry prints.
	Encoder EncoderOptions
	// MaxBuffered and MaxBufferedBytes bound the records held while the
	// cluster is slow or away (0: the defaults); a record that does not
	// fit is dropped at once, counted, never waited for.
	MaxBuffered      int
	MaxBufferedBytes int
	// DeliveryTimeout bounds how long a record is retried (0: default).
	DeliveryTimeout time.Duration
}

// PublisherStats count what a Publisher did.
type PublisherStats struct {
	// Records and Bytes: the records handed to the client (their values'
	// bytes); Delivered: those the cluster acknowledged.
	Records, Bytes, Delivered int64
	// Dropped: records refused because the buffer was full; Failed:
	// records the client gave up on (the cluster unreachable for
	// DeliveryTimeout, refused, ...). Neither reaches a correlation.
	Dropped, Failed int64
	// Errors are the first distinct errors of Failed.
	Errors []string
}

// maxPublishErrs bounds PublisherStats.Errors.
const maxPublishErrs = 3

// Publisher publishes the attempts of a capture to a Kafka topic in the
// background. Exchange, ConnEnd, EndTxn and InitProducerID are called on
// the capture's goroutine (as a decode.Sink's methods are) and never block: a record is encoded
// there and handed to franz-go's client, which sends it in batches
// (zstd-compressed, keyed by producer: Key); a full buffer drops it,
// counted. Stats and IsOwnConn are safe for concurrent use.
type Publisher struct {
	enc   *Encoder
	cl    *kgo.Client
	topic string
	conns *connSet
	emit  Emit

	records, bytes, delivered, dropped, failed atomic.Int64

	errMu sync.Mutex
	errs  []string
}

// NewPublisher returns a Publisher of o. The client connects lazily: an
// unreachable cluster shows as Failed records, not as an error here.
func NewPublisher(o PublisherOptions) (*Publisher, error) {
	if len(o.Seeds) == 0 {
		return nil, errors.New("fleet: publisher: no seed broker")
	}
	if o.Topic == "" {
		return nil, errors.New("fleet: publisher: no topic")
	}
	if o.MaxBuffered <= 0 {
		o.MaxBuffered = DefaultMaxBuffered
	}
	if o.MaxBufferedBytes <= 0 {
		o.MaxBufferedBytes = DefaultMaxBufferedBytes
	}
	if o.DeliveryTimeout <= 0 {
		o.DeliveryTimeout = DefaultDeliveryTimeout
	}
	p := &Publisher{enc: NewEncoder(o.Encoder), topic: o.Topic, conns: newConnSet(o.Client.TLS)}
	opts := []kgo.Opt{
		kgo.SeedBrokers(o.Seeds...),
		kgo.DefaultProduceTopic(o.Topic),
		kgo.ClientID("kdupcap-attempts"),
		kgo.MaxBufferedRecords(o.MaxBuffered),
		kgo.MaxBufferedBytes(o.MaxBufferedBytes),
		kgo.RecordDeliveryTimeout(o.DeliveryTimeout),
		kgo.ProducerBatchCompression(kgo.ZstdCompression(), kgo.NoCompression()),
		kgo.ProducerLinger(20 * time.Millisecond),
	}
	opts = append(opts, o.Client.kgoOpts(p.conns)...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("fleet: publisher: %w", err)
	}
	p.cl = cl
	p.emit = p.produce
	return p, nil
}

// Exchange publishes x (decode.Sink's rules: during the call only).
func (p *Publisher) Exchange(x *decode.Exchange) { p.enc.Exchange(x, p.emit) }

// ConnEnd publishes how connection c ended.
func (p *Publisher) ConnEnd(c *decode.ConnInfo, e decode.ConnEnd) { p.enc.ConnEnd(c, e, p.emit) }

// EndTxn publishes an EndTxn request and its answer (decode.TxnSink's
// rules: during the call only).
func (p *Publisher) EndTxn(x *decode.EndTxn) { p.enc.EndTxn(x, p.emit) }

// InitProducerID publishes an InitProducerId exchange of a transactional
// producer.
func (p *Publisher) InitProducerID(x *decode.InitProducerID) { p.enc.InitProducerID(x, p.emit) }

func (p *Publisher) produce(key, value []byte) {
	p.records.Add(1)
	p.bytes.Add(int64(len(value)))
	r := &kgo.Record{Topic: p.topic, Key: bytes.Clone(key), Value: bytes.Clone(value)}
	p.cl.TryProduce(context.Background(), r, p.done)
}

func (p *Publisher) done(_ *kgo.Record, err error) {
	switch {
	case err == nil:
		p.delivered.Add(1)
	case errors.Is(err, kgo.ErrMaxBuffered):
		p.dropped.Add(1)
	default:
		p.failed.Add(1)
		p.errMu.Lock()
		if len(p.errs) < maxPublishErrs && !slices.Contains(p.errs, err.Error()) {
			p.errs = append(p.errs, err.Error())
		}
		p.errMu.Unlock()
	}
}

// Stats returns the counts so far.
func (p *Publisher) Stats() PublisherStats {
	p.errMu.Lock()
	errs := slices.Clone(p.errs)
	p.errMu.Unlock()
	return PublisherStats{Records: p.records.Load(), Bytes: p.bytes.Load(), Delivered: p.delivered.Load(),
		Dropped: p.dropped.Load(), Failed: p.failed.Load(), Errors: errs}
}

// IsOwnConn reports whether a and b are the ends of a connection the
// publisher dialed (open, or closed within two minutes), so that a live
// capture leaves them out.
func (p *Publisher) IsOwnConn(a, b netip.AddrPort) bool { return p.conns.has(a, b) }

// Close waits until every record is delivered or failed, or ctx is done
// (the records still buffered then fail), and closes the client. It
// returns an error when records were dropped or failed.
func (p *Publisher) Close(ctx context.Context) error {
	ferr := p.cl.Flush(ctx)
	p.cl.Close()
	s := p.Stats()
	if ferr != nil || s.Dropped > 0 || s.Failed > 0 {
		lost := s.Records - s.Delivered
		msg := fmt.Sprintf("fleet: %d of %d attempt records to topic %s not delivered (%d dropped: buffer full; %d failed)",
			lost, s.Records, p.topic, s.Dropped, s.Failed)
		for _, e := range s.Errors {
			msg += "; " + e
		}
		if ferr != nil {
			msg += "; " + ferr.Error()
		}
		return errors.New(msg)
	}
	return nil
}
