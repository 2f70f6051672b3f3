package kafkatest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Settings are the kgo producer settings a test varies to check what is read
// off the wire: acks, requests in flight, compression, and a pace that lets
// several requests be in flight at once. The zero value keeps Produce's
// defaults (acks=all, no compression, one group of records at a time).
type Settings struct {
	// Acks is "all" (or ""), "1" or "0"; acks other than all need
	// Idempotent false.
	Acks string
	// MaxInFlight is kgo.MaxProduceRequestsInflightPerBroker (only without
	// idempotence; kgo's idempotent producer allows 5); 0 keeps kgo's 1.
	MaxInFlight int
	// Compression is the batches' codec (CodecNone, the zero value, by
	// default).
	Compression Codec
	// Spacing, when positive, produces every record on its own, Spacing
	// apart, without waiting for the earlier ones, then waits for all:
	// requests pile up in flight while the broker is slow to answer.
	Spacing time.Duration
}

// opts returns the kgo options of s, to append after Produce's defaults.
func (s Settings) opts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	switch s.Acks {
	case "", "all":
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	default:
		return nil, fmt.Errorf("kafkatest: acks %q: want all, 1 or 0", s.Acks)
	}
	if s.MaxInFlight > 0 {
		opts = append(opts, kgo.MaxProduceRequestsInflightPerBroker(s.MaxInFlight))
	}
	var codec kgo.CompressionCodec
	switch s.Compression {
	case CodecNone:
		codec = kgo.NoCompression()
	case CodecGzip:
		codec = kgo.GzipCompression()
	case CodecSnappy:
		codec = kgo.SnappyCompression()
	case CodecLz4:
		codec = kgo.Lz4Compression()
	case CodecZstd:
		codec = kgo.ZstdCompression()
	default:
		return nil, fmt.Errorf("kafkatest: compression %v: want one of Codecs", s.Compression)
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec))
	if s.Spacing > 0 {
		// One record a batch: each is sent as soon as a request may go.
		opts = append(opts, kgo.ProducerLinger(0))
	}
	return opts, nil
}

// produceSpaced produces each value on its own, p.Spacing apart, to the
// partitions round robin, and waits for every result.
func produceSpaced(ctx context.Context, cl *kgo.Client, p Producer, values []string) error {
	parts := max(p.Partitions, 1)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for i, v := range values {
		if i > 0 {
			select {
			case <-time.After(p.Spacing):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		wg.Add(1)
		r := &kgo.Record{Value: []byte(v), Partition: int32(i) % parts}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = fmt.Errorf("kafkatest: produce %q: %w", v, err)
			}
		})
	}
	wg.Wait()
	return first
}
