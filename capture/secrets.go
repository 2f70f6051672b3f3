package capture

import (
	"encoding/binary"
	"io"
)

// pcapng Decryption Secrets Blocks (block type 0x0000000A, pcapng spec
// 4.7) carry the key log of the TLS connections a capture holds, as
// `editcap --inject-secrets tls,KEYLOG in.pcap out.pcapng` writes it: a
// capture that carries its keys is decrypted with no flag. pcapgo reads
// such blocks but keeps them to itself, so a Source watches the pcapng
// stream's block structure as it passes to pcapgo (secretsTap): block
// headers are read, every other block's body is skipped by count without a
// copy, and the body of a TLS secrets block is kept, within a bound. The
// same tap stops the stream before a packet block over MaxPacketBytes
// (oversized.go). A pcap has no such blocks, and Source reads its records
// itself (pcap.go): the tap turns off at a pcap's first bytes, and a pcap
// not compressed is read with no tap at all.

// The secrets type of a TLS key log (block types: pcapng.go).
const secretsTLSKeyLg = 0x544c534b // "TLSK": an NSS key log

// MaxSecretsBytes bounds the secrets a Source keeps from its Decryption
// Secrets Blocks; a block beyond it is dropped and counted.
const MaxSecretsBytes = 16 << 20

// secretsTap is the io.Reader between a Source's decompressed stream and
// pcapgo: it passes every byte on unchanged and, in a pcapng stream, keeps
// the TLS key logs of its Decryption Secrets Blocks.
type secretsTap struct {
	r      io.Reader
	state  uint8     // tapUndecided, tapOff, tapOn
	order  bigEndian // the section's byte order
	hdr    [12]byte  // the block header being read (type, length, 4 more)
	hn     int
	left   int64  // bytes of the current block after hdr still to come
	body   []byte // a DSB's bytes after hdr, being kept
	keep   bool
	kept   [][]byte // key logs found, in file order
	total  int      // their bytes
	drops  int      // blocks dropped by MaxSecretsBytes
	pulled int      // key logs handed out (Source.newSecrets)

	over oversized
}

const (
	tapUndecided = iota
	tapOff
	tapOn // pcapng
)

func (t *secretsTap) Read(p []byte) (int, error) {
	if t.over.on {
		return 0, errOversized // until Source skips the packet
	}
	n, err := t.r.Read(p)
	if n > 0 && t.state != tapOff {
		t.scan(p[:n])
	}
	return n, err
}

// scan follows the block structure over b, the next bytes of the stream.
func (t *secretsTap) scan(b []byte) {
	for len(b) > 0 && t.state != tapOff {
		if t.left > 0 {
			k := int(min(t.left, int64(len(b))))
			if t.keep {
				t.body = append(t.body, b[:k]...)
			}
			t.left -= int64(k)
			b = b[k:]
			if t.left == 0 {
				t.endBlock()
			}
			continue
		}
		k := copy(t.hdr[t.hn:], b)
		t.hn += k
		b = b[k:]
		if t.hn < len(t.hdr) {
			continue
		}
		t.hn = 0
		t.startBlock()
	}
}

// startBlock reads the header of a block, whole in hdr.
func (t *secretsTap) startBlock() {
	typ := binary.LittleEndian.Uint32(t.hdr[0:])
	if t.state == tapUndecided {
		if typ != blockSHB {
			t.state = tapOff // a pcap (pcap.go), or not a capture
			return
		}
		t.state = tapOn
	}
	if typ == blockSHB {
		be, ok := shbOrder(t.hdr[:])
		if !ok {
			t.state = tapOff // pcapgo says what is wrong
			return
		}
		t.order = be
	}
	typ = t.order.u32(t.hdr[0:])
	length := t.order.u32(t.hdr[4:])
	if length < 12 || length%4 != 0 {
		t.state = tapOff
		return
	}
	t.left = int64(length) - 12
	if isPacketBlock(typ) && int64(length) > MaxPacketBytes+ngBlockSlack {
		t.overBlock(int64(length))
		return
	}
	t.keep = typ == blockDSB && t.order.u32(t.hdr[8:]) == secretsTLSKeyLg
	if t.keep && t.total+int(t.left) > MaxSecretsBytes {
		t.keep = false
		t.drops++
	}
	t.body = t.body[:0]
	if t.left == 0 {
		t.endBlock()
	}
}

// endBlock keeps the key log of a TLS secrets block read whole.
func (t *secretsTap) endBlock() {
	if !t.keep {
		return
	}
	t.keep = false
	if len(t.body) < 4 {
		return
	}
	n := int64(t.order.u32(t.body))
	if n > int64(len(t.body)-4) {
		return // pcapgo reports the block as malformed
	}
	s := make([]byte, n)
	copy(s, t.body[4:])
	t.kept = append(t.kept, s)
	t.total += len(s)
	if cap(t.body) > 1<<20 {
		t.body = nil
	}
}
