package pipeline

import (
	"io"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
)

// TestIgnoreDecidedAfterSYN: the emitter learns the ends of a connection it
// dials only once the handshake is done, after its SYN is on the wire and
// maybe already read from the ring; it writes no byte before. The pipeline
// must ask whether a connection is its own when its first bytes come, not
// at its first packet, or the emitter's own produce traffic is analyzed.
func TestIgnoreDecidedAfterSYN(t *testing.T) {
	src, err := capture.Open("../testdata/kgo-v13-nonidempotent-closed-after-append.pcap")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dialed := map[[2]netip.AddrPort]bool{}
	var findings []detect.Finding
	p := newSingle(stages{
		dec: decode.Options{Ports: []uint16{32771}},
		det: detect.Options{Streaming: true, OnFinding: func(f detect.Finding) { findings = append(findings, f) }},
		ignore: func(a, b netip.AddrPort) bool {
			return dialed[[2]netip.AddrPort{a, b}] || dialed[[2]netip.AddrPort{b, a}]
		},
	})
	syns := 0
	for {
		pk, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p.asm.Add(pk)
		// Every connection is the emitter's: known once its SYN is out.
		gp := gopacket.NewPacket(pk.Data, pk.LinkType, gopacket.Default)
		tcp, _ := gp.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if tcp == nil || !tcp.SYN || tcp.ACK || gp.NetworkLayer() == nil {
			continue
		}
		syns++
		src, _ := netip.AddrFromSlice(gp.NetworkLayer().NetworkFlow().Src().Raw())
		dst, _ := netip.AddrFromSlice(gp.NetworkLayer().NetworkFlow().Dst().Raw())
		dialed[[2]netip.AddrPort{netip.AddrPortFrom(src, uint16(tcp.SrcPort)), netip.AddrPortFrom(dst, uint16(tcp.DstPort))}] = true
	}
	findings = append(findings, p.finish()...)
	if syns == 0 {
		t.Fatal("no SYN in the capture")
	}
	if n := p.dec.Stats().ProduceRequests; n != 0 || len(findings) != 0 {
		t.Errorf("own connections analyzed: %d produce requests, %d findings; want none", n, len(findings))
	}
}
