package decode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A Kafka frame is an int32 size followed by that many bytes. A request
// frame opens with the request header:
//
//	v0: api_key int16, api_version int16, correlation_id int32
//	v1: + client_id nullable string (int16 length)
//	v2: + tagged fields (flexible versions); client_id keeps its int16 length
//
// Every client sends v1 or v2 (v0 is only ControlledShutdown v0, which no
// client of interest sends), so client_id is always read, as kfake does. A
// response frame opens with the correlation ID, then tagged fields when the
// request was flexible, except for ApiVersions (key 18).

// errShort says a candidate frame start holds too few bytes to decide yet.
var errShort = errors.New("decode: need more bytes")

// minRequestFrame is the smallest request header: key, version,
// correlation ID and a client_id length.
const minRequestFrame = 2 + 2 + 4 + 2

// requestHeader is a parsed request header. clientID aliases the frame.
type requestHeader struct {
	key, version int16
	corr         int32
	clientID     []byte
	nullClientID bool
	flexible     bool
	size         int // header bytes; the body follows
	// need is, when the tagged fields were cut short, the length the
	// frame must reach before they can be read further.
	need int
}

// parseRequestHeader parses the request header at the start of frame, the
// bytes after the size field. complete says frame is the whole frame; when it
// is not, errShort asks for more bytes.
func (d *Decoder) parseRequestHeader(frame []byte, complete bool) (requestHeader, error) {
	var h requestHeader
	short := func(what string) error {
		if complete {
			return fmt.Errorf("request header truncated in %s", what)
		}
		return errShort
	}
	if len(frame) < minRequestFrame {
		return h, short("client_id length")
	}
	h.key = int16(binary.BigEndian.Uint16(frame))
	h.version = int16(binary.BigEndian.Uint16(frame[2:]))
	h.corr = int32(binary.BigEndian.Uint32(frame[4:]))
	req := d.request(h.key)
	if req == nil {
		return h, fmt.Errorf("unknown api key %d", h.key)
	}
	if h.version < 0 || h.version > req.MaxVersion() {
		return h, fmt.Errorf("api key %d version %d outside 0..%d", h.key, h.version, req.MaxVersion())
	}
	req.SetVersion(h.version)
	h.flexible = req.IsFlexible()
	n := int(int16(binary.BigEndian.Uint16(frame[8:])))
	rest := frame[minRequestFrame:]
	switch {
	case n == -1:
		h.nullClientID = true
	case n < -1:
		return h, fmt.Errorf("client_id length %d", n)
	case n > len(rest):
		if complete {
			return h, fmt.Errorf("client_id length %d beyond frame", n)
		}
		return h, errShort
	default:
		h.clientID = rest[:n:n]
		rest = rest[n:]
	}
	if h.flexible {
		tags, need, err := skipTags(rest)
		if err == errShort {
			h.need = len(frame) - len(rest) + need
			return h, short("tagged fields")
		}
		if err != nil {
			return h, err
		}
		rest = rest[tags:]
	}
	h.size = len(frame) - len(rest)
	return h, nil
}

// maxTags bounds the tagged fields of a header: clients and brokers send
// none in headers, and a candidate frame start read again as its bytes come
// in must not cost work quadratic in a long run of them.
const maxTags = 64

// skipTags returns the length of the tagged fields at the start of b. When
// b ends inside them (errShort), need is the length b must reach before
// they can be read further: exactly, so that a frame start is judged as
// soon as its bytes are there, however they were cut.
func skipTags(b []byte) (n, need int, err error) {
	off := 0
	uvarint := func() (uint32, error) {
		v, n := kbin.Uvarint(b[off:])
		if n == 0 {
			need = off + 1
			return 0, errShort
		}
		if n < 0 {
			return 0, errors.New("tagged field varint overflows")
		}
		off += n
		return v, nil
	}
	num, err := uvarint()
	if err != nil {
		return 0, need, err
	}
	if num > maxTags {
		return 0, 0, fmt.Errorf("%d tagged fields", num)
	}
	for ; num > 0; num-- {
		if _, err := uvarint(); err != nil { // tag key
			return 0, need, err
		}
		size, err := uvarint()
		if err != nil {
			return 0, need, err
		}
		if uint64(size) > uint64(len(b)-off) {
			return 0, off + int(min(size, 1<<30)), errShort
		}
		off += int(size)
	}
	return off, 0, nil
}

