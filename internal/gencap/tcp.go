package gencap

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// endpoint is one side of a TCP connection.
type endpoint struct {
	mac  net.HardwareAddr
	addr netip.Addr
	port uint16
}

func (e endpoint) String() string { return netip.AddrPortFrom(e.addr, e.port).String() }

// TCP flag bits as they sit in the header's flag byte.
const (
	flagFIN uint8 = 0x01
	flagSYN uint8 = 0x02
	flagPSH uint8 = 0x08
	flagACK uint8 = 0x10
)

// segment is one packet waiting to be written: everything the headers need,
// and a payload that aliases a frame built for this segment's connection
// only (frames are never reused, so no copy).
type segment struct {
	tsMicros int64
	order    uint64 // tie-break: the order segments were scheduled in
	src, dst *endpoint
	seq, ack uint32
	flags    uint8
	ipID     uint16
	payload  []byte
	// keyLog, when set, makes this no packet but a pcapng Decryption
	// Secrets Block holding it (Config.Secrets), written in its place.
	keyLog []byte
}

// wireLen is the length of the segment's frame on the wire.
func (s *segment) wireLen() int { return 14 + 20 + 20 + len(s.payload) }

// serializer turns segments into Ethernet/IPv4/TCP frames with gopacket,
// reusing its layers and buffer.
type serializer struct {
	buf  gopacket.SerializeBuffer
	opts gopacket.SerializeOptions
	eth  layers.Ethernet
	ip   layers.IPv4
	tcp  layers.TCP
}

func newSerializer() *serializer {
	return &serializer{
		buf:  gopacket.NewSerializeBufferExpectedSize(54, 65536),
		opts: gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
	}
}

// serialize returns the frame bytes of s, valid until the next call.
func (z *serializer) serialize(s *segment) ([]byte, error) {
	z.eth = layers.Ethernet{SrcMAC: s.src.mac, DstMAC: s.dst.mac, EthernetType: layers.EthernetTypeIPv4}
	z.ip = layers.IPv4{
		Version: 4, IHL: 5, TTL: 64, Id: s.ipID, Flags: layers.IPv4DontFragment,
		Protocol: layers.IPProtocolTCP,
		SrcIP:    s.src.addr.AsSlice(), DstIP: s.dst.addr.AsSlice(),
	}
	z.tcp = layers.TCP{
		SrcPort: layers.TCPPort(s.src.port), DstPort: layers.TCPPort(s.dst.port),
		Seq: s.seq, Ack: s.ack, DataOffset: 5, Window: 65535,
		FIN: s.flags&flagFIN != 0, SYN: s.flags&flagSYN != 0,
		PSH: s.flags&flagPSH != 0, ACK: s.flags&flagACK != 0,
	}
	if err := z.tcp.SetNetworkLayerForChecksum(&z.ip); err != nil {
		return nil, fmt.Errorf("gencap: tcp checksum: %w", err)
	}
	if err := gopacket.SerializeLayers(z.buf, z.opts, &z.eth, &z.ip, &z.tcp, gopacket.Payload(s.payload)); err != nil {
		return nil, fmt.Errorf("gencap: serialize %s->%s seq %d: %w", s.src, s.dst, s.seq, err)
	}
	return z.buf.Bytes(), nil
}
