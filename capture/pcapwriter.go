package capture

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// packetWriter writes packets to one file: a pcap when they are all of one
// link type, else a pcapng with one interface per link type (a pcap holds
// one link type; converting frames between link types would invent bytes
// that were never captured). Timestamps are written in nanoseconds.
type packetWriter struct {
	bw   *bufio.Writer
	pw   *pcapgo.Writer // a pcap of link
	link layers.LinkType
	nw   *pcapgo.NgWriter // else a pcapng of these interfaces
	ifs  map[layers.LinkType]int
}

// newPacketWriter writes the file header for packets of the link types
// links (at least one) and at most snap bytes each. With keylog (NSS key
// log text) the file is a pcapng that carries it in a Decryption Secrets
// Block before any packet, so that Wireshark and kdupcap decrypt its TLS
// connections with no other file.
func newPacketWriter(w io.Writer, links []layers.LinkType, snap uint32, keylog []byte) (*packetWriter, error) {
	p := &packetWriter{link: links[0]}
	if len(links) == 1 && len(keylog) == 0 {
		p.bw = bufio.NewWriter(w)
		p.pw = pcapgo.NewWriterNanos(p.bw)
		if err := p.pw.WriteFileHeader(snap, p.link); err != nil {
			return nil, fmt.Errorf("writing pcap header: %w", err)
		}
		return p, nil
	}
	iface := func(link layers.LinkType) pcapgo.NgInterface {
		return pcapgo.NgInterface{Name: fmt.Sprintf("link%d", link), LinkType: link, TimestampResolution: 9, SnapLength: snap}
	}
	opts := pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: "kdupcap"}}
	nw, err := pcapgo.NewNgWriterInterface(w, iface(links[0]), opts)
	if err != nil {
		return nil, fmt.Errorf("writing pcapng header: %w", err)
	}
	p.nw, p.ifs = nw, map[layers.LinkType]int{links[0]: 0}
	for _, l := range links[1:] {
		if _, ok := p.ifs[l]; ok {
			continue
		}
		id, err := nw.AddInterface(iface(l))
		if err != nil {
			return nil, fmt.Errorf("writing pcapng interface: %w", err)
		}
		p.ifs[l] = id
	}
	if len(keylog) > 0 {
		// NgWriter writes little-endian blocks and has no DSB of its own:
		// the block goes after its header, before the first packet.
		if err := nw.Flush(); err != nil {
			return nil, fmt.Errorf("writing pcapng header: %w", err)
		}
		if _, err := w.Write(secretsBlock(keylog)); err != nil {
			return nil, fmt.Errorf("writing pcapng secrets: %w", err)
		}
	}
	return p, nil
}

// secretsBlock is a little-endian pcapng Decryption Secrets Block holding
// the TLS key log keylog.
func secretsBlock(keylog []byte) []byte {
	pad := (4 - len(keylog)%4) % 4
	n := uint32(12 + 8 + len(keylog) + pad)
	b := binary.LittleEndian.AppendUint32(nil, blockDSB)
	b = binary.LittleEndian.AppendUint32(b, n)
	b = binary.LittleEndian.AppendUint32(b, secretsTLSKeyLg)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(keylog)))
	b = append(b, keylog...)
	b = append(b, make([]byte, pad)...)
	return binary.LittleEndian.AppendUint32(b, n)
}

// write writes one packet of link type link; false when the file has no
// such link type (the packet is not written).
func (p *packetWriter) write(ci gopacket.CaptureInfo, data []byte, link layers.LinkType) (bool, error) {
	ci.AncillaryData = nil
	if p.pw != nil {
		if link != p.link {
			return false, nil
		}
		return true, p.pw.WritePacket(ci, data)
	}
	id, ok := p.ifs[link]
	if !ok {
		return false, nil
	}
	ci.InterfaceIndex = id
	return true, p.nw.WritePacket(ci, data)
}

// flush writes out what is buffered.
func (p *packetWriter) flush() error {
	if p.pw != nil {
		return p.bw.Flush()
	}
	return p.nw.Flush()
}
