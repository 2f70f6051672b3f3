package capture

import (
	"errors"
	"io"
	"strings"
)

// Packets over a bound. A packet record says how many bytes it holds, and
// pcapgo reads them whole into one buffer: a record of 2 GiB (one that
// claims it, with a snap length of 2^32-1) would be allocated whole. A
// pcap's records are read by Source itself (pcap.go), which skips the bytes
// of a record over MaxPacketBytes through its read buffer. For a pcapng, the
// Source's tap (secretsTap), which sees the capture's bytes before pcapgo,
// follows its blocks; at a packet block whose length exceeds the bound it
// stops the stream (errOversized) until Source.Next has skipped the block's
// bytes in chunks. Either way Source.Next returns the packet with no Data
// and CI.Length its captured length (a pcapng's: its block's): an Assembler
// counts it as Oversized and goes on (the connection's bytes in it are a
// hole). If the input ends inside such a packet, the Source fails with an
// InputError, as for any cut record.

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

// errOversized stops the stream under pcapgo at a packet over the bound.
var errOversized = errors.New("capture: packet over the bound")

// oversized is the packet block the tap stopped the stream at.
type oversized struct {
	on bool
	n  int64 // its block's bytes
}

// isPacketBlock reports whether a pcapng block type holds a packet
// (Enhanced, Simple, or the obsolete Packet Block).
func isPacketBlock(typ uint32) bool { return typ == blockEPB || typ == blockSPB || typ == blockPB }

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
