package decode

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kbin"
)

// SASL: SaslHandshake (API key 17), SaslAuthenticate (API key 36) and the
// raw tokens of SaslHandshake v0, read for the mechanism and the user:
//
//	SaslHandshake v0     (KIP-43) mechanism; the answer's error code. On
//	                     success the SASL tokens follow as bare
//	                     int32-length-prefixed blobs with no Kafka header,
//	                     both ways, until authentication ends.
//	SaslHandshake v1     (KIP-152) the same fields; the tokens then travel
//	                     in SaslAuthenticate frames.
//	SaslAuthenticate     v0-v1 auth_bytes, answered with an error code,
//	                     message, auth_bytes and (v1+) session_lifetime_ms;
//	                     v2 is flexible.
//
// A second handshake on a live connection is a re-authentication (KIP-368),
// decoded as the first.
//
// When raw tokens end. PLAIN sends one token each way (the broker's is
// empty), SCRAM-* two (client-first, server-first, client-final,
// server-final), OAUTHBEARER one each way (the broker's is empty on
// success, an error otherwise, which the client acknowledges with a
// one-byte token); GSSAPI and unknown mechanisms an unknown number. So in
// raw mode a client frame that parses as a plausible request header (known
// API key and version, correlation ID >= 0, UTF-8 client.id) is a request
// and ends the mode, and a broker frame that starts with the correlation ID
// of a pending request is a response and ends it; PLAIN and SCRAM also end
// it by their count. No token of these mechanisms parses as a request
// header: their first bytes are text ("n,,", "c=") or, for PLAIN, a NUL and
// a printable user name, which gives an API version over 0x2000, or ASN.1
// and GSS wrap token IDs (0x60, 0x0504), which are no API key.
//
// The outcome. An authentication succeeded when the broker's answer says
// so (SaslAuthenticate error 0 on the last round, a session lifetime, or
// the last v0 token of PLAIN or SCRAM that is no "e=" error), or when the
// client sends any other request after its tokens: clients do so only once
// authenticated, and a v0 broker closes the connection on failure. It
// failed on an error code (handshake or authenticate), a SCRAM "e=" final
// message, an OAUTHBEARER error token, or the connection closing during it.
// A gap during it leaves it uncounted.
//
// Secrets. The user is read from the client's first token (PLAIN's authzid
// and authcid, SCRAM's gs2 authzid and n= username, OAUTHBEARER's gs2
// authzid); nothing after it (password, nonce, proof, salt, signature,
// bearer token) is read, copied or quoted in any message. A token decode
// copied into its own frame buffer is zeroed once read; kmsg's reused
// SaslAuthenticate request forgets its bytes after a probe.

const (
	keySaslHandshake    = 17
	keySaslAuthenticate = 36
)

// Bounds on what decode keeps of a SASL exchange: RFC 4422 mechanism names
// have at most 20 characters; a user name past maxUserBytes is cut.
const (
	maxMechanismBytes = 32
	maxUserBytes      = 256
)

// saslConn is a connection's SASL state: the authentication in progress, or
// the last one, and which directions carry raw v0 tokens.
type saslConn struct {
	active   bool // an authentication is in progress
	v0       bool // begun by SaslHandshake v0: tokens travel raw
	answered bool // the handshake was answered with no error
	mech     string
	// client and server count the tokens (v0) or SaslAuthenticate
	// requests and answers (v1) of the authentication in progress.
	client, server int
	user           string // from the client's first token; "" unknown
	// clientRaw and serverRaw: the next frame of that direction is a raw
	// token unless it shows itself to be a request or response.
	clientRaw, serverRaw bool
	// open: the connection summary's last SASLSpan is this
	// authentication's, still open; last is the time of its latest frame.
	open bool
	last time.Time
}

// maxSASLSpans bounds the SASLSpans a connection lists: a re-authenticating
// client makes one per session lifetime.
const maxSASLSpans = 64

