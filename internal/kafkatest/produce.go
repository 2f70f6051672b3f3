package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Producer configures the kgo producer Produce runs.
type Producer struct {
	// Idempotent keeps kgo's idempotent writes; false sets
	// kgo.DisableIdempotentWrite.
	Idempotent bool
	// ClientID is the request header's client.id; "" keeps kgo's default.
	ClientID string
	// ProduceTimeout is the produce request's TimeoutMillis
	// (kgo.ProduceRequestTimeout, at least 100ms); 0 keeps kgo's 10s.
	ProduceTimeout time.Duration
	// TimeoutOverhead is added to ProduceTimeout for kgo's own read deadline
	// (kgo.RequestTimeoutOverhead, at least 100ms); 0 keeps kgo's 10s.
	TimeoutOverhead time.Duration
	// Partitions spreads the records round robin over partitions
	// 0..Partitions-1; 0 means 1.
	Partitions int32
	// PerRequest is how many records are produced together before waiting
	// for them: 1 (or 0) sends each record alone, one batch per request.
	PerRequest int
	// SASL, when set, authenticates the producer (sasl.go).
	SASL *SASL
	// TLS, when set, connects over TLS (tls.go).
	TLS *TLS

	// Settings beyond the defaults (see settings.go).
	Settings
}

// Values returns n distinct record values "rec-<scenario>-<i>".
func Values(scenario string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("rec-%s-%d", scenario, i)
	}
	return out
}

// Produce writes values to topic through a kgo producer against the broker at
// addr: acks=all, no compression, the partition chosen by Producer. It waits
// for every record's result and returns the first error; ctx bounds the run.
func Produce(ctx context.Context, addr, topic string, p Producer, values []string) error {
	opts := append(baseOpts(addr, topic, p.ClientID, p.Idempotent),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if p.ProduceTimeout > 0 {
		opts = append(opts, kgo.ProduceRequestTimeout(p.ProduceTimeout))
	}
	if p.TimeoutOverhead > 0 {
		opts = append(opts, kgo.RequestTimeoutOverhead(p.TimeoutOverhead))
	}
	more, err := p.Settings.opts()
	if err != nil {
		return err
	}
	auth, err := p.SASL.kgoOpts()
	if err != nil {
		return err
	}
	more = append(more, auth...)
	more = append(more, p.TLS.kgoOpts()...)
	cl, err := kgo.NewClient(append(opts, more...)...)
	if err != nil {
		return fmt.Errorf("kafkatest: producer: %w", err)
	}
	defer cl.Close()
	if p.Spacing > 0 {
		return produceSpaced(ctx, cl, p, values)
	}

	parts := max(p.Partitions, 1)
	per := max(p.PerRequest, 1)
	for start := 0; start < len(values); start += per {
		group := values[start:min(start+per, len(values))]
		recs := make([]*kgo.Record, len(group))
		for i, v := range group {
			recs[i] = &kgo.Record{
				Value:     []byte(v),
				Partition: int32((start / per) % int(parts)),
			}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("kafkatest: produce %q..: %w", group[0], err)
		}
	}
	if err := cl.Flush(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("kafkatest: flush: %w", err)
	}
	return nil
}

// baseOpts are the options every kgo producer of the package starts from:
// the broker at addr, records to topic at the partition each names, acks=all,
// no compression, the client.id clientID (kgo's default when empty), and
// idempotence only when asked for.
func baseOpts(addr, topic, clientID string, idempotent bool) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	}
	if !idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if clientID != "" {
		opts = append(opts, kgo.ClientID(clientID))
	}
	return opts
}
