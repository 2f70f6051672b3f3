package hostile

import "encoding/binary"

// endpoint is one side of a TCP connection.
type endpoint struct {
	mac  [6]byte
	ip   [4]byte
	port uint16
}

// TCP flag bits.
const (
	flagFIN = 0x01
	flagSYN = 0x02
	flagRST = 0x04
	flagPSH = 0x08
	flagACK = 0x10
)

// Directions of a conn.
const (
	toBroker = 0
	toClient = 1
)

// conn is one TCP connection: its ends and the next sequence number each
// side sends. ends[0] is the client, ends[1] the broker.
type conn struct {
	ends [2]endpoint
	next [2]uint32
	ipID [2]uint16
	win  uint16
	// ifIndex and outgoing say, for SLL2 captures, which interface each
	// direction was seen on and whether the capturing host sent it.
	ifIndex  [2]uint32
	outgoing [2]bool
}

// ipv4 returns the address 10.a.b.c style from four bytes.
func ipv4(a, b, c, d byte) [4]byte { return [4]byte{a, b, c, d} }

// macOf derives a locally administered MAC from an IP address.
func macOf(ip [4]byte) [6]byte { return [6]byte{0x02, 0x42, ip[0], ip[1], ip[2], ip[3]} }

// newConn makes a connection from client to broker, with initial sequence
// numbers drawn by the caller.
func newConn(cli, brk [4]byte, cport, bport uint16, isn0, isn1 uint32) *conn {
	return &conn{
		ends: [2]endpoint{{mac: macOf(cli), ip: cli, port: cport}, {mac: macOf(brk), ip: brk, port: bport}},
		next: [2]uint32{isn0, isn1},
		win:  65535,
	}
}

// linkLen is the link header length of the capture's link type.
func (c *capWriter) linkLen() int {
	if c.f.link == linkSLL2 {
		return 20
	}
	return 14
}

// segment writes one TCP segment from side dir of cn with the given
// sequence number, flags, options and payload (read from src, n bytes),
// with correct IPv4 and TCP checksums. It does not move cn's next sequence
// numbers: send and the handshake do.
func (c *capWriter) segment(cn *conn, dir int, seq uint32, flags uint8, opts []byte, src source, n int) {
	if c.err != nil {
		return
	}
	h := c.headers(cn, dir, seq, flags, opts, int64(n))
	if src != nil {
		src.fill(c.frame[h : h+n])
	}
	c.tcpChecksum(h, n)
	c.packet(c.frame[:h+n])
}

// hugeSegment writes one segment whose payload is n zero bytes, streamed:
// a packet no IPv4 length can say (its total length is written as 0, as
// captures of TCP segmentation offload show), of hundreds of MiB.
func (c *capWriter) hugeSegment(cn *conn, dir int, n int64) {
	if c.err != nil {
		return
	}
	h := c.headers(cn, dir, cn.next[dir], flagACK|flagPSH, nil, n)
	// Over the headers only: no checksum can be right for a segment no
	// IPv4 length describes (offload leaves it to the NIC).
	c.tcpChecksum(h, 0)
	cn.next[dir] += uint32(n)
	c.streamPacket(c.frame[:h], &zeroSrc{n: n})
}

// headers writes the link, IPv4 and TCP headers of a segment of n payload
// bytes into the frame buffer and returns their length; the TCP checksum
// is left to tcpChecksum.
func (c *capWriter) headers(cn *conn, dir int, seq uint32, flags uint8, opts []byte, n int64) int {
	be := binary.BigEndian
	from, to := &cn.ends[dir], &cn.ends[1-dir]
	f := c.frame
	l := c.linkLen()
	if c.f.link == linkSLL2 {
		be.PutUint16(f[0:], 0x0800)
		be.PutUint16(f[2:], 0)
		be.PutUint32(f[4:], cn.ifIndex[dir])
		be.PutUint16(f[8:], 1) // ARPHRD_ETHER
		f[10] = 0              // PACKET_HOST
		if cn.outgoing[dir] {
			f[10] = 4 // PACKET_OUTGOING
		}
		f[11] = 6
		copy(f[12:18], from.mac[:])
		f[18], f[19] = 0, 0
	} else {
		copy(f[0:6], to.mac[:])
		copy(f[6:12], from.mac[:])
		be.PutUint16(f[12:], 0x0800)
	}
	ip := f[l : l+20]
	tcpLen := 20 + len(opts)
	total := 20 + int64(tcpLen) + n
	if total > 0xffff {
		total = 0
	}
	ip[0] = 0x45
	ip[1] = 0
	be.PutUint16(ip[2:], uint16(total))
	be.PutUint16(ip[4:], cn.ipID[dir])
	cn.ipID[dir]++
	be.PutUint16(ip[6:], 0x4000) // don't fragment
	ip[8] = 64
	ip[9] = 6
	be.PutUint16(ip[10:], 0)
	copy(ip[12:16], from.ip[:])
	copy(ip[16:20], to.ip[:])
	be.PutUint16(ip[10:], ^fold(sum(0, ip)))

	t := f[l+20 : l+20+tcpLen]
	be.PutUint16(t[0:], from.port)
	be.PutUint16(t[2:], to.port)
	be.PutUint32(t[4:], seq)
	ack := uint32(0)
	if flags&flagACK != 0 {
		ack = cn.next[1-dir]
	}
	be.PutUint32(t[8:], ack)
	t[12] = byte(tcpLen/4) << 4
	t[13] = flags
	be.PutUint16(t[14:], cn.win)
	be.PutUint16(t[16:], 0)
	be.PutUint16(t[18:], 0)
	copy(t[20:], opts)
	return l + 20 + tcpLen
}

