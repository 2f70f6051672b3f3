package pipeline

import (
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/decode"
)

// TestWithoutSASL: evidence spans lose the times of their connection's
// SASL authentications, open ends included, and keep everything else.
func TestWithoutSASL(t *testing.T) {
	cl, br := netip.MustParseAddrPort("10.0.0.1:5000"), netip.MustParseAddrPort("10.0.0.2:9092")
	other := netip.MustParseAddrPort("10.0.0.1:5001")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	ns := time.Nanosecond
	conns := []decode.ConnSummary{
		{Info: &decode.ConnInfo{Client: cl, Broker: br}, SASLSpans: []decode.SASLSpan{{From: at(10), To: at(12)}, {From: at(30)}}},
		{Info: &decode.ConnInfo{Client: other, Broker: br}},
	}
	spans := []capture.ConnSpan{
		{A: br, B: cl, From: at(9), To: at(20)},  // the first authentication within: cut in two
		{A: cl, B: br, From: at(11), To: at(13)}, // starts inside it
		{A: cl, B: br, From: at(25)},             // open: to the second, open-ended one
		{A: cl, B: br, From: at(31), To: at(40)}, // inside the open one: gone
		{A: other, B: br, From: at(0), To: at(50)},
	}
	want := []capture.ConnSpan{
		{A: br, B: cl, From: at(9), To: at(10).Add(-ns)},
		{A: br, B: cl, From: at(12).Add(ns), To: at(20)},
		{A: cl, B: br, From: at(12).Add(ns), To: at(13)},
		{A: cl, B: br, From: at(25), To: at(30).Add(-ns)},
		{A: other, B: br, From: at(0), To: at(50)},
	}
	authOf := func(a, b netip.AddrPort) []decode.SASLSpan {
		for _, c := range conns {
			if pairKey(a, b) == pairKey(c.Info.Client, c.Info.Broker) {
				return c.SASLSpans
			}
		}
		return nil
	}
	if got := withoutSASL(spans, authOf); !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%v\nwant\n%v", got, want)
	}
}
