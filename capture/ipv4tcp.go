package capture

import (
	"encoding/binary"
	"math"

	"github.com/gopacket/gopacket/layers"
)

// decodeIPv4TCP decodes the commonest frame of all, Ethernet then IPv4
// with no options and not a fragment then TCP, into the layers the parsers
// share, filling every field as their DecodeFromBytes would, but leaving
// the TCP options (and the ports TransportFlow reads, which only gopacket
// can set) to fullTCP: d.rest is the TCP header then. It reports whether
// the frame is such a one, and whether the IP header says more bytes than
// the frame holds (a snap-length cut: the parsers' truncation). Any other
// frame, and any that would not decode, is left to decodeEthernet and the
// parsers, which decode it from the start and say why.
//
// On a real capture gopacket's layers took 13% of a one-goroutine run's
// CPU, most of it the TCP options (each appended as a TCPOption, MPTCP
// fields and all), which only reassembly reads, never the fast path
// (fastpath.go). With this, one goroutine took 0.543 s of CPU against
// 0.595 s on a real 1 GiB 1500-MTU capture, and the split run 0.640
// against 0.825 s (11 interleaved runs, medians); BenchmarkPacketDecode:
// 41 ns against 57 ns for decode.
func (d *decoder) decodeIPv4TCP(data []byte) (ok, truncated bool) {
	p := data[14:]
	if len(p) < 20 || p[0]&0x0f != 5 || layers.IPProtocol(p[9]) != layers.IPProtocolTCP {
		return false, false
	}
	ff := binary.BigEndian.Uint16(p[6:8])
	if ff&0x3fff != 0 {
		return false, false // more fragments, or an offset: a fragment
	}
	length := int(binary.BigEndian.Uint16(p[2:4]))
	ipLength := uint16(length)
	if length == 0 {
		// TCP segmentation offload: as IPv4.DecodeFromBytes, the frame's.
		length = len(p)
		ipLength = uint16(min(length, math.MaxUint16))
	}
	if length < 20 {
		return false, false
	}
	if len(p) > length {
		p = p[:length] // the frame's padding
	} else if len(p) < length {
		truncated = true
	}
	t := p[20:]
	if len(t) < 20 {
		return false, false
	}
	off := t[12] >> 4
	if off < 5 || int(off)*4 > len(t) {
		return false, false
	}

	e := &d.eth
	e.DstMAC, e.SrcMAC = data[0:6], data[6:12]
	e.EthernetType, e.Length = layers.EthernetTypeIPv4, 0
	e.Contents, e.Payload = data[:14], data[14:]

	ip := &d.ip4
	ip.Contents, ip.Payload = p[:20], t
	ip.Version, ip.IHL, ip.TOS, ip.Length = p[0]>>4, 5, p[1], ipLength
	ip.Id = binary.BigEndian.Uint16(p[4:6])
	ip.Flags, ip.FragOffset = layers.IPv4Flag(ff>>13), ff&0x1fff
	ip.TTL, ip.Protocol = p[8], layers.IPProtocolTCP
	ip.Checksum = binary.BigEndian.Uint16(p[10:12])
	ip.SrcIP, ip.DstIP = p[12:16], p[16:20]
	ip.Options, ip.Padding = ip.Options[:0], nil

	tcp := &d.tcp
	ds := int(off) * 4
	tcp.Contents, tcp.Payload = t[:ds], t[ds:]
	tcp.SrcPort = layers.TCPPort(binary.BigEndian.Uint16(t[0:2]))
	tcp.DstPort = layers.TCPPort(binary.BigEndian.Uint16(t[2:4]))
	tcp.Seq = binary.BigEndian.Uint32(t[4:8])
	tcp.Ack = binary.BigEndian.Uint32(t[8:12])
	tcp.DataOffset = off
	f := t[13]
	tcp.FIN, tcp.SYN, tcp.RST, tcp.PSH = f&0x01 != 0, f&0x02 != 0, f&0x04 != 0, f&0x08 != 0
	tcp.ACK, tcp.URG, tcp.ECE, tcp.CWR = f&0x10 != 0, f&0x20 != 0, f&0x40 != 0, f&0x80 != 0
	tcp.NS = t[12]&0x01 != 0
	tcp.Window = binary.BigEndian.Uint16(t[14:16])
	tcp.Checksum = binary.BigEndian.Uint16(t[16:18])
	tcp.Urgent = binary.BigEndian.Uint16(t[18:20])
	d.rest = t
	return true, truncated
}

// fullTCP decodes what decodeIPv4TCP left of the TCP header, if anything:
// its options, and the ports of TransportFlow. Its checks passed there, so
// it decodes. gopacket's DecodeFromBytes is the one way to set those ports,
// so the header's fixed fields are decoded a second time: only for the
// segments that go to reassembly, not the fast path's.
func (d *decoder) fullTCP() {
	if d.rest == nil {
		return
	}
	d.tcp.DecodeFromBytes(d.rest, d)
	d.rest = nil
}
