package profile

import (
	"slices"
	"testing"

	"github.com/kdupcap/kdupcap/decode"
)

// TestSASLUsers: a producer lists the distinct SASL users of its
// connections, ascending; a connection without one adds none.
func TestSASLUsers(t *testing.T) {
	a, b, none := *conn1, *conn2, *conn1
	a.SASLMechanism, a.SASLUser = "PLAIN", "svc-b"
	b.SASLMechanism, b.SASLUser = "SCRAM-SHA-256", "svc-a"
	none.SASLMechanism = "GSSAPI"
	pr := New(Options{})
	for i, c := range []*decode.ConnInfo{&a, &b, &a, &none} {
		pr.Produce(ex(c, int32(i), float64(i), float64(i)+1, 0, int64(i), plain(uint32(i))))
	}
	ps := pr.Producers()
	if len(ps) != 1 || !slices.Equal(ps[0].SASLUsers, []string{"svc-a", "svc-b"}) {
		t.Fatalf("producers %d, users %v", len(ps), ps[0].SASLUsers)
	}
}
