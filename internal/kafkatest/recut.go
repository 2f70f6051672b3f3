package kafkatest

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Recut copies the pcap read from src to dst with every IPv4 TCP segment
// that does not fit in an IP packet of mtu bytes cut into segments that do,
// as a sender with that MTU would have sent the same bytes: the same
// Ethernet header, an IP ID per piece, sequence numbers advanced, PSH and
// FIN on the last piece only, IP and TCP checksums computed again, every
// piece at the packet's timestamp. Other packets are copied unchanged. It
// takes an Ethernet pcap (tcpdump -i lo writes one) and returns the packets
// written; snap-length-cut packets are refused.
func Recut(dst io.Writer, src io.Reader, mtu int) (int64, error) {
	r, err := pcapgo.NewReader(bufio.NewReaderSize(src, 1<<20))
	if err != nil {
		return 0, fmt.Errorf("kafkatest: recut: %w", err)
	}
	if r.LinkType() != layers.LinkTypeEthernet {
		return 0, fmt.Errorf("kafkatest: recut: link type %v, want Ethernet", r.LinkType())
	}
	bw := bufio.NewWriterSize(dst, 1<<20)
	w := pcapgo.NewWriterNanos(bw)
	if r.Resolution() != gopacket.TimestampResolutionNanosecond {
		w = pcapgo.NewWriter(bw)
	}
	if err := w.WriteFileHeader(r.Snaplen(), r.LinkType()); err != nil {
		return 0, fmt.Errorf("kafkatest: recut: %w", err)
	}
	var (
		n   int64
		buf []byte
	)
	for {
		data, ci, err := r.ZeroCopyReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, fmt.Errorf("kafkatest: recut: packet %d: %w", n+1, err)
		}
		if ci.CaptureLength != ci.Length {
			return n, fmt.Errorf("kafkatest: recut: packet %d cut at %d of %d bytes", n+1, ci.CaptureLength, ci.Length)
		}
		err = recutPacket(data, mtu, &buf, func(p []byte) error {
			ci.CaptureLength, ci.Length = len(p), len(p)
			n++
			return w.WritePacket(ci, p)
		})
		if err != nil {
			return n, fmt.Errorf("kafkatest: recut: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("kafkatest: recut: %w", err)
	}
	return n, nil
}

// Header sizes and offsets recutPacket uses.
const (
	ethHeader  = 14
	ipv4Proto  = 9  // offset of the protocol in an IPv4 header
	tcpFlags   = 13 // offset of the flags in a TCP header
	tcpFlagFIN = 0x01
	tcpFlagPSH = 0x08
)

// recutPacket hands emit the frame data, or its pieces when it is an IPv4
// TCP segment over mtu; buf is scratch space for a piece.
func recutPacket(data []byte, mtu int, buf *[]byte, emit func([]byte) error) error {
	if len(data) < ethHeader+20 || binary.BigEndian.Uint16(data[12:]) != uint16(layers.EthernetTypeIPv4) {
		return emit(data)
	}
	ip := data[ethHeader:]
	ihl := int(ip[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(ip[2:]))
	if ip[0]>>4 != 4 || ip[ipv4Proto] != 6 || ihl < 20 || total > len(ip) || total <= mtu || len(ip) < ihl+20 {
		return emit(data)
	}
	tcp := ip[ihl:total]
	thl := int(tcp[12]>>4) * 4
	if thl < 20 || len(tcp) < thl {
		return emit(data)
	}
	payload := tcp[thl:]
	mss := mtu - ihl - thl
	if mss <= 0 {
		return fmt.Errorf("MTU %d leaves no room for data after %d header bytes", mtu, ihl+thl)
	}
	seq := binary.BigEndian.Uint32(tcp[4:])
	id := binary.BigEndian.Uint16(ip[4:])
	for off := 0; off < len(payload); off += mss {
		chunk := payload[off:min(off+mss, len(payload))]
		last := off+len(chunk) == len(payload)
		p := append((*buf)[:0], data[:ethHeader+ihl+thl]...)
		p = append(p, chunk...)
		*buf = p
		pip, ptcp := p[ethHeader:], p[ethHeader+ihl:]
		binary.BigEndian.PutUint16(pip[2:], uint16(ihl+thl+len(chunk)))
		binary.BigEndian.PutUint16(pip[4:], id+uint16(off/mss))
		binary.BigEndian.PutUint16(pip[10:], 0)
		binary.BigEndian.PutUint16(pip[10:], checksum(0, pip[:ihl]))
		binary.BigEndian.PutUint32(ptcp[4:], seq+uint32(off))
		if !last {
			ptcp[tcpFlags] &^= tcpFlagFIN | tcpFlagPSH
		}
		binary.BigEndian.PutUint16(ptcp[16:], 0)
		pseudo := uint32(binary.BigEndian.Uint16(pip[12:])) + uint32(binary.BigEndian.Uint16(pip[14:])) +
			uint32(binary.BigEndian.Uint16(pip[16:])) + uint32(binary.BigEndian.Uint16(pip[18:])) + 6 + uint32(len(ptcp))
		binary.BigEndian.PutUint16(ptcp[16:], checksum(pseudo, ptcp))
		if err := emit(p); err != nil {
			return err
		}
	}
	return nil
}

// checksum is the Internet checksum of b, with sum (a partial sum, such as
// a pseudo-header's) added.
func checksum(sum uint32, b []byte) uint16 {
	for len(b) >= 2 {
		sum += uint32(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
