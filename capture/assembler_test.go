package capture

import (
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// handshake opens a connection: client ISN 1000, server ISN 5000.
var handshake = []seg{
	{fromA: true, seq: 1000, flags: "S"},
	{fromA: false, seq: 5000, flags: "SA"},
	{fromA: true, seq: 1001, flags: "A"},
}

// finish closes it after the client sent up to c and the server up to s.
func finish(c, s uint32) []seg {
	return []seg{
		{fromA: true, seq: c, flags: "FA"},
		{fromA: false, seq: s, flags: "FA"},
		{fromA: true, seq: c + 1, flags: "A"},
	}
}

func script(parts ...[]seg) []seg {
	var out []seg
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func feed(tb testing.TB, a *Assembler, pkts []Packet) {
	tb.Helper()
	for _, p := range pkts {
		a.Add(p)
	}
}

func TestAssemblerScripts(t *testing.T) {
	tests := []struct {
		name   string
		script []seg
		opts   AssemblerOptions
		stopAt int
		// want is the events of each stream after the whole input and
		// Close; beforeClose, if set, those before Assembler.Close.
		want        [][]string
		beforeClose [][]string
		stats       func(Stats) bool
	}{{
		name: "in order",
		script: script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "hello "},
			{fromA: true, seq: 1007, flags: "PA", data: "kafka"},
			{fromA: false, seq: 5001, flags: "PA", data: "ok"},
		}, finish(1012, 5003)),
		want:        [][]string{{"A hello kafka", "B ok", "close"}},
		beforeClose: [][]string{{"A hello kafka", "B ok", "close"}},
		stats:       func(s Stats) bool { return s.DeliveredBytes == 13 && s.Gaps == 0 && s.TCPConnections == 1 },
	}, {
		name: "out of order",
		script: script(handshake, []seg{
			{fromA: true, seq: 1012, flags: "PA", data: "!"},
			{fromA: true, seq: 1007, flags: "PA", data: "kafka"},
			{fromA: true, seq: 1001, flags: "PA", data: "hello "},
			{fromA: false, seq: 5001, flags: "PA", data: "ok"},
		}, finish(1013, 5003)),
		want: [][]string{{"A hello kafka!", "B ok", "close"}},
	}, {
		name: "retransmission delivered once",
		script: script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "request"},
			{fromA: true, seq: 1001, flags: "PA", data: "request"},
			{fromA: false, seq: 5001, flags: "PA", data: "response"},
			{fromA: true, seq: 1001, flags: "PA", data: "request"},
			{fromA: true, seq: 1008, flags: "PA", data: "next"},
			{fromA: true, seq: 1008, flags: "PA", data: "next"},
		}, finish(1012, 5009)),
		want:  [][]string{{"A request", "B response", "A next", "close"}},
		stats: func(s Stats) bool { return s.Retransmissions == 3 && s.DeliveredBytes == 19 },
	}, {
		name: "retransmission of queued segment",
		script: script(handshake, []seg{
			{fromA: true, seq: 1006, flags: "PA", data: "world"},
			{fromA: true, seq: 1006, flags: "PA", data: "world"},
			{fromA: true, seq: 1001, flags: "PA", data: "hello"},
		}, finish(1011, 5001)),
		want: [][]string{{"A helloworld", "close"}},
	}, {
		name: "overlapping segments",
		script: script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "hello"},
			{fromA: true, seq: 1003, flags: "PA", data: "llo wor"},
			{fromA: true, seq: 1012, flags: "PA", data: "!?"},
			{fromA: true, seq: 1009, flags: "PA", data: "rld!"},
			{fromA: true, seq: 1011, flags: "PA", data: "d!?"},
		}, finish(1014, 5001)),
		want: [][]string{{"A hello world!?", "close"}},
	}, {
		name: "mid-stream start",
		script: []seg{
			{fromA: false, seq: 5001, flags: "PA", data: "tail of a response"},
			{fromA: true, seq: 1001, flags: "PA", data: "request"},
			{fromA: false, seq: 5019, flags: "PA", data: "response"},
		},
		// The first packet came from the server: it is A.
		want:        [][]string{{"A tail of a response", "B request", "A response", "close"}},
		beforeClose: [][]string{{"A tail of a response", "B request", "A response"}},
	}, {
		name: "gap reported at end of input",
		script: script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "hello"},
			{fromA: true, seq: 1011, flags: "PA", data: "world"},
			{fromA: false, seq: 5001, flags: "PA", data: "x"},
		}),
		want:        [][]string{{"A hello", "B x", "A gap 5", "A world", "close"}},
		beforeClose: [][]string{{"A hello", "B x"}},
		stats:       func(s Stats) bool { return s.Gaps == 1 && s.GapBytes == 5 },
	}, {
		name: "gap flushed by packet time",
		opts: AssemblerOptions{IdleTimeout: 10 * time.Second},
		script: script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "hello"},
			{fromA: true, seq: 1011, flags: "PA", data: "world", at: time.Second},
			{fromA: false, seq: 5001, flags: "PA", data: "x", at: 6 * time.Second},
			{fromA: false, seq: 5002, flags: "PA", data: "y", at: 12 * time.Second},
			{fromA: true, seq: 1016, flags: "PA", data: "!", at: 13 * time.Second},
		}),
		want:        [][]string{{"A hello", "B x", "A gap 5", "A world", "B y", "A !", "close"}},
		beforeClose: [][]string{{"A hello", "B x", "A gap 5", "A world", "B y", "A !"}},
	}, {
		name: "idle connection closed by packet time",
		opts: AssemblerOptions{IdleTimeout: 10 * time.Second},
		script: script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "hello"},
			{fromA: true, seq: 1001, flags: "S", other: true, at: 20 * time.Second},
		}),
		want:        [][]string{{"A hello", "close"}, {"close"}},
		beforeClose: [][]string{{"A hello", "close"}, {}},
	}, {
		name: "rst closes both directions",
		script: script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "hello"},
			{fromA: false, seq: 5001, flags: "R"},
			{fromA: true, seq: 1006, flags: "PA", data: "late"},
		}),
		want:        [][]string{{"A hello", "close"}},
		beforeClose: [][]string{{"A hello", "close"}},
	}, {
		name: "port reuse after fin",
		script: script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "one"},
		}, finish(1004, 5001), []seg{
			{fromA: true, seq: 9000, flags: "S"},
			{fromA: false, seq: 7000, flags: "SA"},
			{fromA: true, seq: 9001, flags: "PA", data: "two"},
			{fromA: false, seq: 7001, flags: "PA", data: "2"},
		}),
		want:        [][]string{{"A one", "close"}, {"A two", "B 2", "close"}},
		beforeClose: [][]string{{"A one", "close"}, {"A two", "B 2"}},
		stats:       func(s Stats) bool { return s.TCPConnections == 2 },
	}, {
		name: "port reuse after rst",
		script: script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "one"},
			{fromA: true, seq: 1004, flags: "RA"},
			{fromA: true, seq: 9000, flags: "S"},
			{fromA: false, seq: 7000, flags: "SA"},
			{fromA: true, seq: 9001, flags: "PA", data: "two"},
		}),
		want:  [][]string{{"A one", "close"}, {"A two", "close"}},
		stats: func(s Stats) bool { return s.TCPConnections == 2 },
	}, {
		name: "new syn on a connection whose end was missed",
		script: script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "one"},
			{fromA: false, seq: 5001, flags: "PA", data: "1"},
			{fromA: true, seq: 9000, flags: "S"},
			{fromA: false, seq: 7000, flags: "SA"},
			{fromA: true, seq: 9001, flags: "PA", data: "two"},
		}),
		want:        [][]string{{"A one", "B 1", "close"}, {"A two", "close"}},
		beforeClose: [][]string{{"A one", "B 1", "close"}, {"A two"}},
	}, {
		name: "syn retransmitted",
		script: []seg{
			{fromA: true, seq: 1000, flags: "S"},
			{fromA: true, seq: 1000, flags: "S"},
			{fromA: false, seq: 5000, flags: "SA"},
			{fromA: false, seq: 5000, flags: "SA"},
			{fromA: true, seq: 1001, flags: "PA", data: "one"},
			{fromA: true, seq: 1000, flags: "S"},
			{fromA: true, seq: 1004, flags: "PA", data: "two"},
		},
		want:  [][]string{{"A onetwo", "close"}},
		stats: func(s Stats) bool { return s.TCPConnections == 1 },
	}, {
		name:   "data returning false stops delivery",
		stopAt: 3,
		script: script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "hello"},
			{fromA: false, seq: 5001, flags: "PA", data: "ok"},
			{fromA: true, seq: 1010, flags: "PA", data: "ahead"},
			{fromA: true, seq: 1006, flags: "PA", data: "more"},
		}, finish(1015, 5003), []seg{
			{fromA: true, seq: 9000, flags: "S"},
			{fromA: true, seq: 9001, flags: "PA", data: "new"},
		}),
		want:        [][]string{{"A hello", "close"}, {"A new", "close"}},
		beforeClose: [][]string{{"A hello", "close"}, {"A new"}},
	}, {
		name: "snap length cut is a gap, not a wait",
		script: script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "hello world", cut: 6},
			{fromA: true, seq: 1012, flags: "PA", data: "next"},
			{fromA: false, seq: 5001, flags: "PA", data: "ok"},
		}),
		beforeClose: [][]string{{"A hello", "A gap 6", "A next", "B ok"}},
		want:        [][]string{{"A hello", "A gap 6", "A next", "B ok", "close"}},
		stats:       func(s Stats) bool { return s.Truncated == 1 && s.GapBytes == 6 },
	}, {
		// The snap length left none of the segment's payload: its bytes
		// are a gap before the next segment's, never after them.
		name: "snap length cut of a whole payload",
		script: script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "hello"},
			{fromA: true, seq: 1006, flags: "PA", data: "world", cut: 5},
			{fromA: true, seq: 1011, flags: "PA", data: "next"},
			{fromA: false, seq: 5001, flags: "PA", data: "ok"},
		}),
		beforeClose: [][]string{{"A hello", "A gap 5", "A next", "B ok"}},
		want:        [][]string{{"A hello", "A gap 5", "A next", "B ok", "close"}},
		stats:       func(s Stats) bool { return s.Truncated == 1 && s.GapBytes == 5 && s.Gaps == 1 },
	}, {
		name: "snap length cut of a whole payload then fin",
		script: script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "hello"},
			{fromA: true, seq: 1006, flags: "PA", data: "world", cut: 5},
		}, finish(1011, 5001)),
		beforeClose: [][]string{{"A hello", "A gap 5", "close"}},
		want:        [][]string{{"A hello", "A gap 5", "close"}},
	}, {
		// The capture lost a request segment the broker acknowledged: with
		// no reorder window (reorder_test.go has those with one) the hole
		// is skipped at once, so the requests after it come before the
		// response answering them, not an idle timeout later.
		name: "hole acknowledged by the peer is skipped at once",
		opts: noReorder,
		script: script(handshake, []seg{
			{fromA: true, seq: 1005, flags: "PA", data: "req2"},
			{fromA: false, seq: 5001, flags: "PA", data: "resp", ack: 1009},
		}),
		beforeClose: [][]string{{"A gap 4", "A req2", "B resp"}},
		want:        [][]string{{"A gap 4", "A req2", "B resp", "close"}},
		stats:       func(s Stats) bool { return s.Gaps == 1 && s.GapBytes == 4 && s.DeliveredBytes == 8 },
	}, {
		name: "hole acknowledged in part waits for the rest",
		opts: noReorder,
		script: script(handshake, []seg{
			{fromA: true, seq: 1009, flags: "PA", data: "req3"},
			{fromA: false, seq: 5001, flags: "PA", data: "resp", ack: 1005},
			{fromA: true, seq: 1005, flags: "PA", data: "req2"},
		}),
		beforeClose: [][]string{{"A gap 4", "B resp", "A req2req3"}},
		want:        [][]string{{"A gap 4", "B resp", "A req2req3", "close"}},
	}, {
		name: "ack beyond with nothing queued waits",
		opts: noReorder,
		script: script(handshake, []seg{
			{fromA: false, seq: 5001, flags: "PA", data: "x", ack: 1006},
			{fromA: true, seq: 1006, flags: "PA", data: "next"},
			{fromA: false, seq: 5002, flags: "PA", data: "y", ack: 1010},
		}),
		beforeClose: [][]string{{"B x", "A gap 5", "A next", "B y"}},
		want:        [][]string{{"B x", "A gap 5", "A next", "B y", "close"}},
	}, {
		name: "hole acknowledged across sequence wraparound",
		opts: noReorder,
		script: []seg{
			{fromA: true, seq: 0xfffffffe, flags: "PA", data: "a"},
			{fromA: true, seq: 3, flags: "PA", data: "req2"},
			{fromA: false, seq: 5001, flags: "PA", data: "resp", ack: 7},
		},
		beforeClose: [][]string{{"A a", "A gap 4", "A req2", "B resp"}},
		want:        [][]string{{"A a", "A gap 4", "A req2", "B resp", "close"}},
	}, {
		name: "old ack and duplicate acks skip nothing",
		script: script(handshake, []seg{
			{fromA: true, seq: 1005, flags: "PA", data: "req2"},
			{fromA: false, seq: 5001, flags: "A", ack: 1001},
			{fromA: false, seq: 5001, flags: "A", ack: 1001},
			{fromA: true, seq: 1001, flags: "PA", data: "req1"},
			{fromA: false, seq: 5001, flags: "PA", data: "resp", ack: 1009},
		}),
		beforeClose: [][]string{{"A req1req2", "B resp"}},
		want:        [][]string{{"A req1req2", "B resp", "close"}},
	}, {
		// The peer's RST ends the connection while data waits behind a
		// hole: it is still delivered, after the Gap, before Close.
		name: "rst with data queued behind a hole",
		opts: noReorder,
		script: script(handshake, []seg{
			{fromA: true, seq: 1005, flags: "PA", data: "req1"},
			{fromA: false, seq: 5001, flags: "R"},
		}),
		beforeClose: [][]string{{"A gap 4", "A req1", "close"}},
		want:        [][]string{{"A gap 4", "A req1", "close"}},
	}, {
		// A broker that sent its close_notify and FIN answers the
		// client's close_notify with RST (TLS over loopback): the RST
		// on a half already closed still ends the connection, at once.
		name: "rst after the peer's own fin",
		script: script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "req"},
			{fromA: false, seq: 5001, flags: "PA", data: "bye"},
			{fromA: false, seq: 5004, flags: "FA"},
			{fromA: true, seq: 1004, flags: "PA", data: "bye"},
			{fromA: false, seq: 5005, flags: "R"},
		}),
		beforeClose: [][]string{{"A req", "B bye", "A bye", "close"}},
		want:        [][]string{{"A req", "B bye", "A bye", "close"}},
	}, {
		name: "fin with data queued behind a hole",
		script: script(handshake, []seg{
			{fromA: true, seq: 1005, flags: "PA", data: "req1"},
			{fromA: true, seq: 1009, flags: "FA"},
			{fromA: false, seq: 5001, flags: "FA"},
		}),
		want: [][]string{{"A gap 4", "A req1", "close"}},
	}, {
		// After a fill, data may still wait behind a second hole whose
		// start is unknown: a later acknowledgment must not fill over it.
		name: "two holes, the second never filled over its data",
		opts: noReorder,
		script: script(handshake, []seg{
			{fromA: true, seq: 1005, flags: "PA", data: "bbbb"},
			{fromA: true, seq: 1013, flags: "PA", data: "dddd"},
			{fromA: false, seq: 5001, flags: "PA", data: "x", ack: 1009},
			{fromA: true, seq: 1021, flags: "PA", data: "ffff"},
			{fromA: false, seq: 5002, flags: "PA", data: "y", ack: 1025},
		}),
		beforeClose: [][]string{{"A gap 4", "A bbbb", "B xy"}},
		want:        [][]string{{"A gap 4", "A bbbb", "B xy", "A gap 4", "A dddd", "A gap 4", "A ffff", "close"}},
	}, {
		name: "keep-alive with one byte of old data",
		script: script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "hello"},
			{fromA: true, seq: 1005, flags: "A", data: "o"},
			{fromA: true, seq: 1006, flags: "PA", data: "next"},
		}),
		want:  [][]string{{"A hellonext", "close"}},
		stats: func(s Stats) bool { return s.Retransmissions == 1 && s.Gaps == 0 },
	}, {
		name: "zero-window probe then the whole segment",
		script: script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "A", data: "h"},
			{fromA: true, seq: 1001, flags: "A", data: "h"},
			{fromA: true, seq: 1001, flags: "PA", data: "hello"},
		}),
		want:  [][]string{{"A hello", "close"}},
		stats: func(s Stats) bool { return s.DeliveredBytes == 5 && s.Gaps == 0 },
	}, {
		name: "rst mid-stream from the client",
		script: script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "req"},
			{fromA: false, seq: 5001, flags: "PA", data: "resp"},
			{fromA: true, seq: 1004, flags: "RA"},
			{fromA: false, seq: 5005, flags: "PA", data: "late"},
		}),
		beforeClose: [][]string{{"A req", "B resp", "close"}},
		want:        [][]string{{"A req", "B resp", "close"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{stopAt: tt.stopAt}
			a := NewAssembler(r.newStream, tt.opts)
			feed(t, a, packets(t, rawFrame, client4, server4, tt.script))
			if tt.beforeClose != nil {
				if got := events(r); !reflect.DeepEqual(got, tt.beforeClose) {
					t.Errorf("before Close:\n got %q\nwant %q", got, tt.beforeClose)
				}
			}
			a.Close()
			if got := events(r); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("after Close:\n got %q\nwant %q", got, tt.want)
			}
			for i, s := range r.streams {
				if s.closes != 1 {
					t.Errorf("stream %d closed %d times", i, s.closes)
				}
			}
			if tt.stats != nil && !tt.stats(a.Stats()) {
				t.Errorf("stats %+v", a.Stats())
			}
			if len(r.streams) > 0 && tt.name != "mid-stream start" && (r.streams[0].a != client4 || r.streams[0].b != server4) {
				t.Errorf("endpoints %v %v, want %v %v", r.streams[0].a, r.streams[0].b, client4, server4)
			}
		})
	}
}

