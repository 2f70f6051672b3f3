package capture

import (
	"encoding/binary"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// decodeResult says what decoder.decode found in a packet.
type decodeResult int

const (
	decodedTCP  decodeResult = iota // a TCP segment: see the decoder's fields
	decodedNone                     // a well-formed packet that is not TCP
	decodedBad                      // the packet could not be decoded
)

// decoder turns link-layer frames into TCP segments. It holds one
// gopacket.DecodingLayerParser per first layer, all sharing the same
// preallocated layers, so decoding a packet allocates nothing.
type decoder struct {
	eth   layers.Ethernet
	dot1q layers.Dot1Q
	sll   layers.LinuxSLL
	sll2  layers.LinuxSLL2
	loop  layers.Loopback
	ip4   layers.IPv4
	ip6   layers.IPv6
	tcp   layers.TCP

	ethP, sllP, sll2P, loopP, ip4P, ip6P *gopacket.DecodingLayerParser
	types                                []gopacket.LayerType

	// Results of the last decode that returned decodedTCP.
	src, dst netip.AddrPort
	netFlow  gopacket.Flow
	// missing is how many TCP payload bytes the IP header announces but the
	// capture cut off (snap length); 0 when the segment is whole.
	missing int
	// truncated is set by the layers decoded by decodeEthernet (the
	// gopacket.DecodeFeedback the parsers are to theirs).
	truncated bool
	// parsersOnly turns decodeEthernet and decodeIPv4TCP off (for tests
	// comparing them with the parsers).
	parsersOnly bool
	// rest, when set, is the TCP header decodeIPv4TCP left for fullTCP:
	// tcp's options and the ports TransportFlow returns are not decoded.
	rest []byte
}

// SetTruncated is the gopacket.DecodeFeedback of decodeEthernet's layers.
func (d *decoder) SetTruncated() { d.truncated = true }

func newDecoder() *decoder {
	d := &decoder{types: make([]gopacket.LayerType, 0, 8)}
	// Every parser knows every layer that can follow its first one; layers
	// it does not know (ARP, UDP, IPv6 extension headers, fragments) end
	// decoding without an error and the packet counts as not TCP.
	ipAndTCP := []gopacket.DecodingLayer{&d.ip4, &d.ip6, &d.tcp}
	mk := func(first gopacket.LayerType, more ...gopacket.DecodingLayer) *gopacket.DecodingLayerParser {
		p := gopacket.NewDecodingLayerParser(first, append(more, ipAndTCP...)...)
		p.IgnoreUnsupported = true
		return p
	}
	d.ethP = mk(layers.LayerTypeEthernet, &d.eth, &d.dot1q)
	d.sllP = mk(layers.LayerTypeLinuxSLL, &d.sll, &d.dot1q)
	d.sll2P = mk(layers.LayerTypeLinuxSLL2, &d.sll2, &d.dot1q)
	d.loopP = mk(layers.LayerTypeLoopback, &d.loop)
	d.ip4P = mk(layers.LayerTypeIPv4)
	d.ip6P = mk(layers.LayerTypeIPv6)
	return d
}

// parser returns the parser for a link type and the frame, nil when the
// link type is not supported.
func (d *decoder) parser(link layers.LinkType, data []byte) *gopacket.DecodingLayerParser {
	switch link {
	case layers.LinkTypeEthernet:
		return d.ethP
	case layers.LinkTypeLinuxSLL:
		return d.sllP
	case layers.LinkTypeLinuxSLL2:
		return d.sll2P
	case layers.LinkTypeNull, layers.LinkTypeLoop:
		return d.loopP
	case layers.LinkTypeIPv4:
		return d.ip4P
	case layers.LinkTypeIPv6:
		return d.ip6P
	case layers.LinkTypeRaw, 12: // 12 is LINKTYPE_RAW on OpenBSD
		if len(data) > 0 && data[0]>>4 == 6 {
			return d.ip6P
		}
		return d.ip4P
	}
	return nil
}

// decodeEthernet decodes the usual frame, Ethernet then IPv4 or IPv6 then
// TCP, into the layers the parsers share, calling each layer's
// DecodeFromBytes directly, as ethP would: the same layers filled the same
// way, without the parser's lookups from one layer to the next. It returns
// the IP layer's type, or false for any other frame and any layer that does
// not decode (ethP then decodes the frame from the start and says why).
// Nothing can follow TCP in ethP (no port of gopacket's maps to a layer it
// holds), so a TCP layer decoded ends the frame there too.
func (d *decoder) decodeEthernet(data []byte) (ip gopacket.LayerType, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false // ethP recovers from the same panic and fails
		}
	}()
	d.truncated = false
	if d.eth.DecodeFromBytes(data, d) != nil {
		return 0, false
	}
	p := d.eth.LayerPayload()
	if len(p) == 0 {
		return 0, false
	}
	switch ip = d.eth.NextLayerType(); ip {
	case layers.LayerTypeIPv4:
		if d.ip4.DecodeFromBytes(p, d) != nil || d.ip4.NextLayerType() != layers.LayerTypeTCP {
			return 0, false
		}
		p = d.ip4.LayerPayload()
	case layers.LayerTypeIPv6:
		if d.ip6.DecodeFromBytes(p, d) != nil || d.ip6.NextLayerType() != layers.LayerTypeTCP {
			return 0, false
		}
		p = d.ip6.LayerPayload()
	default:
		return 0, false
	}
	if len(p) == 0 || d.tcp.DecodeFromBytes(p, d) != nil {
		return 0, false
	}
	return ip, true
}