// saslBegin opens a SASLSpan at ts for the authentication beginning. Past
// maxSASLSpans the last span is left open: it covers the rest.
func (c *Conn) saslBegin(ts time.Time) {
	s := c.sasl
	s.open = false
	if c.sum == nil {
		return
	}
	if n := len(c.sum.SASLSpans); n >= maxSASLSpans {
		c.sum.SASLSpans[n-1].To = time.Time{}
		return
	}
	if len(c.sum.SASLSpans) == 0 {
		c.d.noteSASL(c.sum)
	}
	c.sum.SASLSpans = append(c.sum.SASLSpans, SASLSpan{From: ts})
	s.open = true
}

// maxSASLConns bounds the connections SASLSpans finds by their ends; the
// one that authenticated longest ago is forgotten first.
const maxSASLConns = 1 << 16

// maxSASLReuse bounds the connections of the same ends whose spans are
// kept (the ends reused by new connections).
const maxSASLReuse = 4

// noteSASL files sum, whose connection has begun to authenticate, by its
// ends for SASLSpans.
func (d *Decoder) noteSASL(sum *ConnSummary) {
	if d.saslConns == nil {
		d.saslConns = make(map[[2]netip.AddrPort][]*ConnSummary)
	}
	k := endsOf(sum.Info.Client, sum.Info.Broker)
	if prev, ok := d.saslConns[k]; ok {
		// The ends used again by a new connection: both keep their
		// spans (a finding on the old one still needs its own cut), the
		// key filed once in the order.
		if len(prev) >= maxSASLReuse {
			prev = prev[1:]
		}
		d.saslConns[k] = append(prev, sum)
		return
	}
	if len(d.saslOrder) >= maxSASLConns {
		delete(d.saslConns, d.saslOrder[0])
		d.saslOrder = d.saslOrder[1:]
	}
	d.saslConns[k] = []*ConnSummary{sum}
	d.saslOrder = append(d.saslOrder, k)
}

// SASLSpans returns the times of the SASL authentications of the connection
// between a and b (either order), listed in Connections or not, so that
// an evidence writer leaves every packet that holds a password or token
// out; nil when it did not authenticate.
func (d *Decoder) SASLSpans(a, b netip.AddrPort) []SASLSpan {
	var spans []SASLSpan
	for _, s := range d.saslConns[endsOf(a, b)] {
		spans = append(spans, s.SASLSpans...)
	}
	return spans
}

// endsOf is a connection's two ends in a fixed order.
func endsOf(a, b netip.AddrPort) [2]netip.AddrPort {
	if a.Compare(b) > 0 {
		a, b = b, a
	}
	return [2]netip.AddrPort{a, b}
}

// saslSpanEnd ends the open SASLSpan at ts.
func (c *Conn) saslSpanEnd(ts time.Time) {
	if s := c.sasl; s.open {
		c.sum.SASLSpans[len(c.sum.SASLSpans)-1].To = ts
		s.open = false
	}
}

// saslState returns c's SASL state, made on first use.
func (c *Conn) saslState() *saslConn {
	if c.sasl == nil {
		c.sasl = new(saslConn)
	}
	return c.sasl
}

// saslRaw says whether dir's next frame is taken as a raw SASL token.
func (c *Conn) saslRaw(dir *direction) bool {
	s := c.sasl
	if s == nil {
		return false
	}
	return dir.role == roleRequests && s.clientRaw || dir.role == roleResponses && s.serverRaw
}

// clientRounds is how many tokens a client sends in an authentication of
// mech, 0 when not known beforehand (the end then shows in the frames).
func clientRounds(mech string) int {
	switch {
	case mech == "PLAIN":
		return 1
	case strings.HasPrefix(mech, "SCRAM-"):
		return 2
	}
	return 0
}

// serverRounds is how many tokens a broker sends in an authentication of
// mech, its last one telling the outcome; 0 when not known beforehand.
func serverRounds(mech string) int {
	if mech == "OAUTHBEARER" {
		return 1
	}
	return clientRounds(mech)
}

