package capture

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// checkFlowHash checks FlowHasher against the decoder an Assembler uses: a
// frame the decoder takes as TCP hashes as its endpoints do, the fast path
// never hashes a frame the decoder takes as TCP differently or as not TCP,
// and Hash fails only for frames the decoder does not take as TCP. It
// reports whether the fast path took the frame.
func checkFlowHash(t *testing.T, h *FlowHasher, d *decoder, link layers.LinkType, data []byte) bool {
	t.Helper()
	res := d.decode(link, data)
	fast, fastOK := fastHash(link, data)
	got, ok := h.Hash(link, data)
	if res == decodedTCP {
		want := addrPortHash(d.src) + addrPortHash(d.dst)
		if !ok || got != want {
			t.Errorf("%v %x: Hash %x %v, want %x (%v -> %v)", link, data, got, ok, want, d.src, d.dst)
		}
		if fastOK && fast != want {
			t.Errorf("%v %x: fast path %x, want %x", link, data, fast, want)
		}
		return fastOK
	}
	if fastOK && res == decodedNone {
		t.Errorf("%v %x: fast path took a frame that is not TCP", link, data)
	}
	if !fastOK && ok {
		t.Errorf("%v %x: Hash ok for a frame the decoder does not take as TCP", link, data)
	}
	return fastOK
}

// TestFlowHashFrames checks every link type and wrapping Assemblers read,
// both directions, and the frames the fast path leaves to the decoder.
func TestFlowHashFrames(t *testing.T) {
	h, d := NewFlowHasher(), newDecoder()
	fastFrames := map[string]bool{"raw4": true, "raw6": true, "ipv4": true, "ipv6": true, "ethernet4": true, "ethernet6": true,
		"vlan": true, "sll": true, "sll6": true, "sll2": true, "sll2v6": true}
	for _, fr := range frames {
		client, server := client4, server4
		if fr.v6 {
			client, server = client6, server6
		}
		var hashes []uint64
		for _, p := range packets(t, fr, client, server, script(handshake, []seg{{fromA: true, seq: 1001, flags: "PA", data: "x"}})) {
			if got := checkFlowHash(t, h, d, p.LinkType, p.Data); got != fastFrames[fr.name] {
				t.Errorf("%s: fast path %v, want %v", fr.name, got, fastFrames[fr.name])
			}
			v, _ := h.Hash(p.LinkType, p.Data)
			hashes = append(hashes, v)
		}
		for _, v := range hashes[1:] {
			if v != hashes[0] {
				t.Errorf("%s: packets of one connection hash %x", fr.name, hashes)
				break
			}
		}
	}

	ip4 := ipTCP(t, false, client4, server4, seg{fromA: true, seq: 1, flags: "PA", data: "abc"})
	ip6 := ipTCP(t, true, client6, server6, seg{fromA: true, seq: 1, flags: "PA", data: "abc"})
	edit := func(b []byte, f func([]byte)) []byte {
		b = append([]byte(nil), b...)
		f(b)
		return b
	}
	for name, data := range map[string][]byte{
		"fragment":      edit(ip4, func(b []byte) { b[6] |= 0x20 }), // more fragments
		"later-frag":    edit(ip4, func(b []byte) { b[7] = 1 }),     // offset 8
		"udp":           edit(ip4, func(b []byte) { b[9] = 17 }),    // UDP
		"ip-in-ip":      append(edit(ip4[:20], func(b []byte) { b[9] = 4 }), ip4...),
		"v6-in-v4":      append(edit(ip4[:20], func(b []byte) { b[9] = 41 }), ip6...),
		"v6-hop-by-hop": edit(ip6, func(b []byte) { b[6] = 0 }),    // extension header
		"bad-ihl":       edit(ip4, func(b []byte) { b[0] = 0x44 }), // IHL 4
		"v4":            ip4,                                       // and under the link types of IPv6
		"v6":            ip6,
		"short":         ip4[:22],
		"empty":         nil,
	} {
		for _, link := range []layers.LinkType{layers.LinkTypeRaw, layers.LinkTypeIPv4, layers.LinkTypeIPv6} {
			t.Run(name, func(t *testing.T) { checkFlowHash(t, h, d, link, data) })
		}
		checkFlowHash(t, h, d, layers.LinkTypeEthernet, ethernet()(data, false))
		checkFlowHash(t, h, d, layers.LinkTypeLinuxSLL, sll(data, false))
	}
}

// TestFlowHashCaptures checks the hash on every packet of the real
// captures under testdata.
func TestFlowHashCaptures(t *testing.T) {
	var files []string
	for _, pattern := range []string{"../testdata/*.pcap", "testdata/*.pcap*"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 10 {
		t.Fatalf("found %d captures", len(files))
	}
	h, d := NewFlowHasher(), newDecoder()
	for _, f := range files {
		s, err := Open(f)
		if err != nil {
			t.Fatal(err)
		}
		pkts, err := readAll(s)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		fast := 0
		for _, p := range pkts {
			if checkFlowHash(t, h, d, p.LinkType, p.Data) {
				fast++
			}
		}
		if fast == 0 {
			t.Errorf("%s: no packet took the fast path", f)
		}
	}
}

// TestFlushGate checks the gate an Assembler uses: the first time starts
// the clock, and the work is due each FlushInterval of packet time after.
func TestFlushGate(t *testing.T) {
	g := NewFlushGate(AssemblerOptions{})
	var due []int
	for i, ms := range []int{0, 500, 999, 1000, 1200, 900, 2000, 2999, 3100} {
		if g.Due(t0.Add(time.Duration(ms) * time.Millisecond)) {
			due = append(due, i)
		}
	}
	if want := []int{3, 6, 8}; !slices.Equal(due, want) {
		t.Errorf("due at %v, want %v", due, want)
	}
}