func events(r *recorder) [][]string {
	out := make([][]string, len(r.streams))
	for i, s := range r.streams {
		out[i] = append([]string{}, s.events...)
	}
	return out
}

func TestAssemblerLinkTypes(t *testing.T) {
	conv := script(handshake, []seg{
		{fromA: true, seq: 1001, flags: "PA", data: "request"},
		{fromA: false, seq: 5001, flags: "PA", data: "response"},
	}, finish(1008, 5009))
	want := [][]string{{"A request", "B response", "close"}}
	for _, f := range frames {
		t.Run(f.name, func(t *testing.T) {
			client, server := client4, server4
			if f.v6 {
				client, server = client6, server6
			}
			r := &recorder{}
			a := NewAssembler(r.newStream, AssemblerOptions{})
			feed(t, a, packets(t, f, client, server, conv))
			a.Close()
			if got := events(r); !reflect.DeepEqual(got, want) {
				t.Fatalf("got %q want %q", got, want)
			}
			if s := r.streams[0]; s.a != client || s.b != server {
				t.Errorf("endpoints %v %v", s.a, s.b)
			}
			if st := a.Stats(); st.NonTCP != 0 || st.Undecodable != 0 || st.TCPPackets != int64(len(conv)) {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestAssemblerCountsOtherPackets(t *testing.T) {
	udp := func() []byte {
		buf := gopacket.NewSerializeBuffer()
		ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP,
			SrcIP: client4.Addr().AsSlice(), DstIP: server4.Addr().AsSlice()}
		u := &layers.UDP{SrcPort: 53, DstPort: 53}
		u.SetNetworkLayerForChecksum(ip)
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ip, u, gopacket.Payload("dns")); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}()
	tcp := ipTCP(t, false, client4, server4, seg{fromA: true, seq: 1, flags: "PA", data: "x"})
	pkts := []Packet{
		{Data: udp, LinkType: layers.LinkTypeRaw},
		{Data: []byte{0x45, 0, 0}, LinkType: layers.LinkTypeRaw},
		{Data: tcp[:30], LinkType: layers.LinkTypeRaw},          // TCP header cut short
		{Data: tcp, LinkType: layers.LinkType(147)},             // unsupported link type
		{Data: append([]byte{0, 0, 0, 2}, tcp...), LinkType: 0}, // NULL with big-endian family
		{Data: ethernet()(udp, false)[:10], LinkType: layers.LinkTypeEthernet},
		{Data: nil, LinkType: layers.LinkTypeLinuxSLL2},
	}
	for i := range pkts {
		pkts[i].CI.Timestamp = t0
	}
	r := &recorder{}
	a := NewAssembler(r.newStream, AssemblerOptions{})
	feed(t, a, pkts)
	a.Close()
	st := a.Stats()
	want := Stats{Packets: 7, NonTCP: 1, Undecodable: 5, TCPConnections: 1, TCPPackets: 1, PayloadBytes: 1, DeliveredBytes: 1}
	st.Bytes = 0
	if st != want {
		t.Errorf("stats\n got %+v\nwant %+v", st, want)
	}
}

func TestAssemblerIgnoredConnection(t *testing.T) {
	r := &recorder{refuse: func(a, b netip.AddrPort) bool { return b.Port() == 9092 }}
	a := NewAssembler(r.newStream, AssemblerOptions{})
	s := script(handshake, []seg{
		{fromA: true, seq: 1001, flags: "PA", data: "hello"},
		{fromA: true, seq: 1010, flags: "PA", data: "ahead"},
	}, finish(1015, 5001), []seg{
		{fromA: true, seq: 9000, flags: "S"},
	})
	feed(t, a, packets(t, rawFrame, client4, server4, s))
	feed(t, a, packets(t, rawFrame, client4, netip.MustParseAddrPort("10.0.0.2:80"), []seg{{fromA: true, seq: 1, flags: "PA", data: "GET"}}))
	a.Close()
	if got := events(r); !reflect.DeepEqual(got, [][]string{{"A GET", "close"}}) {
		t.Errorf("events %q", got)
	}
	// The SYN after the FINs is a new (ignored) connection.
	if st := a.Stats(); st.TCPConnections != 3 || st.DeliveredBytes != 3 {
		t.Errorf("stats %+v", st)
	}
}
