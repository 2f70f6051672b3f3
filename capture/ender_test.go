package capture

import (
	"fmt"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// endStream is a recStream that is an Ender: it records each End.
type endStream struct {
	*recStream
}

func (s endStream) End(fromA bool, rst bool, ts time.Time) {
	how := "fin"
	if rst {
		how = "rst"
	}
	s.add(fmt.Sprintf("%s %s at %s", side(fromA), how, ts.Sub(t0)))
}

// TestEnder: an Ender hears each direction's FIN or RST, after that
// direction's bytes and before Close, at the packet's time; never for the
// direction an RST of the other ended, nor for an end of input.
func TestEnder(t *testing.T) {
	req := seg{fromA: true, seq: 1001, flags: "PA", data: "request", at: 10 * time.Millisecond}
	resp := seg{fromA: false, seq: 5001, flags: "PA", data: "response", at: 20 * time.Millisecond}
	tests := []struct {
		name   string
		script []seg
		want   []string
	}{
		{"client FIN first", script(handshake, []seg{req, resp,
			{fromA: true, seq: 1008, flags: "FA", at: 30 * time.Millisecond},
			{fromA: false, seq: 5009, flags: "FA", at: 31 * time.Millisecond},
			{fromA: true, seq: 1009, flags: "A", at: 32 * time.Millisecond}}),
			[]string{"A request", "B response", "A fin at 30ms", "B fin at 31ms", "close"}},
		{"broker RST after its answer", script(handshake, []seg{req, resp,
			{fromA: false, seq: 5009, flags: "RA", at: 21 * time.Millisecond}}),
			[]string{"A request", "B response", "B rst at 21ms", "close"}},
		{"client RST", script(handshake, []seg{req,
			{fromA: true, seq: 1008, flags: "RA", at: 15 * time.Millisecond}}),
			[]string{"A request", "A rst at 15ms", "close"}},
		{"FIN carrying the last bytes", script(handshake, []seg{req,
			{fromA: false, seq: 5001, flags: "PFA", data: "bye", at: 20 * time.Millisecond}}),
			[]string{"A request", "B bye", "B fin at 20ms", "close"}},
		{"end of input", script(handshake, []seg{req, resp}),
			[]string{"A request", "B response", "close"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{}
			a := NewAssembler(func(x, y netip.AddrPort, ts time.Time) Stream {
				return endStream{r.newStream(x, y, ts).(*recStream)}
			}, AssemblerOptions{})
			feed(t, a, packets(t, frame{name: "raw", link: layers.LinkTypeRaw}, client4, server4, tt.script))
			a.Close()
			if got := events(r); len(got) != 1 || !reflect.DeepEqual(got[0], tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
