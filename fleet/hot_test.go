package fleet

import (
	"net/netip"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/decode"
)

// TestHotKey: a client's partition is one to the hot tracker by its topic
// ID when it has one, by its name otherwise, so a Produce v13 batch named
// by ID keeps its budget once decode learned the topic's name (a Metadata
// response); another ID is another partition, whatever the name.
func TestHotKey(t *testing.T) {
	idA, idB := [16]byte{0xa}, [16]byte{0xb}
	for _, tt := range []struct {
		name        string
		first, then decode.Batch
		want        bool // whether the batch after the budget carries its prints
	}{
		{"v13 named by ID, then its name learned", decode.Batch{TopicID: idA}, decode.Batch{Topic: "orders", TopicID: idA}, false},
		{"v13 named by ID and name", decode.Batch{Topic: "orders", TopicID: idA}, decode.Batch{Topic: "orders", TopicID: idA}, false},
		{"by name, before v13", decode.Batch{Topic: "orders"}, decode.Batch{Topic: "orders"}, false},
		{"another topic ID", decode.Batch{TopicID: idA}, decode.Batch{TopicID: idB}, true},
		{"a name, then another ID (topic recreated)", decode.Batch{Topic: "orders", TopicID: idA}, decode.Batch{Topic: "orders", TopicID: idB}, true},
		{"another name", decode.Batch{Topic: "orders"}, decode.Batch{Topic: "payments"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &decode.ConnInfo{ID: 1, Client: netip.MustParseAddrPort("10.0.0.1:5000"), Broker: netip.MustParseAddrPort("10.0.0.2:9092")}
			t0 := time.Unix(1700000000, 0)
			var h hotTracker
			send := func(i int, b decode.Batch) bool {
				b.Partition, b.ProducerID, b.ProducerEpoch = 3, -1, -1
				b.Response = &decode.PartitionResponse{}
				x := &decode.Exchange{Conn: c, ClientID: strp("app"), Acks: -1, Responded: true,
					RequestTime: t0.Add(time.Duration(i) * time.Millisecond), Batches: []decode.Batch{b}}
				return h.want(x, &x.Batches[0])
			}
			// The first batch (after a pause: never seen) and the budget's
			// after it carry their prints.
			for i := range HotBudget {
				if !send(i, tt.first) {
					t.Fatalf("batch %d carries no prints: the first %d do", i, HotBudget)
				}
			}
			if got := send(HotBudget, tt.then); got != tt.want {
				t.Errorf("batch %d after the budget: prints %v, want %v", HotBudget, got, tt.want)
			}
		})
	}
}
