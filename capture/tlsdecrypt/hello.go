package tlsdecrypt

import (
	"strings"

	"golang.org/x/crypto/cryptobyte"
)

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

// extensions hands fn each extension of a hello's extension block (the
// bytes after its fixed fields), and reports whether the block parsed.
func extensions(s cryptobyte.String, fn func(typ uint16, body cryptobyte.String)) bool {
	if s.Empty() {
		return true // no extensions
	}
	var exts cryptobyte.String
	if !s.ReadUint16LengthPrefixed(&exts) {
		return false
	}
	for !exts.Empty() {
		var typ uint16
		var body cryptobyte.String
		if !exts.ReadUint16(&typ) || !exts.ReadUint16LengthPrefixed(&body) {
			return false
		}
		fn(typ, body)
	}
	return true
}

func parseClientHello(b []byte) (clientHello, bool) {
	var (
		ch                        clientHello
		s                         = cryptobyte.String(b)
		random, sid, suites, comp cryptobyte.String
	)
	if !s.ReadUint16(&ch.maxVer) || !s.ReadBytes((*[]byte)(&random), 32) ||
		!s.ReadUint8LengthPrefixed(&sid) || !s.ReadUint16LengthPrefixed(&suites) ||
		!s.ReadUint8LengthPrefixed(&comp) {
		return ch, false
	}
	copy(ch.random[:], random)
	ch.sessionID, ch.nSuites = clone(sid), len(suites)/2
	ok := extensions(s, func(typ uint16, e cryptobyte.String) {
		switch typ {
		case extServerName:
			var list cryptobyte.String
			if !e.ReadUint16LengthPrefixed(&list) {
				return
			}
			for !list.Empty() {
				var kind uint8
				var name cryptobyte.String
				if !list.ReadUint8(&kind) || !list.ReadUint16LengthPrefixed(&name) {
					return
				}
				if kind == 0 && ch.sni == "" {
					ch.sni = cleanName(name)
				}
			}
		case extETM:
			ch.etm = true
		case extSessionTicket:
			ch.ticket = clone(e)
		case extVersions:
			var vs cryptobyte.String
			if !e.ReadUint8LengthPrefixed(&vs) {
				return
			}
			var v uint16
			for vs.ReadUint16(&v) {
				if v > ch.maxVer && v&0x0f0f != 0x0a0a { // not GREASE
					ch.maxVer = v
				}
			}
		}
	})
	return ch, ok
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
	var (
		sh          serverHello
		s           = cryptobyte.String(b)
		random, sid cryptobyte.String
		comp        uint8
	)
	if !s.ReadUint16(&sh.version) || !s.ReadBytes((*[]byte)(&random), 32) ||
		!s.ReadUint8LengthPrefixed(&sid) || !s.ReadUint16(&sh.suite) || !s.ReadUint8(&comp) {
		return sh, false
	}
	copy(sh.random[:], random)
	sh.sessionID = clone(sid)
	ok := extensions(s, func(typ uint16, e cryptobyte.String) {
		switch typ {
		case extETM:
			sh.etm = true
		case extPreSharedKey:
			sh.psk = true
		case extVersions:
			var v uint16
			if e.ReadUint16(&v) {
				sh.version = v
			}
		}
	})
	return sh, ok
}

// parseTicket returns the ticket of a TLS 1.2 NewSessionTicket (RFC 5077).
func parseTicket(b []byte) []byte {
	var (
		s    = cryptobyte.String(b)
		hint uint32
		t    cryptobyte.String
	)
	if !s.ReadUint32(&hint) || !s.ReadUint16LengthPrefixed(&t) || t.Empty() {
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