// probe is the verdict on a candidate frame start of an unsynced direction.
type probe int

const (
	probeMore probe = iota // too few bytes to decide
	probeNo                // not a frame start
	probeYes               // a frame start: decode from here
)

// probeRequest judges whether b starts with a request frame. strict (used
// while sniffing, when nothing says the connection is Kafka) also requires a
// frame of up to sniffBodyBytes to parse whole with kmsg. With probeMore it
// returns the length b must reach before the verdict can change, so that a
// candidate arriving a byte at a time is not judged again at every byte.
func (d *Decoder) probeRequest(b []byte, strict bool) (probe, int) {
	if len(b) < 4 {
		return probeMore, 4
	}
	size := int32(binary.BigEndian.Uint32(b))
	if size < minRequestFrame || size > d.opts.MaxFrameBytes {
		return probeNo, 0
	}
	complete := len(b)-4 >= int(size)
	frame := b[4:min(len(b), 4+int(size))]
	h, err := d.parseRequestHeader(frame, complete)
	if err == errShort {
		need := min(4+h.need, 4+int(size)) // in the tagged fields
		if len(frame) < minRequestFrame {
			need = 4 + minRequestFrame
		} else if n := int(int16(binary.BigEndian.Uint16(frame[8:]))); len(frame) < minRequestFrame+n {
			need = 4 + minRequestFrame + n
		}
		return probeMore, need
	}
	if err != nil || h.corr < 0 || !utf8.Valid(h.clientID) {
		return probeNo, 0
	}
	if !strict || size > sniffBodyBytes {
		return probeYes, 0
	}
	if !complete {
		return probeMore, 4 + int(size)
	}
	if h.key == keyProduce && plausibleProduceRequest(frame[h.size:], h.version) != nil {
		return probeNo, 0 // before kmsg allocates for its counts
	}
	req := d.request(h.key)
	req.SetVersion(h.version)
	err = req.ReadFrom(frame[h.size:])
	if a, ok := req.(*kmsg.SASLAuthenticateRequest); ok {
		a.SASLAuthBytes = nil // aliases the frame: a token is not kept
	}
	if err != nil {
		return probeNo, 0
	}
	return probeYes, 0
}

// probeResponse judges whether b starts with a response frame: a sane size
// and a correlation ID that a pending request of c awaits. When that request
// is a ProduceRequest, a response of up to sniffBodyBytes must also parse
// whole, so that stray bytes are not taken as its answer. With probeMore it
// returns the length b must reach before the verdict can change.
func (c *Conn) probeResponse(b []byte) (probe, int) {
	if len(b) < 8 {
		return probeMore, 8
	}
	size := int32(binary.BigEndian.Uint32(b))
	if size < 4 || size > c.d.opts.MaxFrameBytes {
		return probeNo, 0
	}
	i := c.findPending(int32(binary.BigEndian.Uint32(b[4:])))
	if i < 0 {
		return probeNo, 0
	}
	p := &c.pending[i]
	if p.key != keyProduce || p.x == nil || size > sniffBodyBytes {
		return probeYes, 0
	}
	if len(b)-4 < int(size) {
		return probeMore, 4 + int(size)
	}
	body := b[8 : 4+size]
	if p.flexible {
		n, _, err := skipTags(body)
		if err != nil {
			return probeNo, 0
		}
		body = body[n:]
	}
	if plausibleProduceResponse(body, p.version) != nil {
		return probeNo, 0
	}
	resp := &c.d.presp
	resp.Version = p.version
	if resp.UnsafeReadFrom(body) != nil {
		return probeNo, 0
	}
	return probeYes, 0
}
