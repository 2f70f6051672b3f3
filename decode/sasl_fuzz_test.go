package decode

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// saslEscape escapes a saslname (RFC 5802): ',' as "=2C", '=' as "=3D".
func saslEscape(s []byte) string {
	return strings.NewReplacer("=", "=3D", ",", "=2C").Replace(string(s))
}

// fuzzMechs are the mechanisms FuzzSASL picks from.
var fuzzMechs = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI", "X-UNKNOWN"}

// FuzzSASL checks the user parsers and the raw token mode of SaslHandshake
// v0 with fuzzer-chosen names, secrets and tokens:
//   - a PLAIN message, SCRAM client-first-message and OAUTHBEARER initial
//     response built from an authzid and a user name give back that user
//     (unescaped), whatever the password, nonce or bearer token after it:
//     the same message with another secret gives the same user;
//   - any bytes as a first token of any mechanism parse without panic to
//     a bounded user;
//   - a v0 handshake followed by the mechanism's shape of tokens (the
//     fuzzer's bytes), then a produce exchange, decodes that exchange
//     intact with nothing malformed or resynced, in capture order, with
//     every client byte before any broker byte, and cut into bytes;
//     unless a client token parses as a request header, or a broker
//     token starts with the produce request's correlation ID, which is
//     how raw mode ends.
func FuzzSASL(f *testing.F) {
	f.Add(uint8(0), []byte(""), []byte("alice"), []byte(plainPassword), []byte(plainToken), []byte(""))
	f.Add(uint8(1), []byte(""), []byte("bob,jr"), []byte(scramNonce), []byte(scramClientFirst), []byte(scramServerFirst))
	f.Add(uint8(2), []byte("admin"), []byte("x=y"), []byte(scramProof), []byte(scramClientFinal), []byte(scramServerFinal))
	f.Add(uint8(3), []byte("svc@example.com"), []byte(""), []byte(oauthToken), []byte(oauthFirst), []byte(""))
	f.Add(uint8(4), []byte(""), []byte(""), []byte(gssSecret), []byte("\x60\x82"+gssSecret), []byte("\x05\x04"+gssSecret))
	f.Add(uint8(5), []byte("a"), []byte("b"), []byte("c"), []byte("\x00\x12\x00\x03\x00\x00\x00\x07\x00\x01c"), []byte{0, 0, 0, 2})
	f.Fuzz(func(t *testing.T, sel uint8, authz, user, secret, tok1, tok2 []byte) {
		mech := fuzzMechs[int(sel)%len(fuzzMechs)]
		checkUserParse(t, mech, authz, user, secret)
		if u := saslUser(mech, tok1); len(u) > 2*maxUserBytes+len(" (authzid )") {
			t.Fatalf("user of %d bytes", len(u))
		}
		checkRawTokens(t, mech, tok1, tok2, secret)
	})
}

// checkUserParse builds mech's first message from authz, user and secret
// and checks the user read from it.
func checkUserParse(t *testing.T, mech string, authz, user, secret []byte) {
	t.Helper()
	build := func(secret []byte) []byte {
		switch {
		case mech == "PLAIN":
			return bytes.Join([][]byte{authz, user, secret}, []byte{0})
		case strings.HasPrefix(mech, "SCRAM-"):
			az := ""
			if len(authz) > 0 {
				az = "a=" + saslEscape(authz)
			}
			return []byte("n," + az + ",n=" + saslEscape(user) + ",r=" + string(secret))
		case mech == "OAUTHBEARER":
			return []byte("n,a=" + saslEscape(authz) + ",\x01auth=Bearer " + string(secret) + "\x01\x01")
		}
		return nil
	}
	msg := build(secret)
	if msg == nil {
		return
	}
	if mech == "PLAIN" && (bytes.IndexByte(authz, 0) >= 0 || bytes.IndexByte(user, 0) >= 0) {
		return // no such PLAIN message: its fields hold no NUL
	}
	want := userText(user, authz)
	if mech == "OAUTHBEARER" {
		want = userText(authz, nil)
	}
	got := saslUser(mech, msg)
	if got != want {
		t.Fatalf("%s %q: user %q, want %q", mech, msg, got, want)
	}
	if other := saslUser(mech, build(append([]byte("other-"), secret...))); other != got {
		t.Fatalf("%s: the user depends on the secret: %q then %q", mech, got, other)
	}
}

// checkRawTokens decodes a v0 handshake of mech, tokens of mech's shape
// made of tok1 and tok2, and a produce exchange.
func checkRawTokens(t *testing.T, mech string, tok1, tok2, secret []byte) {
	t.Helper()
	client := [][]byte{tok1}
	server := [][]byte{tok2}
	switch {
	case strings.HasPrefix(mech, "SCRAM-"):
		client, server = append(client, secret), append(server, tok1)
	case mech == "GSSAPI" || mech == "X-UNKNOWN":
		client, server = append(client, tok2, secret), append(server, secret)
	}
	d := New(nil, Options{})
	for _, tok := range client {
		if d.plausibleClientFrame(tok) {
			return // a request: raw mode ends there
		}
	}
	for _, tok := range server {
		if len(tok) >= 4 && binary.BigEndian.Uint32(tok) == 2 {
			return // the answer to the produce request
		}
	}
	script := []msg{handshake(0, 1, mech), handshakeAnswer(0, 1, 0)}
	for i := range max(len(client), len(server)) {
		if i < len(client) {
			script = append(script, rawToken(true, string(client[i])))
		}
		if i < len(server) {
			script = append(script, rawToken(false, string(server[i])))
		}
	}
	script = append(script, saslProduce(2), saslAnswer(2))

	check := func(how string, xs []*Exchange, st Stats) {
		t.Helper()
		if st.Malformed != 0 || st.Resyncs != 0 || len(xs) != 1 || !xs[0].Responded || len(xs[0].Batches) != 1 {
			t.Fatalf("%s: %s tokens %q/%q: malformed %d, resyncs %d, %d exchanges", how, mech, client, server, st.Malformed, st.Resyncs, len(xs))
		}
		if st.SASLTokens != int64(len(client)+len(server)) {
			t.Fatalf("%s: %d tokens counted, want %d", how, st.SASLTokens, len(client)+len(server))
		}
	}
	want, wantStats, _ := decodeScript(Options{}, script, whole)
	check("in order", want, wantStats)
	got, st, _ := decodeScript(Options{}, script, bytewise)
	check("bytewise", got, st)
	if !reflect.DeepEqual(got, want) || st != wantStats {
		t.Fatalf("bytewise: stats %+v, whole %+v", st, wantStats)
	}
	c, b := streams(script)
	got, st = decodeStreams(Options{}, c, b, whole)
	check("client first", got, st)
}

// plausibleClientFrame says whether tok, as a whole frame, would be taken
// as a request header rather than a raw token.
func (d *Decoder) plausibleClientFrame(tok []byte) bool {
	h, err := d.parseRequestHeader(tok, true)
	return err == nil && h.corr >= 0 && utf8.Valid(h.clientID)
}