// saslToken takes frame, a whole frame of dir in raw mode, as a SASL token, reporting whether it did: false when the
// frame is a request or response, raw mode being over.
func (c *Conn) saslToken(dir *direction, frame []byte, ts time.Time) bool {
	s := c.sasl
	if dir.role == roleRequests {
		if c.plausibleRequest(frame) {
			s.clientRaw = false
			return false
		}
		s.last = ts
		s.client++
		if s.active && s.client == 1 {
			s.user = saslUser(s.mech, frame)
		}
		if n := clientRounds(s.mech); n > 0 && s.client >= n {
			s.clientRaw = false
		}
	} else {
		if len(frame) >= 4 && c.findPending(int32(binary.BigEndian.Uint32(frame))) >= 0 {
			s.serverRaw = false
			if s.active && s.client > 0 {
				c.saslEnd(true, s.last)
			}
			return false
		}
		s.last = ts
		s.server++
		if n := serverRounds(s.mech); n > 0 && s.server >= n {
			s.serverRaw = false
			if s.active {
				c.saslEnd(finalOK(s.mech, frame), ts)
			}
		}
	}
	c.d.stats.Frames++
	c.sum.Frames++
	c.d.stats.SASLTokens++
	wipe(dir, frame)
	return true
}

// finalOK says whether the broker's last token of mech tells success: a
// SCRAM server-final-message is "v=" (verifier) or "e=" (error); an
// OAUTHBEARER broker answers an empty token, or an error.
func finalOK(mech string, tok []byte) bool {
	switch {
	case strings.HasPrefix(mech, "SCRAM-"):
		return !bytes.HasPrefix(tok, []byte("e="))
	case mech == "OAUTHBEARER":
		return len(tok) == 0
	}
	return true
}

// plausibleRequest says whether frame parses as a request header.
func (c *Conn) plausibleRequest(frame []byte) bool {
	h, err := c.d.parseRequestHeader(frame, true)
	return err == nil && h.corr >= 0 && utf8.Valid(h.clientID)
}

// wipe zeroes dir's frame buffer, decode's own copy of a frame, when b (a
// frame, or its tail) lies in it: a token's bytes are kept no longer than
// they are read. A frame in the bytes handed to Data is the caller's and is
// never written; dir.buf is then empty, or holds no part of b.
func wipe(dir *direction, b []byte) {
	if n := len(dir.buf); n > 4 && len(b) > 0 && &dir.buf[n-1] == &b[len(b)-1] {
		clear(dir.buf)
	}
}

// saslRequest reads a SaslHandshake or SaslAuthenticate request and keeps
// it pending, reporting whether h was one; any other request after the
// client's tokens ends the authentication in progress as a success.
func (c *Conn) saslRequest(dir *direction, h requestHeader, body []byte, pos int64, ts time.Time) bool {
	if h.key != keySaslHandshake && h.key != keySaslAuthenticate {
		if s := c.sasl; s != nil && s.active && s.client > 0 {
			// The span ends at the authentication's last frame, so
			// that the packets of this request are not in it.
			c.saslEnd(true, s.last)
		} else if s != nil && s.open && !s.active {
			// Bytes were lost during an authentication: its span
			// ends before the first other request decoded.
			c.saslSpanEnd(ts.Add(-time.Nanosecond))
		}
		return false
	}
	s := c.saslState()
	r := kbin.Reader{Src: body}
	if h.key == keySaslHandshake {
		c.saslSpanEnd(ts) // one cut short by this handshake
		mech := r.UnsafeString()
		if !r.Ok() {
			c.d.errorf(c, dir.fromA, pos, "sasl handshake v%d request correlation %d: malformed", h.version, h.corr)
		}
		// A handshake begins an authentication (again, KIP-368); one
		// still in progress was cut short and is not counted.
		*s = saslConn{active: true, v0: h.version == 0, mech: mechanismText(mech), clientRaw: h.version == 0, last: ts}
		c.saslBegin(ts)
	} else {
		var tok []byte
		if h.version >= 2 {
			tok = r.CompactBytes()
		} else {
			tok = r.Bytes()
		}
		if !s.active {
			// The capture began after the handshake: mechanism unknown.
			// The span starts with the frame's first bytes: the token may
			// span segments, and none of them may reach evidence.
			c.saslSpanEnd(ts)
			*s = saslConn{active: true}
			c.saslBegin(dir.frameStart)
		}
		s.last = ts
		s.client++
		if !r.Ok() {
			c.d.errorf(c, dir.fromA, pos, "sasl authenticate v%d request correlation %d: malformed", h.version, h.corr)
		} else if s.client == 1 {
			s.user = saslUser(s.mech, tok)
		}
		wipe(dir, body)
	}
	c.d.stats.Skipped++
	c.push(pending{corr: h.corr, key: h.key, version: h.version, flexible: h.flexible})
	return true
}

