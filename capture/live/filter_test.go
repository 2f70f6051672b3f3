package live

import (
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"
)

var (
	mac1 = net.HardwareAddr{0, 1, 2, 3, 4, 5}
	mac2 = net.HardwareAddr{0, 1, 2, 3, 4, 6}
	ip4a = net.IP{10, 0, 0, 1}
	ip4b = net.IP{10, 0, 0, 2}
	ip6a = net.ParseIP("fd00::1")
	ip6b = net.ParseIP("fd00::2")
)

// serialize builds a packet from gopacket layers, lengths and checksums
// computed.
func serialize(t testing.TB, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	var net gopacket.NetworkLayer
	for _, l := range ls {
		switch l := l.(type) {
		case *layers.IPv4:
			net = l
		case *layers.IPv6:
			net = l
		case *layers.TCP:
			if net != nil {
				l.SetNetworkLayerForChecksum(net)
			}
		case *layers.UDP:
			if net != nil {
				l.SetNetworkLayerForChecksum(net)
			}
		}
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: net != nil}
	if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
		t.Fatalf("serialize: %v", err)
	}
	return slices.Clone(buf.Bytes())
}

func eth(et layers.EthernetType) *layers.Ethernet {
	return &layers.Ethernet{SrcMAC: mac1, DstMAC: mac2, EthernetType: et}
}

func v4(proto layers.IPProtocol) *layers.IPv4 {
	return &layers.IPv4{Version: 4, TTL: 64, Protocol: proto, SrcIP: ip4a, DstIP: ip4b}
}

func v6(next layers.IPProtocol) *layers.IPv6 {
	return &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: next, SrcIP: ip6a, DstIP: ip6b}
}

func tcp(src, dst uint16) *layers.TCP {
	return &layers.TCP{SrcPort: layers.TCPPort(src), DstPort: layers.TCPPort(dst), Seq: 1, ACK: true, Window: 1024, DataOffset: 5}
}

func udp(src, dst uint16) *layers.UDP {
	return &layers.UDP{SrcPort: layers.UDPPort(src), DstPort: layers.UDPPort(dst)}
}

var payload = gopacket.Payload("kafka bytes")

// runFilter runs prog in golang.org/x/net/bpf's VM. The VM knows no
// ancillary loads but the length, so each LoadExtension is replaced with a
// LoadConstant of the value ext gives it: what the kernel would load for
// this packet (its protocol, type, interface).
func runFilter(t *testing.T, prog []bpf.Instruction, ext map[bpf.Extension]uint32, data []byte) int {
	t.Helper()
	ins := slices.Clone(prog)
	for i, in := range ins {
		if le, ok := in.(bpf.LoadExtension); ok {
			ins[i] = bpf.LoadConstant{Dst: bpf.RegA, Val: ext[le.Num]}
		}
	}
	vm, err := bpf.NewVM(ins)
	if err != nil {
		t.Fatalf("NewVM: %v", err)
	}
	n, err := vm.Run(data)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return n
}

