package kafkatest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/kdupcap/kdupcap/internal/kafkatest"
)

// A non-idempotent kgo producer whose third produce request is answered
// REQUEST_TIMED_OUT after the append: it resends the batch, and the log read
// back holds that record twice.
func ExampleRun() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := kafkatest.Scenario{
		Name:    "example",
		Topic:   "orders",
		Records: 5,
		Faults:  []kafkatest.Fault{{Action: kafkatest.TimedOutAfterAppend, Every: 3, Max: 1}},
		Producer: kafkatest.Producer{
			ProduceTimeout: 300 * time.Millisecond, // the request's TimeoutMillis
		},
	}
	// A path instead of "" captures the run with tcpdump (see CanCapture).
	res, err := kafkatest.Run(ctx, s, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range res.Log.Duplicates() {
		fmt.Printf("%s held %d times\n", d.Value, len(d.Records))
	}
}