// decode decodes one frame. On decodedTCP, d.tcp, d.src, d.dst, d.netFlow
// and d.missing describe the segment; d.tcp.Payload aliases data.
func (d *decoder) decode(link layers.LinkType, data []byte) decodeResult {
	r := d.decodeHead(link, data)
	d.fullTCP()
	return r
}

// decodeHead is decode, except that d.tcp's options and TransportFlow may
// be left for fullTCP: what the Assembler's fast path reads is there.
func (d *decoder) decodeHead(link layers.LinkType, data []byte) decodeResult {
	var (
		ip        gopacket.LayerType
		ok        bool
		truncated bool
	)
	d.rest = nil
	if link == layers.LinkTypeEthernet && !d.parsersOnly && len(data) >= 14 {
		// Only frames whose EtherType says IP: a VLAN tag would be decoded
		// twice.
		switch layers.EthernetType(binary.BigEndian.Uint16(data[12:])) {
		case layers.EthernetTypeIPv4:
			if ok, truncated = d.decodeIPv4TCP(data); ok {
				ip = layers.LayerTypeIPv4
				break
			}
			fallthrough // not the usual frame: gopacket's layers decode it
		case layers.EthernetTypeIPv6:
			ip, ok = d.decodeEthernet(data)
			truncated = d.truncated
		}
	}
	if !ok {
		p := d.parser(link, data)
		if p == nil {
			return decodedBad
		}
		err := p.DecodeLayers(data, &d.types)
		n := len(d.types)
		if n == 0 || d.types[n-1] != layers.LayerTypeTCP {
			if err != nil {
				return decodedBad
			}
			return decodedNone
		}
		if err != nil || n < 2 {
			return decodedBad
		}
		ip, truncated = d.types[n-2], p.Truncated
	}
	var ipLen, ipHeader int
	switch ip {
	case layers.LayerTypeIPv4:
		if len(d.ip4.SrcIP) != 4 || len(d.ip4.DstIP) != 4 {
			return decodedBad
		}
		d.src = netip.AddrPortFrom(netip.AddrFrom4([4]byte(d.ip4.SrcIP)), uint16(d.tcp.SrcPort))
		d.dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(d.ip4.DstIP)), uint16(d.tcp.DstPort))
		d.netFlow = d.ip4.NetworkFlow()
		ipLen, ipHeader = int(d.ip4.Length), int(d.ip4.IHL)*4
	case layers.LayerTypeIPv6:
		if len(d.ip6.SrcIP) != 16 || len(d.ip6.DstIP) != 16 {
			return decodedBad
		}
		d.src = netip.AddrPortFrom(netip.AddrFrom16([16]byte(d.ip6.SrcIP)), uint16(d.tcp.SrcPort))
		d.dst = netip.AddrPortFrom(netip.AddrFrom16([16]byte(d.ip6.DstIP)), uint16(d.tcp.DstPort))
		d.netFlow = d.ip6.NetworkFlow()
		if d.ip6.Length != 0 {
			ipLen, ipHeader = int(d.ip6.Length)+40, 40
		}
	default:
		return decodedBad
	}
	d.missing = 0
	if truncated && ipLen > 0 {
		if want := ipLen - ipHeader - int(d.tcp.DataOffset)*4; want > len(d.tcp.Payload) {
			d.missing = want - len(d.tcp.Payload)
		}
	}
	return decodedTCP
}
