package capture

import (
	"reflect"
	"testing"
	"time"
)

// noReorder gives acknowledged holes up at once, as before reorder windows.
var noReorder = AssemblerOptions{ReorderWindow: -1}

// TestReorderWindow scripts acknowledged holes whose segment comes late:
// within the window it is delivered in place, before what the peer sent
// after acknowledging it; beyond, the hole is a Gap and the segment a
// retransmission of bytes given up.
func TestReorderWindow(t *testing.T) {
	// req2 overtaken by req3; the broker's ACK and response, which
	// acknowledge both, come before it.
	overtaken := func(late time.Duration) []seg {
		return script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "req1", at: 10 * time.Millisecond},
			{fromA: true, seq: 1009, flags: "PA", data: "req3", at: 11 * time.Millisecond},
			{fromA: false, seq: 5001, flags: "A", ack: 1013, at: 12 * time.Millisecond},
			{fromA: false, seq: 5001, flags: "PA", data: "resp", ack: 1013, at: 13 * time.Millisecond},
			{fromA: true, seq: 1005, flags: "PA", data: "req2", at: late},
			{fromA: false, seq: 5005, flags: "PA", data: "more", ack: 1013, at: late + time.Millisecond},
		})
	}
	tests := []struct {
		name   string
		opts   AssemblerOptions
		script []seg
		want   []string
		stats  Stats // the reorder and gap counts
	}{{
		name:   "late segment within the window delivered in place",
		script: overtaken(14 * time.Millisecond),
		want:   []string{"A req1req2req3", "B respmore", "close"},
		stats:  Stats{ReorderHolds: 1, Reordered: 1},
	}, {
		// Timestamps of a reordered capture need not increase: the window
		// runs from the segment that overtook the late one.
		name:   "late segment with an earlier timestamp",
		script: overtaken(10*time.Millisecond + 500*time.Microsecond),
		want:   []string{"A req1req2req3", "B respmore", "close"},
		stats:  Stats{ReorderHolds: 1, Reordered: 1},
	}, {
		name:   "late segment beyond the window in time",
		script: overtaken(11*time.Millisecond + DefaultReorderWindow + time.Microsecond),
		want:   []string{"A req1", "A gap 4", "A req3", "B respmore", "close"},
		stats:  Stats{ReorderHolds: 1, ReorderGivenUp: 1, Gaps: 1, GapBytes: 4, Retransmissions: 1},
	}, {
		// Two packets of the connection since the ACK: the response and
		// the late segment, which is one too many.
		name:   "late segment beyond the window in packets",
		opts:   AssemblerOptions{ReorderPackets: 1},
		script: overtaken(14 * time.Millisecond),
		want:   []string{"A req1", "A gap 4", "A req3", "B respmore", "close"},
		stats:  Stats{ReorderHolds: 1, ReorderGivenUp: 1, Gaps: 1, GapBytes: 4, Retransmissions: 1},
	}, {
		name:   "no window",
		opts:   noReorder,
		script: overtaken(14 * time.Millisecond),
		want:   []string{"A req1", "A gap 4", "A req3", "B respmore", "close"},
		stats:  Stats{Gaps: 1, GapBytes: 4, Retransmissions: 1},
	}, {
		// reqC, sent after respB came, overtook reqB: it goes after respB,
		// as on the wire, not with reqB before it.
		name: "kept packets interleave as on the wire",
		script: script(handshake, []seg{
			{fromA: false, seq: 5001, flags: "A", ack: 1001, at: 9 * time.Millisecond},
			{fromA: true, seq: 1001, flags: "PA", data: "reqA", at: 10 * time.Millisecond},
			{fromA: true, seq: 1009, flags: "PA", data: "reqC", ack: 5005},
			{fromA: false, seq: 5001, flags: "PA", data: "resB", ack: 1009},
			{fromA: true, seq: 1005, flags: "PA", data: "reqB", ack: 5001},
		}),
		want:  []string{"A reqAreqB", "B resB", "A reqC", "close"},
		stats: Stats{ReorderHolds: 1, Reordered: 1},
	}, {
		name: "segment never comes: given up at the end of the input",
		script: script(handshake, []seg{
			{fromA: true, seq: 1005, flags: "PA", data: "req2", at: 10 * time.Millisecond},
			{fromA: false, seq: 5001, flags: "PA", data: "resp", ack: 1009},
		}),
		want:  []string{"A gap 4", "A req2", "B resp", "close"},
		stats: Stats{ReorderHolds: 1, ReorderGivenUp: 1, Gaps: 1, GapBytes: 4},
	}, {
		name: "rst of the hole's direction gives the hole up first",
		script: script(handshake, []seg{
			{fromA: true, seq: 1005, flags: "PA", data: "req2", at: 10 * time.Millisecond},
			{fromA: false, seq: 5001, flags: "PA", data: "resp", ack: 1009},
			{fromA: true, seq: 1009, flags: "RA"},
		}),
		want:  []string{"A gap 4", "A req2", "B resp", "close"},
		stats: Stats{ReorderHolds: 1, ReorderGivenUp: 1, Gaps: 1, GapBytes: 4},
	}, {
		name: "fin of the acknowledging direction kept in order",
		script: script(handshake, []seg{
			{fromA: true, seq: 1005, flags: "PA", data: "req2", at: 10 * time.Millisecond},
			{fromA: false, seq: 5001, flags: "PA", data: "resp", ack: 1009},
			{fromA: false, seq: 5005, flags: "FA", ack: 1009},
			{fromA: true, seq: 1001, flags: "PA", data: "req1"},
			{fromA: true, seq: 1009, flags: "FA", ack: 5006},
		}),
		want:  []string{"A req1req2", "B resp", "close"},
		stats: Stats{ReorderHolds: 1, Reordered: 1},
	}, {
		// Holes in both directions, each overtaken: every byte in place.
		name: "both directions reordered",
		script: script(handshake, []seg{
			{fromA: true, seq: 1005, flags: "PA", data: "req2", at: 10 * time.Millisecond},
			{fromA: false, seq: 5005, flags: "PA", data: "rsp2", ack: 1009},
			{fromA: true, seq: 1001, flags: "PA", data: "req1", ack: 5009},
			{fromA: false, seq: 5001, flags: "PA", data: "rsp1", ack: 1009},
		}),
		want:  []string{"A req1req2", "B rsp1rsp2", "close"},
		stats: Stats{ReorderHolds: 1, Reordered: 1}, // rsp2 was kept aside: no hole in B
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{}
			a := NewAssembler(r.newStream, tt.opts)
			feed(t, a, packets(t, rawFrame, client4, server4, tt.script))
			a.Close()
			if got := events(r); !reflect.DeepEqual(got, [][]string{tt.want}) {
				t.Errorf("got %q\nwant %q", got, [][]string{tt.want})
			}
			st := a.Stats()
			got := Stats{ReorderHolds: st.ReorderHolds, Reordered: st.Reordered, ReorderGivenUp: st.ReorderGivenUp,
				Gaps: st.Gaps, GapBytes: st.GapBytes, Retransmissions: st.Retransmissions}
			if got != tt.stats {
				t.Errorf("stats\n got %+v\nwant %+v", got, tt.stats)
			}
		})
	}
}
