package tlsdecrypt

import "strings"

// hrrRandom is the ServerHello.random of a HelloRetryRequest (RFC 8446
// 4.1.3): SHA-256 of "HelloRetryRequest".
var hrrRandom = [32]byte{
	0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
	0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
}

// Extension numbers used here.
const (
	extServerName    = 0
	extETM           = 22
	extSessionTicket = 35
	extPreSharedKey  = 41
	extVersions      = 43
)

// Handshake message types.
const (
	hsClientHello = 1
	hsServerHello = 2
	hsNewTicket   = 4
	hsFinished    = 20
	hsKeyUpdate   = 24
)

// reader is a sticky-error reader of TLS vectors: a length larger than
// the bytes left marks it bad and yields zeros from then on.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) take(n int) []byte {
	if r.bad || n > len(r.b) {
		r.bad = true
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) u8() int {
	p := r.take(1)
	if p == nil {
		return 0
	}
	return int(p[0])
}

func (r *reader) u16() int {
	p := r.take(2)
	if p == nil {
		return 0
	}
	return int(p[0])<<8 | int(p[1])
}

func (r *reader) vec8() []byte  { return r.take(r.u8()) }
func (r *reader) vec16() []byte { return r.take(r.u16()) }

// clientHello holds what the decrypter needs of a ClientHello.
type clientHello struct {
	random    [32]byte
	sessionID []byte
	ticket    []byte
	sni       string
	maxVer    uint16
	nSuites   int
	etm       bool
}

func parseClientHello(b []byte) (clientHello, bool) {
	var ch clientHello
	r := reader{b: b}
	ch.maxVer = uint16(r.u16())
	copy(ch.random[:], r.take(32))
	ch.sessionID = clone(r.vec8())
	ch.nSuites = len(r.vec16()) / 2
	r.vec8() // compression methods
	if r.bad {
		return ch, false
	}
	ext := reader{b: r.vec16()}
	for len(ext.b) > 0 && !ext.bad {
		typ := ext.u16()
		e := reader{b: ext.vec16()}
		switch typ {
		case extServerName:
			list := reader{b: e.vec16()}
			for len(list.b) > 0 && !list.bad {
				kind := list.u8()
				name := list.vec16()
				if kind == 0 && ch.sni == "" {
					ch.sni = cleanName(name)
				}
			}
		case extETM:
			ch.etm = true
		case extSessionTicket:
			ch.ticket = clone(e.b)
		case extVersions:
			vs := reader{b: e.vec8()}
			for len(vs.b) > 1 {
				if v := uint16(vs.u16()); v > ch.maxVer && v&0x0f0f != 0x0a0a { // not GREASE
					ch.maxVer = v
				}
			}
		}
	}
	return ch, !ext.bad
}

// serverHello holds what the decrypter needs of a ServerHello or
// HelloRetryRequest.
type serverHello struct {
	random    [32]byte
	sessionID []byte
	version   uint16
	suite     uint16
	etm       bool
	psk       bool
}

func parseServerHello(b []byte) (serverHello, bool) {
	var sh serverHello
	r := reader{b: b}
	sh.version = uint16(r.u16())
	copy(sh.random[:], r.take(32))
	sh.sessionID = clone(r.vec8())
	sh.suite = uint16(r.u16())
	r.u8() // compression method
	if r.bad {
		return sh, false
	}
	if len(r.b) == 0 {
		return sh, true // no extensions
	}
	ext := reader{b: r.vec16()}
	for len(ext.b) > 0 && !ext.bad {
		typ := ext.u16()
		e := reader{b: ext.vec16()}
		switch typ {
		case extETM:
			sh.etm = true
		case extPreSharedKey:
			sh.psk = true
		case extVersions:
			if v := e.u16(); !e.bad {
				sh.version = uint16(v)
			}
		}
	}
	return sh, !ext.bad
}

// parseTicket returns the ticket of a TLS 1.2 NewSessionTicket (RFC 5077).
func parseTicket(b []byte) []byte {
	r := reader{b: b}
	r.take(4) // lifetime hint
	t := r.vec16()
	if r.bad || len(t) == 0 {
		return nil
	}
	return clone(t)
}

func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

// cleanName keeps a server name printable: it comes from the network.
func cleanName(b []byte) string {
	if len(b) > 255 {
		b = b[:255]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x21 || r > 0x7e {
			return '?'
		}
		return r
	}, string(b))
}

// hsReader cuts the handshake messages of one direction out of the
// fragments of its handshake records, keeping the bodies of the messages
// the decrypter reads (bounded) and skipping the others.
type hsReader struct {
	hdr  [4]byte
	hn   int
	need int
	keep bool
	body []byte
}

const maxHandshakeKeep = 64 << 10

func keepType(t byte) bool {
	return t == hsClientHello || t == hsServerHello || t == hsNewTicket || t == hsKeyUpdate
}

func (r *hsReader) reset() { r.hn, r.need, r.body = 0, 0, r.body[:0] }

// feed hands fn each message completed by p; body is nil for a message not
// kept (a type not read, or too large), valid only during the call.
func (r *hsReader) feed(p []byte, fn func(typ byte, body []byte)) {
	for len(p) > 0 {
		if r.hn < 4 {
			n := copy(r.hdr[r.hn:], p)
			r.hn += n
			p = p[n:]
			if r.hn < 4 {
				return
			}
			r.need = int(r.hdr[1])<<16 | int(r.hdr[2])<<8 | int(r.hdr[3])
			r.keep = keepType(r.hdr[0]) && r.need <= maxHandshakeKeep
			r.body = r.body[:0]
			if r.need == 0 {
				r.emit(fn)
				continue
			}
		}
		n := min(r.need, len(p))
		if r.keep {
			r.body = append(r.body, p[:n]...)
		}
		r.need -= n
		p = p[n:]
		if r.need == 0 {
			r.emit(fn)
		}
	}
}

func (r *hsReader) emit(fn func(typ byte, body []byte)) {
	var body []byte
	if r.keep {
		body = r.body
		if body == nil {
			body = []byte{}
		}
	}
	r.hn = 0
	fn(r.hdr[0], body)
}
