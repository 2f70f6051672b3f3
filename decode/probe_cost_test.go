package decode

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"
)

// TestProbeCostLinear checks that an unsynced direction fed one byte per
// Data call does work linear in its bytes: a candidate frame start that
// waits for tens of KiB and then fails must not make every later segment
// boundary in the buffer cost a copy of the whole buffer.
func TestProbeCostLinear(t *testing.T) {
	// A request header that parses (ApiVersions v3, flexible) announcing a
	// 60000-byte frame whose body is junk, so the strict sniff test waits
	// for the whole frame and then refuses it.
	head := []byte{0, 0, 0, 0, 0, 18, 0, 3, 0, 0, 0, 1, 0, 1, 'c', 0}
	binary.BigEndian.PutUint32(head, 60000)
	stream := append(head, make([]byte, 60000)...)
	for i := len(head); i < len(stream); i++ {
		stream[i] = 0xff
	}
	// A response to a pending ProduceRequest announcing 60000 bytes of
	// junk, which must parse whole to be taken.
	req := requestFrame(produceRequest(9, 1, part{"t", 0, recordBatch(1, 0, 0, 1, "r")}), 7, "c")
	resp := make([]byte, 60004)
	binary.BigEndian.PutUint32(resp, 60000)
	binary.BigEndian.PutUint32(resp[4:], 7)
	for i := 8; i < len(resp); i++ {
		resp[i] = 0xff
	}
	tests := []struct {
		name   string
		opts   Options
		a, b   netip.AddrPort
		first  []byte // delivered whole from a first
		stream []byte
		fromA  bool
	}{
		{"sniffed", Options{Sniff: true, Ports: []uint16{1}}, client, netip.MustParseAddrPort("10.0.0.4:19092"), nil, stream, true},
		{"both ends on kafka ports", Options{Ports: []uint16{9092, 55000}}, client, broker, nil, stream, true},
		{"response to a pending produce", Options{}, client, broker, req, resp, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The quickest of three runs, so that a busy machine does
			// not fail the test; the quadratic cost took about 1s.
			best := time.Hour
			for range 3 {
				d := New(nil, tt.opts)
				c := d.NewStream(tt.a, tt.b, t0)
				if tt.first != nil {
					c.Data(true, tt.first, t0)
				}
				start := time.Now()
				for i := range tt.stream {
					if !c.Data(tt.fromA, tt.stream[i:i+1], t0) {
						break
					}
				}
				c.Close(t0)
				best = min(best, time.Since(start))
			}
			if best > 400*time.Millisecond {
				t.Errorf("%d one-byte segments took %v", len(tt.stream), best)
			}
		})
	}
}
