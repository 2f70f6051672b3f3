package decode

import (
	"encoding/binary"
	"net/netip"
	"runtime"
	"testing"
)

// TestBufferedFrameBound: 2,000 connections each holding 1 MB of a 10 MB
// produce request that never ends hold no more than
// Options.MaxBufferedFrameBytes over all; the connections beyond it drop
// their partial frame (counted) and resync. Once connections close, their
// room serves a new connection's large frame, which decodes.
func TestBufferedFrameBound(t *testing.T) {
	const (
		conns   = 2000
		held    = 1_000_000
		segment = 64 << 10
	)
	head := produceFrame(9, []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0})
	first := make([]byte, segment)
	copy(first, head)
	binary.BigEndian.PutUint32(first, 10_000_000) // held whole: under MaxHeldFrameBytes
	rest := make([]byte, segment)

	var s sink
	d := New(&s, Options{})
	bound := int64(DefaultMaxBufferedFrameBytes)
	var cs []*Conn
	for i := range conns {
		c := d.NewStream(netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), 40000), broker, t0)
		cs = append(cs, c)
		c.Data(true, first, t0)
		for n := segment; n < held; n += segment {
			c.Data(true, rest, t0)
		}
		if got := d.BufferedFrameBytes(); got > bound {
			t.Fatalf("after %d connections: %d bytes of partial frames held, bound %d", i+1, got, bound)
		}
	}
	st := d.Stats()
	if st.BufferDrops == 0 || st.Malformed != 0 {
		t.Errorf("buffer drops %d, malformed %d; want some drops, nothing malformed", st.BufferDrops, st.Malformed)
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc > uint64(bound)+32<<20 {
		t.Errorf("heap %d MiB with %d connections mid-frame, bound %d MiB", ms.HeapAlloc>>20, conns, bound>>20)
	}
	t.Logf("%d connections mid-frame: %d MiB held, %d partial frames dropped, heap %d MiB",
		conns, d.BufferedFrameBytes()>>20, st.BufferDrops, ms.HeapAlloc>>20)

	// Closing frees the room; a 5 MB frame in segments then decodes.
	for _, c := range cs[:conns/2] {
		c.Close(t0)
	}
	big := requestFrame(produceRequest(9, 0, part{"t", 0, recordBatch(-1, -1, -1, 1, string(make([]byte, 5_000_000)))}), 1, "c")
	c := d.NewStream(netip.MustParseAddrPort("10.2.0.1:40000"), broker, t0)
	for off := 0; off < len(big); off += segment {
		c.Data(true, big[off:min(off+segment, len(big))], t0)
	}
	if len(s.xs) != 1 || len(s.xs[0].Batches) != 1 || s.xs[0].Batches[0].Corrupt {
		t.Fatalf("the 5 MB frame after the close: %d exchanges, want 1", len(s.xs))
	}
	for _, c := range cs[conns/2:] {
		c.Close(t0)
	}
	c.Close(t0)
	if got := d.BufferedFrameBytes(); got != 0 {
		t.Errorf("%d bytes of partial frames counted once every connection closed", got)
	}
}
