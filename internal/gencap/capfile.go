package gencap

import (
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// The file format: a classic pcap through pcapgo, or with Config.Secrets a
// pcapng written here (gopacket's NgWriter writes no Decryption Secrets
// Block). Both give the exact bytes of every record, so the generator
// knows the file's size before writing it.

// pcapng block and secrets types (pcapng spec 4.1, 4.2, 4.3, 4.7).
const (
	ngBlockSHB     = 0x0A0D0D0A
	ngBlockIDB     = 0x00000001
	ngBlockEPB     = 0x00000006
	ngBlockDSB     = 0x0000000A
	ngByteOrder    = 0x1A2B3C4D
	ngSecretsTLS   = 0x544c534b // "TLSK": an NSS key log
	ngHeaderBytes  = 28 + 20    // SHB and IDB, with no options
	ngLinkEthernet = 1
)

// writeFileHeader writes the pcap or pcapng header and counts its bytes.
func (g *generator) writeFileHeader() error {
	if g.cfg.Secrets {
		g.ng = &ngWriter{w: g.bw}
		if err := g.ng.header(snapLen); err != nil {
			return fmt.Errorf("gencap: write file header: %w", err)
		}
		g.written = ngHeaderBytes
		return nil
	}
	g.pw = pcapgo.NewWriter(g.bw)
	if err := g.pw.WriteFileHeader(snapLen, layers.LinkTypeEthernet); err != nil {
		return fmt.Errorf("gencap: write file header: %w", err)
	}
	g.written = pcapHeaderBytes
	return nil
}

// writePacket writes one frame captured at us (µs since the epoch).
func (g *generator) writePacket(us int64, data []byte) error {
	if g.ng != nil {
		return g.ng.packet(us, data)
	}
	ci := gopacket.CaptureInfo{Timestamp: time.UnixMicro(us).UTC(), CaptureLength: len(data), Length: len(data)}
	return g.pw.WritePacket(ci, data)
}

// packetBytes is the file bytes of a frame of n bytes.
func (g *generator) packetBytes(n int) int64 {
	if g.ng != nil {
		return 32 + pad4(n)
	}
	return int64(recordHeaderSize + n)
}

// fileBytes is the file bytes of a scheduled segment: its frame, or the
// secrets block it stands for.
func (g *generator) fileBytes(s *segment) int64 {
	if s.keyLog != nil {
		return ngSecretsBytes(len(s.keyLog))
	}
	return g.packetBytes(s.wireLen())
}

// ngSecretsBytes is the file bytes of a secrets block of n bytes of key log.
func ngSecretsBytes(n int) int64 { return 20 + pad4(n) }

func pad4(n int) int64 { return int64(n+3) &^ 3 }

// ngWriter writes a little-endian pcapng of one section and one Ethernet
// interface with the default microsecond timestamps.
type ngWriter struct {
	w   io.Writer
	buf []byte
}

func (n *ngWriter) header(snap uint32) error {
	le := binary.LittleEndian
	b := n.buf[:0]
	b = le.AppendUint32(b, ngBlockSHB)
	b = le.AppendUint32(b, 28)
	b = le.AppendUint32(b, ngByteOrder)
	b = le.AppendUint16(b, 1) // version 1.0
	b = le.AppendUint16(b, 0)
	b = le.AppendUint64(b, ^uint64(0)) // section length not given
	b = le.AppendUint32(b, 28)
	b = le.AppendUint32(b, ngBlockIDB)
	b = le.AppendUint32(b, 20)
	b = le.AppendUint16(b, ngLinkEthernet)
	b = le.AppendUint16(b, 0)
	b = le.AppendUint32(b, snap)
	b = le.AppendUint32(b, 20)
	n.buf = b
	_, err := n.w.Write(b)
	return err
}

// packet writes an Enhanced Packet Block on interface 0.
func (n *ngWriter) packet(us int64, data []byte) error {
	le := binary.LittleEndian
	total := uint32(32 + pad4(len(data)))
	b := n.buf[:0]
	b = le.AppendUint32(b, ngBlockEPB)
	b = le.AppendUint32(b, total)
	b = le.AppendUint32(b, 0)
	b = le.AppendUint32(b, uint32(uint64(us)>>32))
	b = le.AppendUint32(b, uint32(us))
	b = le.AppendUint32(b, uint32(len(data)))
	b = le.AppendUint32(b, uint32(len(data)))
	n.buf = b
	if _, err := n.w.Write(b); err != nil {
		return err
	}
	return n.tail(data, total)
}

// secrets writes a Decryption Secrets Block holding the TLS key log kl.
func (n *ngWriter) secrets(kl []byte) error {
	le := binary.LittleEndian
	total := uint32(ngSecretsBytes(len(kl)))
	b := n.buf[:0]
	b = le.AppendUint32(b, ngBlockDSB)
	b = le.AppendUint32(b, total)
	b = le.AppendUint32(b, ngSecretsTLS)
	b = le.AppendUint32(b, uint32(len(kl)))
	n.buf = b
	if _, err := n.w.Write(b); err != nil {
		return err
	}
	return n.tail(kl, total)
}

// tail writes a block's body, its padding and its closing length.
func (n *ngWriter) tail(body []byte, total uint32) error {
	if _, err := n.w.Write(body); err != nil {
		return err
	}
	var zeros [3]byte
	b := append(n.buf[:0], zeros[:pad4(len(body))-int64(len(body))]...)
	b = binary.LittleEndian.AppendUint32(b, total)
	n.buf = b
	_, err := n.w.Write(b)
	return err
}
