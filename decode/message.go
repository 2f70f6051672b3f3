package decode

import (
	"encoding/binary"
	"time"
)

// API keys decode looks into; every other request is only kept pending so
// that responses stay matched.
const (
	keyProduce     = 0
	keyMetadata    = 3
	keyApiVersions = 18
)

// request decodes one request frame of dir, at stream position pos.
func (c *Conn) request(dir *direction, frame []byte, pos int64, ts time.Time) {
	h, err := c.d.parseRequestHeader(frame, true)
	if err != nil {
		c.d.errorf(c, dir.fromA, pos, "%v", err)
		return
	}
	clientID := c.clientID(h)
	if c.saslRequest(dir, h, frame[h.size:], pos, ts) {
		return
	}
	if h.key == keyProduce {
		c.produceRequest(dir, h, clientID, frame[h.size:], pos, ts)
		return
	}
	if h.key == keyApiVersions {
		c.apiVersionsRequest(dir, h, frame[h.size:], pos)
	}
	if c.auxRequest(dir, h, clientID, frame[h.size:], pos, ts) {
		return
	}
	c.d.stats.Skipped++
	c.push(pending{corr: h.corr, key: h.key, version: h.version, flexible: h.flexible})
}

// clientID returns the connection's shared copy of h's client.id, nil when
// null, and lists it in the connection summary the first time.
func (c *Conn) clientID(h requestHeader) *string {
	if h.nullClientID {
		return nil
	}
	if c.lastClient != nil && *c.lastClient == string(h.clientID) {
		return c.lastClient
	}
	for _, s := range c.clientIDs {
		if *s == string(h.clientID) {
			c.lastClient = s
			return s
		}
	}
	s := string(h.clientID)
	if len(c.clientIDs) >= maxClientIDs {
		// Bounded: shared and listed no more, copied for its exchange.
		return &s
	}
	c.clientIDs = append(c.clientIDs, &s)
	c.sum.ClientIDs = append(c.sum.ClientIDs, s)
	c.lastClient = &s
	return &s
}

// response decodes one response frame of dir, at stream position pos, with
// the version of the request it answers.
func (c *Conn) response(dir *direction, frame []byte, pos int64, ts time.Time) {
	i := c.findPending(int32(binary.BigEndian.Uint32(frame)))
	if i < 0 {
		c.d.stats.Unmatched++
		return
	}
	p := c.answered(i)
	body := frame[4:]
	if p.flexible && p.key != keyApiVersions {
		n, _, err := skipTags(body)
		if err != nil {
			c.d.errorf(c, dir.fromA, pos, "response header tagged fields: truncated or overflowing")
			if p.x != nil {
				p.x.NoResponse = NoResponseMalformed
				c.d.emit(p.x)
			}
			return
		}
		body = body[n:]
	}
	switch {
	case p.key == keyProduce && p.x != nil:
		c.produceResponse(dir, p, body, pos, ts)
		return
	case p.key == keyMetadata:
		c.metadataResponse(dir, p, body, pos, ts)
	case p.key == keyDescribeCluster:
		c.describeClusterResponse(dir, p, body, pos, ts)
	case p.key == keySaslHandshake || p.key == keySaslAuthenticate:
		c.saslResponse(dir, p, body, pos, ts)
	case p.aux != nil:
		c.auxResponse(dir, p, body, pos, ts)
	}
	c.d.stats.Skipped++
}
