package kafkatest

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Restart configures RestartProduce: an application that gives up on its
// idempotent producer and sends the last value again from a new one.
type Restart struct {
	// ClientID is the request header's client.id of both producers; ""
	// keeps kgo's default.
	ClientID string
	// GiveUp is how long the application waits for the last value's
	// acknowledgment before it starts the second producer; 0 means 300ms.
	GiveUp time.Duration
}

// RestartProduce returns a ProduceFunc that writes the values one at a time
// to partition 0 with an idempotent kgo producer (acks=all, no
// compression), gives up waiting for the last one after r.GiveUp, and sends
// it again from a new producer instance (a supervisor's restart: the same
// client.id, a new producer ID from InitProducerId) while the first one's
// request is still unanswered; then waits for both. With a fault that holds
// the last request's answer (Delay, longer than GiveUp) the log holds the
// last value twice, under two producer IDs, which the broker cannot
// deduplicate. It fails if the held request is answered before the restart.
func RestartProduce(r Restart) ProduceFunc {
	giveUp := r.GiveUp
	if giveUp <= 0 {
		giveUp = 300 * time.Millisecond
	}
	return func(ctx context.Context, addr, topic string, values []string) error {
		if len(values) == 0 {
			return nil
		}
		opts := baseOpts(addr, topic, r.ClientID, true)
		first, err := kgo.NewClient(opts...)
		if err != nil {
			return fmt.Errorf("kafkatest: restart producer: %w", err)
		}
		defer first.Close()
		last := len(values) - 1
		for _, v := range values[:last] {
			if err := first.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				return fmt.Errorf("kafkatest: restart produce %q: %w", v, err)
			}
		}
		done := make(chan error, 1)
		first.Produce(ctx, &kgo.Record{Value: []byte(values[last])}, func(_ *kgo.Record, err error) { done <- err })
		select {
		case err := <-done:
			return fmt.Errorf("kafkatest: restart: the held request was answered before the restart: %v", err)
		case <-time.After(giveUp):
		}
		second, err := kgo.NewClient(opts...)
		if err != nil {
			return fmt.Errorf("kafkatest: restart producer: %w", err)
		}
		defer second.Close()
		if err := second.ProduceSync(ctx, &kgo.Record{Value: []byte(values[last])}).FirstErr(); err != nil {
			return fmt.Errorf("kafkatest: restart produce %q again: %w", values[last], err)
		}
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
