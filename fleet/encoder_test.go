package fleet

import (
	"net/netip"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/decode"
)

// TestEncoderKeys: an attempt is keyed by its own client.id, also one that
// changed on its connection; the connection's end goes under the key of
// its first attempt.
func TestEncoderKeys(t *testing.T) {
	for _, tt := range []struct {
		name string
		ids  []*string
		want []string // the attempts' keys, then the end's
	}{
		{"one client.id", []*string{strp("app"), strp("app")}, []string{"10.0.0.1|app", "10.0.0.1|app", "10.0.0.1|app"}},
		{"null client.id", []*string{nil, nil}, []string{"10.0.0.1|", "10.0.0.1|", "10.0.0.1|"}},
		{"null, then empty", []*string{nil, strp("")}, []string{"10.0.0.1|", "10.0.0.1|", "10.0.0.1|"}},
		{"changed on the connection", []*string{strp("a"), strp("b"), strp("a")}, []string{"10.0.0.1|a", "10.0.0.1|b", "10.0.0.1|a", "10.0.0.1|a"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &decode.ConnInfo{ID: 1, Client: netip.MustParseAddrPort("[::ffff:10.0.0.1]:5000"), Broker: netip.MustParseAddrPort("10.0.0.2:9092")}
			e := NewEncoder(EncoderOptions{Host: "h", Run: 1})
			var got []string
			emit := func(k, _ []byte) { got = append(got, string(k)) }
			t0 := time.Unix(1700000000, 0)
			for i, id := range tt.ids {
				x := &decode.Exchange{Conn: c, ClientID: id, Acks: 1, RequestTime: t0.Add(time.Duration(i) * time.Millisecond),
					Batches: []decode.Batch{{Topic: "orders", Magic: 2, ProducerID: -1}}}
				e.Exchange(x, emit)
			}
			e.ConnEnd(c, decode.ConnEnd{How: decode.EndFIN, Time: t0.Add(time.Second)}, emit)
			if len(got) != len(tt.want) {
				t.Fatalf("keys %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("record %d keyed %q, want %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}