func TestFilter(t *testing.T) {
	const snap = 4096
	kafka := []uint16{9092, 19092}
	ethSpec := filterSpec{link: layers.LinkTypeEthernet, ports: kafka, snapLen: snap}
	rawSpec := filterSpec{link: layers.LinkTypeRaw, ports: kafka, snapLen: snap}
	loSpec := ethSpec
	loSpec.rejectOutgoing = true
	anySpec := rawSpec
	anySpec.loopbacks = []uint32{1, 7}
	allTCP := filterSpec{link: layers.LinkTypeEthernet, snapLen: snap}
	manyPorts := filterSpec{link: layers.LinkTypeEthernet, snapLen: snap}
	for i := range MaxPorts {
		manyPorts.ports = append(manyPorts.ports, uint16(30000+i))
	}
	proto4 := map[bpf.Extension]uint32{bpf.ExtProto: etherTypeIPv4}
	proto6 := map[bpf.Extension]uint32{bpf.ExtProto: etherTypeIPv6}

	// A non-first IPv4 fragment whose data, where a TCP header would be,
	// holds the Kafka port twice.
	frag := v4(layers.IPProtocolTCP)
	frag.FragOffset = 185
	fragData := gopacket.Payload{0x23, 0x84, 0x23, 0x84, 0, 0, 0, 0}
	first := v4(layers.IPProtocolTCP)
	first.Flags = layers.IPv4MoreFragments
	withOpts := v4(layers.IPProtocolTCP)
	withOpts.Options = []layers.IPv4Option{{OptionType: 0x94, OptionLength: 4, OptionData: []byte{0, 0}}}
	// IPv6 with a hop-by-hop header before TCP, written by hand.
	tcpAlone := serialize(t, tcp(40000, 9092))
	hopByHop := append([]byte{6, 0, 1, 4, 0, 0, 0, 0}, tcpAlone...)
	full := serialize(t, eth(layers.EthernetTypeIPv4), v4(layers.IPProtocolTCP), tcp(40000, 9092), payload)

	tests := []struct {
		name string
		spec filterSpec
		ext  map[bpf.Extension]uint32
		data []byte
		want bool
	}{
		{"ipv4 to kafka", ethSpec, nil, full, true},
		{"ipv4 from kafka", ethSpec, nil, serialize(t, eth(layers.EthernetTypeIPv4), v4(layers.IPProtocolTCP), tcp(9092, 40000), payload), true},
		{"ipv4 second port", ethSpec, nil, serialize(t, eth(layers.EthernetTypeIPv4), v4(layers.IPProtocolTCP), tcp(40000, 19092), payload), true},
		{"ipv4 other port", ethSpec, nil, serialize(t, eth(layers.EthernetTypeIPv4), v4(layers.IPProtocolTCP), tcp(40000, 9093), payload), false},
		{"ipv4 options", ethSpec, nil, serialize(t, eth(layers.EthernetTypeIPv4), withOpts, tcp(40000, 9092), payload), true},
		{"ipv4 options other port", ethSpec, nil, serialize(t, eth(layers.EthernetTypeIPv4), withOpts, tcp(2302, 9093), payload), false},
		{"ipv4 udp kafka port", ethSpec, nil, serialize(t, eth(layers.EthernetTypeIPv4), v4(layers.IPProtocolUDP), udp(40000, 9092), payload), false},
		{"ipv4 first fragment", ethSpec, nil, serialize(t, eth(layers.EthernetTypeIPv4), first, tcp(40000, 9092), payload), true},
		{"ipv4 later fragment", ethSpec, nil, serialize(t, eth(layers.EthernetTypeIPv4), frag, fragData), false},
		{"ipv4 cut before ports", ethSpec, nil, full[:14+20+1], false},
		{"ipv4 cut before protocol", ethSpec, nil, full[:14+5], false},
		{"ipv6 to kafka", ethSpec, nil, serialize(t, eth(layers.EthernetTypeIPv6), v6(layers.IPProtocolTCP), tcp(40000, 9092), payload), true},
		{"ipv6 from kafka", ethSpec, nil, serialize(t, eth(layers.EthernetTypeIPv6), v6(layers.IPProtocolTCP), tcp(19092, 40000), payload), true},
		{"ipv6 other port", ethSpec, nil, serialize(t, eth(layers.EthernetTypeIPv6), v6(layers.IPProtocolTCP), tcp(40000, 80), payload), false},
		{"ipv6 udp", ethSpec, nil, serialize(t, eth(layers.EthernetTypeIPv6), v6(layers.IPProtocolUDP), udp(9092, 9092), payload), false},
		{"ipv6 extension header", ethSpec, nil, serialize(t, eth(layers.EthernetTypeIPv6), v6(layers.IPProtocolIPv6HopByHop), gopacket.Payload(hopByHop)), false},
		{"arp", ethSpec, nil, serialize(t, eth(layers.EthernetTypeARP), &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4, Operation: 1, SourceHwAddress: mac1, SourceProtAddress: ip4a, DstHwAddress: mac2, DstProtAddress: ip4b}), false},
		{"vlan ipv4", ethSpec, nil, serialize(t, eth(layers.EthernetTypeDot1Q), &layers.Dot1Q{VLANIdentifier: 100, Type: layers.EthernetTypeIPv4}, v4(layers.IPProtocolTCP), tcp(40000, 9092), payload), true},
		{"vlan ipv6 other port", ethSpec, nil, serialize(t, eth(layers.EthernetTypeDot1Q), &layers.Dot1Q{VLANIdentifier: 100, Type: layers.EthernetTypeIPv6}, v6(layers.IPProtocolTCP), tcp(40000, 9093), payload), false},
		{"qinq ipv6", ethSpec, nil, serialize(t, eth(layers.EthernetTypeQinQ), &layers.Dot1Q{VLANIdentifier: 100, Type: layers.EthernetTypeDot1Q}, &layers.Dot1Q{VLANIdentifier: 200, Type: layers.EthernetTypeIPv6}, v6(layers.IPProtocolTCP), tcp(9092, 40000), payload), true},
		{"three tags", ethSpec, nil, serialize(t, eth(layers.EthernetTypeQinQ), &layers.Dot1Q{Type: layers.EthernetTypeDot1Q}, &layers.Dot1Q{Type: layers.EthernetTypeDot1Q}, &layers.Dot1Q{Type: layers.EthernetTypeIPv4}, v4(layers.IPProtocolTCP), tcp(40000, 9092), payload), false},

		{"cooked ipv4", rawSpec, proto4, serialize(t, v4(layers.IPProtocolTCP), tcp(40000, 9092), payload), true},
		{"cooked ipv4 other port", rawSpec, proto4, serialize(t, v4(layers.IPProtocolTCP), tcp(40000, 9093), payload), false},
		{"cooked ipv6", rawSpec, proto6, serialize(t, v6(layers.IPProtocolTCP), tcp(9092, 40000), payload), true},
		{"cooked ipv6 udp", rawSpec, proto6, serialize(t, v6(layers.IPProtocolUDP), udp(9092, 40000), payload), false},
		{"cooked ipv4 later fragment", rawSpec, proto4, serialize(t, frag, fragData), false},
		{"cooked not ip", rawSpec, map[bpf.Extension]uint32{bpf.ExtProto: 0x0806}, serialize(t, v4(layers.IPProtocolTCP), tcp(40000, 9092), payload), false},

		{"loopback received", loSpec, map[bpf.Extension]uint32{bpf.ExtType: 0}, full, true},
		{"loopback sent", loSpec, map[bpf.Extension]uint32{bpf.ExtType: packetOutgoing}, full, false},
		{"any received on loopback", anySpec, map[bpf.Extension]uint32{bpf.ExtProto: etherTypeIPv4, bpf.ExtInterfaceIndex: 7}, full[14:], true},
		{"any sent on loopback", anySpec, map[bpf.Extension]uint32{bpf.ExtProto: etherTypeIPv4, bpf.ExtType: packetOutgoing, bpf.ExtInterfaceIndex: 7}, full[14:], false},
		{"any sent on first loopback", anySpec, map[bpf.Extension]uint32{bpf.ExtProto: etherTypeIPv4, bpf.ExtType: packetOutgoing, bpf.ExtInterfaceIndex: 1}, full[14:], false},
		{"any sent on eth0", anySpec, map[bpf.Extension]uint32{bpf.ExtProto: etherTypeIPv4, bpf.ExtType: packetOutgoing, bpf.ExtInterfaceIndex: 2}, full[14:], true},

		{"all tcp ipv4", allTCP, nil, serialize(t, eth(layers.EthernetTypeIPv4), v4(layers.IPProtocolTCP), tcp(40000, 80), payload), true},
		{"all tcp ipv6", allTCP, nil, serialize(t, eth(layers.EthernetTypeIPv6), v6(layers.IPProtocolTCP), tcp(40000, 80), payload), true},
		{"all tcp udp", allTCP, nil, serialize(t, eth(layers.EthernetTypeIPv4), v4(layers.IPProtocolUDP), udp(40000, 80), payload), false},
		{"all tcp later fragment", allTCP, nil, serialize(t, eth(layers.EthernetTypeIPv4), frag, fragData), false},

		{"many ports last as destination", manyPorts, nil, serialize(t, eth(layers.EthernetTypeIPv4), v4(layers.IPProtocolTCP), tcp(40000, 30000+MaxPorts-1), payload), true},
		{"many ports first as source", manyPorts, nil, serialize(t, eth(layers.EthernetTypeIPv6), v6(layers.IPProtocolTCP), tcp(30000, 40000), payload), true},
		{"many ports none", manyPorts, nil, serialize(t, eth(layers.EthernetTypeIPv4), v4(layers.IPProtocolTCP), tcp(40000, 30000+MaxPorts), payload), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := filterProgram(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := bpf.Assemble(prog)
			if err != nil {
				t.Fatalf("Assemble: %v", err)
			}
			if len(raw) > 4096 { // BPF_MAXINSNS
				t.Fatalf("%d instructions, the kernel takes 4096", len(raw))
			}
			n := runFilter(t, prog, tt.ext, tt.data)
			switch {
			case tt.want && n != snap:
				t.Errorf("returned %d, want the snap length %d (accepted)", n, snap)
			case !tt.want && n != 0:
				t.Errorf("returned %d, want 0 (rejected)", n)
			}
		})
	}
}

func TestFilterErrors(t *testing.T) {
	tooMany := make([]uint16, MaxPorts+1)
	for _, tt := range []struct {
		name string
		spec filterSpec
		want string
	}{
		{"too many ports", filterSpec{link: layers.LinkTypeEthernet, ports: tooMany}, "at most 64"},
		{"link type", filterSpec{link: layers.LinkTypeLinuxSLL}, "no kernel filter for link type"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := filterProgram(tt.spec)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "live: ") {
				t.Fatalf("err = %v, want one with %q", err, tt.want)
			}
		})
	}
}
