package kafkatest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// AppTwice configures AppTwiceProduce: an application that produces some
// records twice, each time answered with success.
type AppTwice struct {
	// ClientID is the request header's client.id; "" keeps kgo's default.
	ClientID string
	// Twice are the indexes of the values produced a second time, right
	// after the first; nil means {1}.
	Twice []int
}

// AppTwiceProduce returns a ProduceFunc that writes every value to
// partition 0 through a non-idempotent kgo producer (acks=all, no
// compression), one record a request, each awaited before the next. Value i
// has key "key-<i>" and one header "app"="<i>"; the values at a.Twice are
// produced again, the same key, value and header, 2ms after their first
// copy succeeded (so with another timestamp: the two batches differ in
// bytes and CRC, only the records are the same). No fault is needed: both copies are answered with
// success, and the log holds both.
func AppTwiceProduce(a AppTwice) ProduceFunc {
	twice := a.Twice
	if twice == nil {
		twice = []int{1}
	}
	return func(ctx context.Context, addr, topic string, values []string) error {
		cl, err := kgo.NewClient(baseOpts(addr, topic, a.ClientID, false)...)
		if err != nil {
			return fmt.Errorf("kafkatest: app-twice producer: %w", err)
		}
		defer cl.Close()
		for i, v := range values {
			n := 1
			if slices.Contains(twice, i) {
				n = 2
			}
			for c := range n {
				if c > 0 {
					// A later millisecond: the copy's timestamp, and so
					// its batch's bytes, differ from the first's.
					time.Sleep(2 * time.Millisecond)
				}
				r := &kgo.Record{
					Key:     []byte("key-" + strconv.Itoa(i)),
					Value:   []byte(v),
					Headers: []kgo.RecordHeader{{Key: "app", Value: []byte(strconv.Itoa(i))}},
				}
				if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
					return fmt.Errorf("kafkatest: app-twice produce %q: %w", v, err)
				}
			}
		}
		return nil
	}
}
