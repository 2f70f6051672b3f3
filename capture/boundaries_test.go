package capture

import (
	"fmt"
	"net/netip"
	"reflect"
	"testing"
	"time"
)

// callStream records every call as it comes, without joining Data calls:
// the receiver resyncs its framing at the start of a Data call after a gap,
// so where calls begin matters.
type callStream struct{ calls []string }

func (s *callStream) Data(fromA bool, data []byte, _ time.Time) bool {
	s.calls = append(s.calls, side(fromA)+" "+string(data))
	return true
}

func (s *callStream) Gap(fromA bool, n int, _ time.Time) {
	s.calls = append(s.calls, fmt.Sprintf("%s gap %d", side(fromA), n))
}

func (s *callStream) Close(time.Time) { s.calls = append(s.calls, "close") }

// TestSegmentBoundariesAfterGap checks that data delivered after a hole
// keeps the segment boundaries it was captured with: each queued segment
// starts a Data call of its own.
func TestSegmentBoundariesAfterGap(t *testing.T) {
	tests := []struct {
		name   string
		opts   AssemblerOptions
		script []seg
		want   []string
	}{{
		name: "acknowledged hole",
		script: script(handshake, []seg{
			{fromA: true, seq: 1005, flags: "PA", data: "aaaa"},
			{fromA: true, seq: 1013, flags: "PA", data: "cc"},
			{fromA: true, seq: 1009, flags: "PA", data: "bbbb"},
			{fromA: false, seq: 5001, flags: "PA", data: "r", ack: 1015},
		}),
		want: []string{"A gap 4", "A aaaa", "A bbbb", "A cc", "B r", "close"},
	}, {
		name: "hole flushed at the end",
		script: script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "x"},
			{fromA: true, seq: 1009, flags: "PA", data: "bbbb"},
			{fromA: true, seq: 1005, flags: "PA", data: "aaaa"},
		}),
		want: []string{"A x", "A gap 3", "A aaaa", "A bbbb", "close"},
	}, {
		name: "in order stays one call per segment",
		script: script(handshake, []seg{
			{fromA: true, seq: 1005, flags: "PA", data: "bb"},
			{fromA: true, seq: 1001, flags: "PA", data: "aaaa"},
		}),
		want: []string{"A aaaa", "A bb", "close"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &callStream{}
			a := NewAssembler(func(netip.AddrPort, netip.AddrPort, time.Time) Stream { return s }, tt.opts)
			feed(t, a, packets(t, rawFrame, client4, server4, tt.script))
			a.Close()
			if !reflect.DeepEqual(s.calls, tt.want) {
				t.Errorf("calls\n got %q\nwant %q", s.calls, tt.want)
			}
		})
	}
}
