package kafkatest

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxFrameBytes bounds the frames the connection wrapper buffers; a larger
// size prefix stops the wrapper from parsing that connection any further.
const maxFrameBytes = 64 << 20

var errShort = errors.New("kafkatest: frame too short")

// nextFrame returns the first complete size-prefixed frame of buf (prefix
// included) and whether one is complete. A negative or oversized size is an
// error.
func nextFrame(buf []byte) (frame []byte, ok bool, err error) {
	if len(buf) < 4 {
		return nil, false, nil
	}
	size := int32(binary.BigEndian.Uint32(buf))
	if size < 0 || size > maxFrameBytes {
		return nil, false, fmt.Errorf("kafkatest: frame size %d out of range", size)
	}
	if len(buf) < 4+int(size) {
		return nil, false, nil
	}
	return buf[:4+int(size)], true, nil
}

// requestHeader is the part of a request header the wrapper needs.
type requestHeader struct {
	key, version  int16
	correlationID int32
	body          []byte // the request body after the header
}

// parseRequest parses a request frame (size prefix included): header v0-v2
// and, for known keys, the body with kmsg. It returns a nil kmsg.Request for a
// key kmsg does not know.
func parseRequest(frame []byte) (requestHeader, kmsg.Request, error) {
	var h requestHeader
	b := frame[4:]
	if len(b) < 10 {
		return h, nil, errShort
	}
	h.key = int16(binary.BigEndian.Uint16(b))
	h.version = int16(binary.BigEndian.Uint16(b[2:]))
	h.correlationID = int32(binary.BigEndian.Uint32(b[4:]))
	idLen := int16(binary.BigEndian.Uint16(b[8:])) // client.id keeps int16 length even in header v2
	b = b[10:]
	if idLen > 0 {
		if len(b) < int(idLen) {
			return h, nil, errShort
		}
		b = b[idLen:]
	}
	req := kmsg.RequestForKey(h.key)
	if req == nil {
		h.body = b
		return h, nil, nil
	}
	req.SetVersion(h.version)
	if req.IsFlexible() {
		n, err := skipTags(b)
		if err != nil {
			return h, nil, err
		}
		b = b[n:]
	}
	h.body = b
	if err := req.ReadFrom(b); err != nil {
		return h, nil, fmt.Errorf("kafkatest: parse request key %d v%d corr %d: %w", h.key, h.version, h.correlationID, err)
	}
	return h, req, nil
}

// responseBody returns the response body of a response frame (size prefix
// included) to req: after the correlation ID and, when the response header is
// flexible (v1: every flexible response but ApiVersions), its tags.
func responseBody(frame []byte, req kmsg.Request) ([]byte, error) {
	if len(frame) < 8 {
		return nil, errShort
	}
	b := frame[8:]
	if req.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		n, err := skipTags(b)
		if err != nil {
			return nil, err
		}
		b = b[n:]
	}
	return b, nil
}

// skipTags returns the length of the tagged-field section at the start of b.
func skipTags(b []byte) (int, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, errShort
	}
	off := n
	for range count {
		_, n := binary.Uvarint(b[off:]) // tag
		if n <= 0 {
			return 0, errShort
		}
		off += n
		size, n := binary.Uvarint(b[off:])
		if n <= 0 || size > uint64(len(b)-off-n) {
			return 0, errShort
		}
		off += n + int(size)
	}
	return off, nil
}
