package tlsdecrypt

import (
	"net/netip"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/kdupcap/kdupcap/capture"
)

// maxPlainConn bounds the bytes a plaintext connection costs: every TCP
// connection of a capture has a conn, and nearly all are plaintext (a
// capture of 200,000 open Kafka connections once cost 274 MB here).
const maxPlainConn = 128

// kafkaReq is a small Kafka request (ApiVersions v3) and kafkaResp the
// start of its response, as a plaintext connection begins.
var (
	kafkaReq = []byte{
		0, 0, 0, 28, // size
		0, 18, 0, 3, // ApiVersions v3
		0, 0, 0, 1, // correlation ID
		0, 6, 'c', 'l', 'i', 'e', 'n', 't', // client ID
		0,                                    // tagged fields
		8, 'k', 'd', 'u', 'p', 'c', 'a', 'p', // client software name
		2, '1', // client software version
		0, // tagged fields
	}
	kafkaResp = []byte{0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0}
)

// TestPlainConnSize: a plaintext Kafka connection costs one allocation of
// less than maxPlainConn bytes, however many are open, and keeps no
// tlsState.
func TestPlainConnSize(t *testing.T) {
	if n := unsafe.Sizeof(conn{}); n >= maxPlainConn {
		t.Errorf("conn is %d bytes, want < %d", n, maxPlainConn)
	}
	if int(kafkaReq[3])+4 != len(kafkaReq) {
		t.Fatalf("a request frame of %d bytes says %d", len(kafkaReq), kafkaReq[3])
	}
	d := New(NewKeyLog(), Options{})
	inner := &discard{}
	wrap := d.Wrap(func(a, b netip.AddrPort, ts time.Time) capture.Stream { return inner })
	ts := time.Unix(1, 0)
	open := func(i int) capture.Stream {
		st := wrap(clientAddrN(i), brokerAddr, ts)
		st.Data(true, kafkaReq, ts)
		st.Data(false, kafkaResp, ts)
		st.Data(true, kafkaReq, ts)
		return st
	}

	if allocs := testing.AllocsPerRun(1000, func() { open(1) }); allocs != 1 {
		t.Errorf("%.1f allocations per plaintext connection, want 1", allocs)
	}

	// Many connections open at once, as in the capture of issue 13.
	const n = 20000
	conns := make([]capture.Stream, n)
	inner.n = 0
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range conns {
		conns[i] = open(i)
	}
	runtime.ReadMemStats(&after)
	per := (after.TotalAlloc - before.TotalAlloc) / n
	t.Logf("conn: %d bytes, %d allocated per plaintext connection; tlsState: %d bytes", unsafe.Sizeof(conn{}), per, unsafe.Sizeof(tlsState{}))
	if per >= maxPlainConn {
		t.Errorf("%d bytes allocated per plaintext connection, want < %d", per, maxPlainConn)
	}
	for i, st := range conns {
		if c := st.(*conn); c.mode != modePlain || c.tlsState != nil {
			t.Fatalf("connection %d: mode %d, tlsState %v", i, c.mode, c.tlsState != nil)
		}
	}
	if d.Stats().Conns != 0 || inner.n != n*(2*len(kafkaReq)+len(kafkaResp)) {
		t.Errorf("stats %+v, %d bytes handed on", d.Stats(), inner.n)
	}
}

// TestPlainLetsGo: a connection whose first bytes needed a tlsState (too
// few to tell, or odd and held) lets go of it once it is plaintext.
func TestPlainLetsGo(t *testing.T) {
	ts := time.Unix(1, 0)
	cases := []struct {
		name string
		feed func(st capture.Stream)
	}{
		{"sniffed-then-held-then-other-side", func(st capture.Stream) {
			st.Data(true, []byte{0x16}, ts)
			st.Data(true, []byte{0x01, 0, 0, 0}, ts)
			st.Data(false, kafkaResp, ts)
		}},
		{"sniffed-then-other-side", func(st capture.Stream) {
			st.Data(true, []byte{0x16, 0x03}, ts)
			st.Data(false, kafkaResp, ts)
		}},
		{"sniffed-then-gap", func(st capture.Stream) {
			st.Data(true, []byte{0x17}, ts)
			st.Gap(true, 10, ts)
		}},
		{"sniffed-then-close", func(st capture.Stream) {
			st.Data(true, []byte{0x16, 0x03, 0x01}, ts)
			st.Close(ts)
		}},
		{"held-then-other-side", func(st capture.Stream) {
			st.Data(true, payload(0x55, 100), ts)
			st.Data(false, kafkaResp, ts)
		}},
		{"held-then-bound", func(st capture.Stream) {
			st.Data(true, payload(0x55, 100), ts)
			st.Data(true, payload(0x56, maxHold), ts)
		}},
	}
	for _, tc := range cases {
		d := New(NewKeyLog(), Options{})
		s, st := open(d, clientAddr)
		tc.feed(st)
		if c := st.(*conn); c.mode != modePlain || c.tlsState != nil {
			t.Errorf("%s: mode %d, tlsState %v", tc.name, c.mode, c.tlsState != nil)
		}
		if len(s.data[0]) == 0 || d.Stats().Conns != 0 {
			t.Errorf("%s: %d bytes handed on, stats %+v", tc.name, len(s.data[0]), d.Stats())
		}
	}
}
