package live

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// fakeRing plays packets, then times out; its counters are readings given
// in turn, the last one repeated.
type fakeRing struct {
	t       *testing.T
	packets []fakePacket
	stats   [][3]uint32
	err     error         // returned once the packets are played, instead of ErrTimeout
	block   chan struct{} // when set, a read waits for it (a poll in progress)
	mu      sync.Mutex
	reading bool
	closed  bool
}

type fakePacket struct {
	data []byte
	ts   time.Time
}

func (r *fakeRing) ZeroCopyReadPacketData() ([]byte, gopacket.CaptureInfo, error) {
	r.mu.Lock()
	if r.closed {
		r.t.Error("read after Close")
	}
	r.reading = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.reading = false
		r.mu.Unlock()
	}()
	if r.block != nil {
		<-r.block
	}
	if len(r.packets) == 0 {
		if r.err != nil {
			return nil, gopacket.CaptureInfo{}, r.err
		}
		return nil, gopacket.CaptureInfo{}, ErrTimeout
	}
	p := r.packets[0]
	r.packets = r.packets[1:]
	ci := gopacket.CaptureInfo{Timestamp: p.ts, CaptureLength: len(p.data), Length: len(p.data),
		InterfaceIndex: 1, AncillaryData: []any{"vlan"}}
	return p.data, ci, nil
}

func (r *fakeRing) socketStats() (uint32, uint32, uint32, error) {
	if len(r.stats) == 0 {
		return 0, 0, 0, nil
	}
	s := r.stats[0]
	if len(r.stats) > 1 {
		r.stats = r.stats[1:]
	}
	return s[0], s[1], s[2], nil
}

func (r *fakeRing) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reading {
		r.t.Error("ring closed while a read was in progress")
	}
	if r.closed {
		r.t.Error("ring closed twice")
	}
	r.closed = true
}

var t0 = time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)

func TestNextDiscardsUnfiltered(t *testing.T) {
	ms := time.Millisecond
	r := &fakeRing{t: t, packets: []fakePacket{
		{[]byte("before 1"), t0.Add(-2 * ms)},
		{[]byte("before 2"), t0.Add(-ms)},
		{[]byte("after 1"), t0.Add(ms)},
		{[]byte("after 2"), t0.Add(-ms / 2)}, // after a filtered one: kept
	}}
	s := newSource(r, "lo", layers.LinkTypeEthernet, t0)
	var got []string
	for {
		p, err := s.Next()
		if errors.Is(err, ErrTimeout) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if p.LinkType != layers.LinkTypeEthernet || p.CI.AncillaryData != nil || p.CI.InterfaceIndex != 1 {
			t.Errorf("packet %q: link %v, ancillary %v, interface %d", p.Data, p.LinkType, p.CI.AncillaryData, p.CI.InterfaceIndex)
		}
		got = append(got, string(p.Data))
	}
	if want := "after 1,after 2"; strings.Join(got, ",") != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if st := s.Stats(); st.Received != 2 || st.Discarded != 2 {
		t.Errorf("stats %+v, want 2 received and 2 discarded", st)
	}
}

func TestStatsWrap(t *testing.T) {
	r := &fakeRing{t: t, stats: [][3]uint32{
		{4294967000, 10, 1},
		{200, 4294967295, 2}, // packets wrapped; drops at the edge
		{300, 5, 2},          // drops wrapped
	}}
	s := newSource(r, "lo", layers.LinkTypeEthernet, time.Time{})
	want := []Stats{
		{Packets: 4294967000, Drops: 10, QueueFreezes: 1},
		{Packets: 4294967496, Drops: 4294967295, QueueFreezes: 2},
		{Packets: 4294967596, Drops: 4294967301, QueueFreezes: 2},
	}
	for i, w := range want {
		if got := s.Stats(); got != w {
			t.Errorf("reading %d: %+v, want %+v", i, got, w)
		}
	}
}

func TestClose(t *testing.T) {
	r := &fakeRing{t: t, stats: [][3]uint32{{5, 1, 0}}}
	s := newSource(r, "lo", layers.LinkTypeEthernet, time.Time{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !r.closed {
		t.Fatal("ring not closed")
	}
	if _, err := s.Next(); err != ErrClosed {
		t.Errorf("Next after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if st := s.Stats(); st.Packets != 5 || st.Drops != 1 {
		t.Errorf("stats after Close %+v, want the last reading", st)
	}
}

// TestCloseWaitsForNext closes the Source while Next polls on another
// goroutine: the ring must not be closed under the poll.
func TestCloseWaitsForNext(t *testing.T) {
	r := &fakeRing{t: t, block: make(chan struct{})}
	s := newSource(r, "lo", layers.LinkTypeEthernet, time.Time{})
	nextDone := make(chan error)
	go func() {
		_, err := s.Next()
		nextDone <- err
	}()
	for { // wait for the read to start
		r.mu.Lock()
		reading := r.reading
		r.mu.Unlock()
		if reading {
			break
		}
		time.Sleep(time.Millisecond)
	}
	closeDone := make(chan struct{})
	go func() {
		s.Close()
		close(closeDone)
	}()
	select {
	case <-closeDone:
		t.Fatal("Close returned while Next was polling")
	case <-time.After(20 * time.Millisecond):
	}
	close(r.block) // the poll times out
	if err := <-nextDone; err != ErrTimeout {
		t.Errorf("Next: %v, want ErrTimeout", err)
	}
	<-closeDone
	if _, err := s.Next(); err != ErrClosed {
		t.Errorf("Next after Close: %v, want ErrClosed", err)
	}
}

func TestNextError(t *testing.T) {
	cause := errors.New("packet poll failed")
	s := newSource(&fakeRing{t: t, err: cause}, "eth0", layers.LinkTypeEthernet, time.Time{})
	_, err := s.Next()
	if !errors.Is(err, cause) || err.Error() != "live: reading eth0: packet poll failed" {
		t.Errorf("err = %v", err)
	}
}

func TestOpenOptionErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts Options
		want string
	}{
		{"no interface", Options{}, "live: no interface given"},
		{"negative snap length", Options{Interface: "lo", SnapLen: -1}, "live: snap length -1 out of range 1..262144"},
		{"big snap length", Options{Interface: "lo", SnapLen: MaxSnapLen + 1}, "live: snap length 262145 out of range"},
		{"negative ring", Options{Interface: "lo", RingBytes: -1}, "live: ring size -1 is negative"},
		{"block timeout", Options{Interface: "lo", BlockTimeout: time.Microsecond}, "live: block timeout 1µs below 1ms"},
		{"poll timeout", Options{Interface: "lo", PollTimeout: -time.Second}, "live: poll timeout -1s below 1ms"},
		{"too many ports", Options{Interface: "lo", Ports: make([]uint16, MaxPorts+1)}, "live: 65 ports for the kernel filter, at most 64"},
		{"promiscuous any", Options{Interface: "any", Promiscuous: true}, "live: promiscuous mode is not possible on \"any\""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(tt.opts)
			if err == nil {
				s.Close()
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %q, want %q", err, tt.want)
			}
		})
	}
}

func TestRingBlocks(t *testing.T) {
	for _, tt := range []struct{ bytes, blocks int }{
		{0, 2}, {1, 2}, {blockBytes * 2, 2}, {blockBytes*2 + 1, 3}, {DefaultRingBytes, 64},
	} {
		if got := ringBlocks(tt.bytes); got != tt.blocks {
			t.Errorf("ringBlocks(%d) = %d, want %d", tt.bytes, got, tt.blocks)
		}
	}
}