// saslResponse reads the answer to a SaslHandshake or SaslAuthenticate
// request p, its body after the response header.
func (c *Conn) saslResponse(dir *direction, p pending, body []byte, pos int64, ts time.Time) {
	s := c.saslState()
	s.last = ts
	r := kbin.Reader{Src: body}
	code := r.Int16()
	if p.key == keySaslHandshake {
		if !r.Ok() {
			c.d.errorf(c, dir.fromA, pos, "sasl handshake v%d response correlation %d: truncated", p.version, p.corr)
			return
		}
		if code != 0 {
			s.clientRaw = false
			if s.active {
				c.saslEnd(false, ts)
			}
			return
		}
		s.answered = true
		s.serverRaw = p.version == 0
		return
	}
	var lifetime int64
	if p.version >= 2 {
		r.UnsafeCompactNullableString()
		r.CompactBytes()
	} else {
		r.UnsafeNullableString()
		r.Bytes()
	}
	if p.version >= 1 {
		lifetime = r.Int64()
	}
	ok := r.Ok()
	wipe(dir, body)
	if !ok && code == 0 {
		c.d.errorf(c, dir.fromA, pos, "sasl authenticate v%d response correlation %d: truncated", p.version, p.corr)
		return
	}
	s.server++
	if !s.active {
		return
	}
	if code != 0 {
		c.saslEnd(false, ts)
		return
	}
	if n := serverRounds(s.mech); n > 0 && s.server >= n || lifetime > 0 {
		c.saslEnd(true, ts)
	}
}

// saslEnd ends the authentication in progress, as a success or not: it is
// counted, and the mechanism and user are set on the connection summary,
// and on ConnInfo before the connection's first ProduceRequest (ConnInfo is
// shared with exchanges already handed to the Sink, which decode must not
// change).
func (c *Conn) saslEnd(ok bool, ts time.Time) {
	s := c.sasl
	s.active = false
	c.saslSpanEnd(ts)
	user := s.user
	s.user = ""
	if ok {
		c.d.stats.SASLAuthentications++
	} else {
		c.d.stats.SASLFailures++
	}
	if c.sum == nil {
		return
	}
	if !ok {
		user = ""
	} else if user == "" && s.mech == c.sum.SASLMechanism && !c.sum.SASLFailed {
		// A re-authentication keeps the principal (KIP-368): a user
		// known from the first stays.
		user = c.sum.SASLUser
	}
	c.sum.SASLMechanism, c.sum.SASLUser, c.sum.SASLFailed = s.mech, user, !ok
	if c.sum.ProduceRequests == 0 {
		c.info.SASLMechanism, c.info.SASLUser, c.info.SASLFailed = s.mech, user, !ok
	}
}

// saslGap forgets the authentication in progress: bytes of it were lost,
// so its tokens can no longer be told from frames, nor its outcome known.
func (c *Conn) saslGap() {
	if s := c.sasl; s != nil {
		// The span stays open until another request is decoded.
		s.active, s.clientRaw, s.serverRaw, s.user = false, false, false, ""
	}
}

// saslClose counts an authentication in progress when its connection
// closes, other than at the end of the capture, as failed: a broker closes
// the connection of a client that failed to authenticate.
func (c *Conn) saslClose(ts time.Time) {
	if s := c.sasl; s != nil && s.active && (s.client > 0 || s.answered) && !c.d.atEnd {
		c.saslEnd(false, ts)
	}
}

// mechanismText is decode's own copy of a mechanism name, cut to
// maxMechanismBytes; the names of the common mechanisms are shared.
func mechanismText(s string) string {
	for _, m := range [...]string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER", "AWS_MSK_IAM"} {
		if s == m {
			return m
		}
	}
	return saslClip(s, maxMechanismBytes)
}

// saslClip is decode's own copy of s, cut to n bytes.
func saslClip(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.Clone(s)
}

