package kafkatest

import (
	"context"
	"fmt"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

// KafkaGoWriter configures the segmentio/kafka-go Writer KafkaGoProduce
// runs.
type KafkaGoWriter struct {
	Codec Codec
	// WriteTimeout is the Writer's WriteTimeout: the deadline of each
	// produce attempt; kafka-go sends half of it as the request's
	// TimeoutMillis (499 for 1s). 0 means 1s.
	WriteTimeout time.Duration
	// PerRequest is how many values each WriteMessages call carries (one
	// batch, one request); 0 means 1.
	PerRequest int
}

// KafkaGoProduce returns a ProduceFunc that writes the values, keyed
// "key-<i>", to partition 0 through a kafka-go Writer: RequiredAcks=-1,
// MaxAttempts 5 with a 50-100ms backoff, synchronous WriteMessages calls of
// PerRequest values each (one batch, one request per call).
//
// What kafka-go does on a retry, measured against TimedOutAfterAppend: it
// retries REQUEST_TIMED_OUT (a temporary error; no connection close or
// client timeout is needed) on the same connection after the backoff, with
// a new correlation ID and a rebuilt batch: the same records in the same
// order, but new timestamps (a Message without Time is stamped when it is
// encoded) and so a new CRC and, compressed, new bytes. Only record-level
// matching finds it.
func KafkaGoProduce(p KafkaGoWriter) ProduceFunc {
	return func(ctx context.Context, addr, topic string, values []string) error {
		wt := p.WriteTimeout
		if wt <= 0 {
			wt = time.Second
		}
		per := max(p.PerRequest, 1)
		w := &kafka.Writer{
			Addr:            kafka.TCP(addr),
			Topic:           topic,
			Balancer:        kafka.BalancerFunc(func(kafka.Message, ...int) int { return 0 }),
			MaxAttempts:     5,
			WriteBackoffMin: 50 * time.Millisecond,
			WriteBackoffMax: 100 * time.Millisecond,
			BatchSize:       per,
			BatchTimeout:    5 * time.Millisecond,
			ReadTimeout:     wt,
			WriteTimeout:    wt,
			RequiredAcks:    kafka.RequireAll,
			Compression:     kafkaGoCodec(p.Codec),
		}
		defer w.Close()
		for start := 0; start < len(values); start += per {
			var msgs []kafka.Message
			for i := start; i < min(start+per, len(values)); i++ {
				msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprintf("key-%d", i)), Value: []byte(values[i])})
			}
			if err := w.WriteMessages(ctx, msgs...); err != nil {
				return fmt.Errorf("kafkatest: kafka-go write %q..: %w", values[start], err)
			}
		}
		if err := w.Close(); err != nil {
			return fmt.Errorf("kafkatest: kafka-go close: %w", err)
		}
		return nil
	}
}

func kafkaGoCodec(c Codec) compress.Compression {
	switch c {
	case CodecGzip:
		return compress.Gzip
	case CodecSnappy:
		return compress.Snappy
	case CodecLz4:
		return compress.Lz4
	case CodecZstd:
		return compress.Zstd
	}
	return 0
}
