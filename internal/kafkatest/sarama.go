package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// SaramaProducer configures the IBM/sarama async producer SaramaProduce runs.
type SaramaProducer struct {
	Codec Codec
	// ClientID is the request header's client.id; "" means "sarama".
	ClientID string
	// ProduceTimeout is the produce request's TimeoutMillis
	// (Producer.Timeout); 0 means 300ms.
	ProduceTimeout time.Duration
	// Interval is the pause between two messages handed to the producer;
	// 0 means 20ms.
	Interval time.Duration
}

// SaramaProduce returns a ProduceFunc that writes the values, keyed
// "key-<i>", to partition 0 through sarama's async producer (protocol
// version 2.8, so Produce v9): not idempotent, acks=all (WaitForAll), 5
// retries 50ms apart, up to 5 requests in flight, a flush every 10ms of at
// most 4 messages, one message handed over every Interval. It waits for
// every message's result and returns the errors.
//
// What sarama does on a retry, measured against TimedOutAfterAppend on the
// first produce request (a one-record batch answered REQUEST_TIMED_OUT
// after the append): it re-batches. The failed record goes out again on the
// same connection, with a new correlation ID, in a new batch together with
// newer records (a four-record batch: the retried record at delta 0, then
// the next three), with a new timestamp (sarama stamps records when it
// builds a batch) and so a new CRC. The retried record is never re-sent as
// the same bytes, so only record-level matching finds it.
func SaramaProduce(p SaramaProducer) ProduceFunc {
	return func(ctx context.Context, addr, topic string, values []string) error {
		cfg := sarama.NewConfig()
		cfg.Version = sarama.V2_8_0_0
		cfg.ClientID = p.ClientID
		if cfg.ClientID == "" {
			cfg.ClientID = "sarama"
		}
		cfg.Producer.Idempotent = false
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Producer.Timeout = p.ProduceTimeout
		if cfg.Producer.Timeout <= 0 {
			cfg.Producer.Timeout = 300 * time.Millisecond
		}
		cfg.Producer.Retry.Max = 5
		cfg.Producer.Retry.Backoff = 50 * time.Millisecond
		cfg.Producer.Partitioner = sarama.NewManualPartitioner
		cfg.Producer.Return.Successes = true
		cfg.Producer.Return.Errors = true
		cfg.Producer.Flush.Frequency = 10 * time.Millisecond
		cfg.Producer.Flush.MaxMessages = 4
		cfg.Producer.Compression = saramaCodec(p.Codec)
		cfg.Net.MaxOpenRequests = 5
		cfg.Net.ReadTimeout = 10 * time.Second
		cfg.Metadata.Retry.Backoff = 50 * time.Millisecond

		ap, err := sarama.NewAsyncProducer([]string{addr}, cfg)
		if err != nil {
			return fmt.Errorf("kafkatest: sarama producer: %w", err)
		}
		interval := p.Interval
		if interval <= 0 {
			interval = 20 * time.Millisecond
		}
		var errs []error
		done := 0
		// take receives one result, waiting for it if block.
		take := func(block bool) bool {
			if !block {
				select {
				case <-ap.Successes():
				case perr := <-ap.Errors():
					errs = append(errs, fmt.Errorf("kafkatest: sarama produce: %w", perr))
				default:
					return false
				}
				done++
				return true
			}
			select {
			case <-ap.Successes():
			case perr := <-ap.Errors():
				errs = append(errs, fmt.Errorf("kafkatest: sarama produce: %w", perr))
			case <-ctx.Done():
				return false
			}
			done++
			return true
		}
		for i, v := range values {
			msg := &sarama.ProducerMessage{
				Topic:     topic,
				Partition: 0,
				Key:       sarama.StringEncoder(fmt.Sprintf("key-%d", i)),
				Value:     sarama.StringEncoder(v),
			}
			select {
			case ap.Input() <- msg:
			case <-ctx.Done():
				ap.AsyncClose()
				return fmt.Errorf("kafkatest: sarama produce: %w", ctx.Err())
			}
			for take(false) {
			}
			time.Sleep(interval)
		}
		for done < len(values) && take(true) {
		}
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("kafkatest: sarama produce: %d of %d answered: %w", done, len(values), err))
		}
		if err := ap.Close(); err != nil {
			errs = append(errs, fmt.Errorf("kafkatest: sarama close: %w", err))
		}
		return errors.Join(errs...)
	}
}

func saramaCodec(c Codec) sarama.CompressionCodec {
	switch c {
	case CodecGzip:
		return sarama.CompressionGZIP
	case CodecSnappy:
		return sarama.CompressionSnappy
	case CodecLz4:
		return sarama.CompressionLZ4
	case CodecZstd:
		return sarama.CompressionZSTD
	}
	return sarama.CompressionNone
}
