package tlsdecrypt

import (
	"crypto/tls"
	"net/netip"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/capture"
)

// discard is an inner Stream that keeps nothing.
type discard struct{ n int }

func (d *discard) Data(_ bool, p []byte, _ time.Time) bool { d.n += len(p); return true }
func (d *discard) Gap(bool, int, time.Time)                {}
func (d *discard) Close(time.Time)                         {}

func benchFeed(b *testing.B, d *Decrypter, evs []event, want int) {
	var wire int
	for _, e := range evs {
		wire += len(e.data)
	}
	inner := &discard{}
	wrap := d.Wrap(func(a, bb netip.AddrPort, ts time.Time) capture.Stream { return inner })
	b.SetBytes(int64(wire))
	b.ReportAllocs()
	ts := time.Unix(1, 0)
	for b.Loop() {
		inner.n = 0
		st := wrap(clientAddr, brokerAddr, ts)
		for _, e := range evs {
			st.Data(e.fromA, e.data, ts)
		}
		st.Close(ts)
		if inner.n != want {
			b.Fatalf("%d plaintext bytes, want %d", inner.n, want)
		}
	}
}

// BenchmarkDecryptAESGCM decrypts a TLS 1.3 AES-128-GCM connection of
// about 12 MB, cut in 64 KiB reads as reassembly hands them on.
func BenchmarkDecryptAESGCM(b *testing.B) {
	ec, _ := certs(b)
	sizes := make([]int, 8)
	for i := range sizes {
		sizes[i] = 1 << 20
	}
	sess := goSession(b, &tls.Config{}, &tls.Config{Certificates: []tls.Certificate{ec}}, sizes)
	evs := chunks(sess.events, splitWhole, 0)
	var cut []event
	for _, e := range evs {
		for p := e.data; len(p) > 0; {
			n := min(len(p), 64<<10)
			cut = append(cut, event{fromA: e.fromA, data: p[:n]})
			p = p[n:]
		}
	}
	d := New(keyLogOf(b, sess.keylog), Options{MaxConns: 1})
	benchFeed(b, d, cut, len(sess.sent[0])+len(sess.sent[1]))
}

// BenchmarkPlaintext passes 12 MB of plaintext Kafka through.
func BenchmarkPlaintext(b *testing.B) {
	var evs []event
	total := 0
	for i := range 192 {
		p := payload(byte(i), 64<<10)
		p[0] = 0
		evs = append(evs, event{fromA: i%3 != 2, data: p})
		total += len(p)
	}
	benchFeed(b, New(nil, Options{}), evs, total)
}