// tcpChecksum sets the TCP checksum of the segment in the frame buffer
// whose headers end at h and whose payload is the n bytes after.
func (c *capWriter) tcpChecksum(h, n int) {
	l := c.linkLen()
	f := c.frame
	s := sum(0, f[l+12:l+20]) // pseudo-header: addresses,
	tcpLen := h - (l + 20) + n
	s += 6 + uint64(uint16(tcpLen)) // protocol, TCP length
	s = sum(s, f[l+20:h+n])
	binary.BigEndian.PutUint16(f[l+36:], ^fold(s))
}

// sum adds b to a ones-complement sum as big-endian 16-bit words (an odd
// last byte padded with zero), four bytes at a time.
func sum(s uint64, b []byte) uint64 {
	for len(b) >= 8 {
		s += uint64(binary.BigEndian.Uint32(b)) + uint64(binary.BigEndian.Uint32(b[4:]))
		b = b[8:]
	}
	for len(b) >= 2 {
		s += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint64(b[0]) << 8
	}
	return s
}

// fold folds a ones-complement sum to 16 bits.
func fold(s uint64) uint16 {
	for s>>16 != 0 {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

// synOpts are the options of a SYN: MSS 65495, NOP, window scale wscale.
func synOpts(wscale byte) []byte {
	return []byte{2, 4, 0xff, 0xd7, 1, 3, 3, wscale}
}

// handshake writes SYN, SYN-ACK and ACK.
func (c *capWriter) handshake(cn *conn, wscale byte) {
	opts := synOpts(wscale)
	c.segment(cn, toBroker, cn.next[0], flagSYN, opts, nil, 0)
	cn.next[0]++
	c.segment(cn, toClient, cn.next[1], flagSYN|flagACK, opts, nil, 0)
	cn.next[1]++
	c.segment(cn, toBroker, cn.next[0], flagACK, nil, nil, 0)
}

// send writes src from side dir as segments of at most mss bytes, the
// last with PSH; with ackAfter the peer acknowledges it all.
func (c *capWriter) send(cn *conn, dir int, src source, ackAfter bool) {
	for src.left() > 0 && c.err == nil {
		n := int(min(int64(c.mss), src.left()))
		flags := uint8(flagACK)
		if int64(n) == src.left() {
			flags |= flagPSH
		}
		c.segment(cn, dir, cn.next[dir], flags, nil, src, n)
		cn.next[dir] += uint32(n)
	}
	if ackAfter {
		c.ack(cn, 1-dir)
	}
}

// sendBytes is send of an in-memory frame.
func (c *capWriter) sendBytes(cn *conn, dir int, b []byte, ackAfter bool) {
	c.send(cn, dir, &bytesSrc{b: b}, ackAfter)
}

// ack writes a pure ACK from side dir.
func (c *capWriter) ack(cn *conn, dir int) {
	c.segment(cn, dir, cn.next[dir], flagACK, nil, nil, 0)
}

// fin closes cn: FIN from the client, FIN-ACK, ACK.
func (c *capWriter) fin(cn *conn) {
	c.segment(cn, toBroker, cn.next[0], flagFIN|flagACK, nil, nil, 0)
	cn.next[0]++
	c.segment(cn, toClient, cn.next[1], flagFIN|flagACK, nil, nil, 0)
	cn.next[1]++
	c.segment(cn, toBroker, cn.next[0], flagACK, nil, nil, 0)
}
