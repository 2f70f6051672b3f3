package pipeline

import (
	"math"
	"net/netip"
	"slices"
	"time"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/decode"
)

// withoutSASL cuts out of the evidence spans the time of every SASL
// authentication of their connections (authOf, decode.Decoder.SASLSpans): the
// packets holding a PLAIN password, a SCRAM nonce, proof or salt, or a
// bearer token never reach an evidence file. The file then starts a
// connection after its authentication, which analyze reads as a connection
// whose start was not captured; a response that came during a
// re-authentication (KIP-368) is left out with it.
func withoutSASL(spans []capture.ConnSpan, authOf func(a, b netip.AddrPort) []decode.SASLSpan) []capture.ConnSpan {
	auth := make(map[[2]netip.AddrPort][]decode.SASLSpan)
	for _, sp := range spans {
		k := pairKey(sp.A, sp.B)
		if _, ok := auth[k]; !ok {
			auth[k] = authOf(sp.A, sp.B)
		}
	}
	for k, a := range auth {
		if len(a) == 0 {
			delete(auth, k)
		}
	}
	if len(auth) == 0 {
		return spans
	}
	for k := range auth {
		slices.SortFunc(auth[k], func(a, b decode.SASLSpan) int { return a.From.Compare(b.From) })
	}
	// never stands for an open end.
	never := time.Unix(math.MaxInt32*4, 0)
	var out []capture.ConnSpan
	for _, sp := range spans {
		from, to := sp.From, sp.To
		if to.IsZero() {
			to = never
		}
		for _, a := range auth[pairKey(sp.A, sp.B)] {
			aTo := a.To
			if aTo.IsZero() {
				aTo = never
			}
			if aTo.Before(from) || a.From.After(to) {
				continue
			}
			if a.From.After(from) {
				out = append(out, capture.ConnSpan{A: sp.A, B: sp.B, From: from, To: a.From.Add(-time.Nanosecond)})
			}
			from = aTo.Add(time.Nanosecond)
			if from.After(to) {
				break
			}
		}
		if !from.After(to) && !from.After(never) {
			piece := capture.ConnSpan{A: sp.A, B: sp.B, From: from, To: to}
			if to.Equal(never) {
				piece.To = time.Time{}
			}
			out = append(out, piece)
		}
	}
	return out
}

// pairKey is a connection's two ends in a fixed order.
func pairKey(a, b netip.AddrPort) [2]netip.AddrPort {
	if a.Compare(b) > 0 {
		a, b = b, a
	}
	return [2]netip.AddrPort{a, b}
}
