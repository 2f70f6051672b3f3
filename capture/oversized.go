package capture

import (
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"time"
)

// Packets over a bound. A packet record says how many bytes it holds, and
// pcapgo reads them whole into one buffer: a record of 2 GiB (one that
// claims it, with a snap length of 2^32-1) would be allocated whole. So the
// Source's tap (secretsTap), which sees the capture's bytes before pcapgo,
// follows the records of a pcap and the blocks of a pcapng; at a packet
// whose captured bytes exceed MaxPacketBytes it stops the stream
// (errOversized) until Source.Next has skipped the packet's bytes in
// chunks. Source.Next then returns the packet with no Data and CI.Length its
// captured length: an Assembler counts it as Oversized and goes on (the
// connection's bytes in it are a hole). If the input ends inside such a
// packet, the Source fails with an InputError, as for any cut record.

// MaxPacketBytes bounds the captured bytes of one packet that a Source
// reads. Real frames are far smaller: 64 KiB for TSO/GRO aggregates, the
// 262144 bytes of tcpdump's default snap length on a Linux loopback, 512
// KiB for BIG TCP's default; 4 MiB leaves room for all of them and bounds
// the memory a hostile capture can ask for.
const MaxPacketBytes = 4 << 20

// ngBlockSlack is what a pcapng packet block may hold beside its packet
// bytes (header, padding, options) and still be read: the tap bounds a
// block by its length, MaxPacketBytes+ngBlockSlack.
const ngBlockSlack = 64 << 10

// pcapRecordHeader is the size of a pcap record header; pcapFileHeader of
// the file header.
const (
	pcapRecordHeader = 16
	pcapFileHeader   = 24
)

// errOversized stops the stream under pcapgo at a packet over the bound.
var errOversized = errors.New("capture: packet over the bound")

// oversized is the packet the tap stopped the stream at.
type oversized struct {
	on    bool
	n     int64     // its captured bytes (pcapng: its block's)
	ts    time.Time // pcap: its timestamp
	hasTS bool
}

// isPacketBlock reports whether a pcapng block type holds a packet
// (Enhanced, Simple, or the obsolete Packet Block).
func isPacketBlock(typ uint32) bool { return typ == 6 || typ == 3 || typ == 2 }

// startPcap reports whether the first bytes of the stream, in hdr, open a
// pcap; the tap then follows its records.
func (t *secretsTap) startPcap(magic uint32) bool {
	switch magic {
	case magicPcapMicroLE, magicPcapNanoLE:
		t.order = binary.LittleEndian
	case magicPcapMicroBE, magicPcapNanoBE:
		t.order = binary.BigEndian
	default:
		return false
	}
	t.nano = magic == magicPcapNanoLE || magic == magicPcapNanoBE
	t.state = tapPcap
	t.left = pcapFileHeader - 12 // the rest of the file header
	return true
}

// startRecord reads a pcap record header, whole in hdr.
func (t *secretsTap) startRecord() {
	n := int64(t.order.Uint32(t.hdr[8:]))
	t.left = n
	if n <= MaxPacketBytes {
		return
	}
	frac := int64(t.order.Uint32(t.hdr[4:]))
	if !t.nano {
		frac *= 1000
	}
	t.over = oversized{on: true, n: n, ts: time.Unix(int64(t.order.Uint32(t.hdr[0:])), frac).UTC(), hasTS: true}
}

// overBlock stops the stream at a pcapng packet block of length bytes.
func (t *secretsTap) overBlock(length int64) {
	t.over = oversized{on: true, n: length}
	t.keep = false
}

// isOversized reports whether err is the tap's stop, as pcapgo passed it on
// (some of its errors keep only the text).
func isOversized(err error) bool {
	return errors.Is(err, errOversized) || strings.Contains(err.Error(), errOversized.Error())
}

// skip discards the rest of the packet the stream stopped at, reading it in
// chunks, and lets the stream go on.
func (t *secretsTap) skip() error {
	var buf [32 << 10]byte
	for t.left > 0 {
		k, err := t.r.Read(buf[:min(int64(len(buf)), t.left)])
		t.left -= int64(k)
		if t.left > 0 && err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	t.over.on = false
	t.hn = 0
	return nil
}
