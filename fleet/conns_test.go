package fleet

import (
	"net/netip"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/decode"
)

// TestDecoderTopicNames: the connections of two hosts are numbered apart,
// each remembering its host; a batch named by topic ID only takes the name
// an earlier attempt (of any host) carried with that ID.
func TestDecoderTopicNames(t *testing.T) {
	id := [16]byte{9, 9}
	c := &decode.ConnInfo{ID: 1, Client: netip.MustParseAddrPort("10.0.0.1:5000"), Broker: netip.MustParseAddrPort("10.0.0.2:9092")}
	attempt := func(host, topic string) []byte {
		x := &decode.Exchange{Conn: c, RequestTime: time.Unix(1, 0), Batches: []decode.Batch{{Topic: topic, TopicID: id, Magic: 2}}}
		return AppendAttempt(nil, Header{Host: host, Run: 1, At: time.Unix(1, 0)}, x, false, nil)
	}
	d := NewDecoder(0)
	var got []Event
	for _, v := range [][]byte{attempt("a", ""), attempt("b", "orders"), attempt("a", "")} {
		ev, err := d.Decode(v)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	if names := [3]string{got[0].Exchange.Batches[0].Topic, got[1].Exchange.Batches[0].Topic, got[2].Exchange.Batches[0].Topic}; names != [3]string{"", "orders", "orders"} {
		t.Errorf("topics %q, want [\"\" orders orders]: a name is known once an attempt carried it", names)
	}
	if got[0].Conn != got[2].Conn || got[0].Conn == got[1].Conn || d.HostOf(got[0].Conn.ID) != "a" || d.HostOf(got[1].Conn.ID) != "b" {
		t.Errorf("connections: %d (%s), %d (%s), %d: host a's two attempts share one, host b's is apart",
			got[0].Conn.ID, d.HostOf(got[0].Conn.ID), got[1].Conn.ID, d.HostOf(got[1].Conn.ID), got[2].Conn.ID)
	}
}
