package kafkatest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/internal/testenv"
)

// TestClients runs every client this package drives, in every codec, once
// without a fault and once with TimedOutAfterAppend, and checks the log read
// back: each batch in the codec asked for (so ReadBack decompressed it),
// every value produced, keys and headers kept, and, with the fault, the
// records of the faulted request in the log twice (the client re-sent them
// after the append).
func TestClients(t *testing.T) {
	type client struct {
		name    string
		needs   string
		records int
		// produce builds the ProduceFunc for a codec.
		produce func(Codec) ProduceFunc
		fault   Fault
		legacy  bool // librdkafka compresses gzip, snappy, lz4 only then
		keyed   bool // keys "key-<i>..."
	}
	clients := []client{
		{
			name: "sarama", records: 10, keyed: true,
			produce: func(c Codec) ProduceFunc { return SaramaProduce(SaramaProducer{Codec: c}) },
			fault:   Fault{Action: TimedOutAfterAppend, Max: 1},
		},
		{
			name: "kafka-go", records: 9, keyed: true,
			// TimeoutMillis 999, waited out by the fault: the answer
			// comes 1s before the client's own deadline.
			produce: func(c Codec) ProduceFunc {
				return KafkaGoProduce(KafkaGoWriter{Codec: c, PerRequest: 3, WriteTimeout: 2 * time.Second})
			},
			fault: Fault{Action: TimedOutAfterAppend, Every: 2, Max: 1},
		},
		{
			name: "kcat", needs: "kcat", records: 5, keyed: true, legacy: true,
			produce: func(c Codec) ProduceFunc {
				return KcatCompressed(c, "enable.idempotence=false", "request.timeout.ms=300", "message.timeout.ms=15000")
			},
			fault: Fault{Action: TimedOutAfterAppend, Every: 2, Max: 1},
		},
	}
	for _, cl := range clients {
		for _, codec := range Codecs {
			if cl.name == "kcat" && codec == CodecNone {
				continue // KcatProduce, covered by TestKcatScenario
			}
			for _, faulted := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/faulted=%t", cl.name, codec, faulted)
				t.Run(name, func(t *testing.T) {
					if cl.needs != "" {
						testenv.Tool(t, cl.needs)
					}
					t.Parallel()
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					s := Scenario{Name: "c", Topic: "orders", Records: cl.records,
						Produce: cl.produce(codec), LegacyVersions: cl.legacy}
					if faulted {
						s.Faults = []Fault{cl.fault}
					}
					res, err := Run(ctx, s, "")
					if err != nil {
						t.Fatal(err)
					}
					pl, _ := res.Log.Partition(0)
					for _, b := range pl.Batches {
						if b.Codec() != codec {
							t.Errorf("batch at %d has codec %s, want %s", b.BaseOffset, b.Codec(), codec)
						}
					}
					held := make(map[string]int)
					for _, r := range pl.Records {
						held[r.Value]++
						if cl.keyed && (r.KeyNull || len(r.Key) < 5 || r.Key[:4] != "key-") {
							t.Errorf("record at %d has key %q, want key-<i>", r.Offset, r.Key)
						}
					}
					for _, v := range res.Values {
						if held[v] == 0 {
							t.Errorf("value %q not in the log", v)
						}
					}
					if !faulted {
						if d := res.Log.Duplicates(); len(d) > 0 {
							t.Errorf("no fault, yet the log holds %d records twice: %+v", len(d), d)
						}
						return
					}
					if len(res.Events) != 1 || res.Events[0].Answered.IsZero() {
						t.Fatalf("faults applied: %+v, want one answered", res.Events)
					}
					if len(res.Log.Duplicates()) == 0 {
						t.Errorf("faulted, yet the log holds no record twice: the client did not re-send")
					}
				})
			}
		}
	}
}

// TestAppTwice checks that AppTwiceProduce's log holds the twice-produced
// values twice, with the same key and header, and the others once.
func TestAppTwice(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := Scenario{Name: "a", Topic: "orders", Records: 5, Produce: AppTwiceProduce(AppTwice{Twice: []int{1, 3}})}
	res, err := Run(ctx, s, "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for i, v := range res.Values {
		want[v] = 1
		if i == 1 || i == 3 {
			want[v] = 2
		}
	}
	for _, c := range res.Log.Copies() {
		if len(c.Records) != want[c.Value] {
			t.Errorf("log holds %q %d times, want %d", c.Value, len(c.Records), want[c.Value])
		}
		for _, r := range c.Records {
			i := len("rec-a-")
			if r.Key != "key-"+r.Value[i:] || len(r.Headers) != 1 || r.Headers[0] != (Header{Key: "app", Value: r.Value[i:]}) {
				t.Errorf("record at %d: key %q headers %+v", r.Offset, r.Key, r.Headers)
			}
		}
	}
	if n := len(res.Log.Duplicates()); n != 2 {
		t.Errorf("%d records held twice, want 2", n)
	}
}