// saslUser returns the user a client's first token of mech names, "" when
// it names none (GSSAPI's principal is inside its encrypted authenticator)
// or does not parse. It reads the token only up to the user: never the
// password, nonce or bearer token after it.
func saslUser(mech string, tok []byte) string {
	switch {
	case mech == "PLAIN":
		return plainUser(tok)
	case strings.HasPrefix(mech, "SCRAM-"):
		return scramUser(tok)
	case mech == "OAUTHBEARER":
		return oauthUser(tok)
	}
	return ""
}

// plainUser reads a PLAIN message (RFC 4616): authzid NUL authcid NUL
// passwd.
func plainUser(tok []byte) string {
	authz, rest, ok := bytes.Cut(tok, []byte{0})
	if !ok {
		return ""
	}
	authc, _, ok := bytes.Cut(rest, []byte{0})
	if !ok {
		return ""
	}
	return userText(authc, authz)
}

// gs2Header reads the GS2 header (RFC 5801) of a SCRAM client-first or
// OAUTHBEARER initial message: a channel binding flag ("n", "y" or
// "p=name"), ",", an optional "a=" authzid, ",". It returns the authzid,
// unescaped, and the bytes after the header.
func gs2Header(tok []byte) (authz, rest []byte, ok bool) {
	flag, rest, ok := bytes.Cut(tok, []byte(","))
	if !ok || !(string(flag) == "n" || string(flag) == "y" || bytes.HasPrefix(flag, []byte("p="))) {
		return nil, nil, false
	}
	az, rest, ok := bytes.Cut(rest, []byte(","))
	if !ok {
		return nil, nil, false
	}
	if len(az) > 0 {
		if !bytes.HasPrefix(az, []byte("a=")) {
			return nil, nil, false
		}
		if authz, ok = unescapeSASLName(az[2:]); !ok {
			return nil, nil, false
		}
	}
	return authz, rest, true
}

// scramUser reads a SCRAM client-first-message (RFC 5802): gs2-header,
// then [reserved-mext ","] "n=" saslname "," "r=" nonce ...
func scramUser(tok []byte) string {
	authz, bare, ok := gs2Header(tok)
	if !ok {
		return ""
	}
	if bytes.HasPrefix(bare, []byte("m=")) {
		if _, bare, ok = bytes.Cut(bare, []byte(",")); !ok {
			return ""
		}
	}
	name, ok := bytes.CutPrefix(bare, []byte("n="))
	if !ok {
		return ""
	}
	// The nonce follows the name's comma: it is not read.
	if name, _, ok = bytes.Cut(name, []byte(",")); !ok {
		return ""
	}
	user, ok := unescapeSASLName(name)
	if !ok {
		return ""
	}
	return userText(user, authz)
}

// oauthUser reads the GS2 authzid of an OAUTHBEARER initial client response
// (RFC 7628); the bearer token after it is not read. Kafka takes the
// principal from the token's claims, so without an authzid it is unknown.
func oauthUser(tok []byte) string {
	authz, _, ok := gs2Header(tok)
	if !ok {
		return ""
	}
	return userText(authz, nil)
}

// unescapeSASLName undoes a saslname's escapes: "=2C" is ',' and "=3D" is
// '='; any other '=' is malformed.
func unescapeSASLName(b []byte) ([]byte, bool) {
	if bytes.IndexByte(b, '=') < 0 {
		return b, true
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '=' {
			out = append(out, b[i])
			continue
		}
		switch {
		case i+2 < len(b) && b[i+1] == '2' && b[i+2] == 'C':
			out = append(out, ',')
		case i+2 < len(b) && b[i+1] == '3' && b[i+2] == 'D':
			out = append(out, '=')
		default:
			return nil, false
		}
		i += 2
	}
	return out, true
}

// userText is the user decode shows: the authenticated identity, followed
// by the authorization identity when that is another; each cut to
// maxUserBytes.
func userText(authc, authz []byte) string {
	if len(authc) == 0 {
		authc, authz = authz, nil
	}
	if len(authc) == 0 {
		return ""
	}
	s := saslClip(string(authc), maxUserBytes)
	if len(authz) > 0 && !bytes.Equal(authz, authc) {
		s += " (authzid " + saslClip(string(authz), maxUserBytes) + ")"
	}
	return s
}
