package decode

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// saslProduce and saslAnswer are a Produce v9 request and its answer.
func saslProduce(corr int32) msg {
	return msg{fromClient: true, frame: requestFrame(produceRequest(9, -1, part{"t", 0, recordBatch(1, 0, corr, 1, "r")}), corr, "c")}
}

func saslAnswer(corr int32) msg {
	return msg{frame: responseFrame(produceResponse(9, answer{"t", 0, 0, int64(corr)}), corr)}
}

// rawToken is a SaslHandshake v0 token: an int32 length, the bytes, no
// Kafka header.
func rawToken(fromClient bool, tok string) msg {
	return msg{fromClient: fromClient, frame: append(binary.BigEndian.AppendUint32(nil, uint32(len(tok))), tok...)}
}

func handshake(v int16, corr int32, mech string) msg {
	r := kmsg.NewPtrSASLHandshakeRequest()
	r.Version, r.Mechanism = v, mech
	return msg{fromClient: true, frame: requestFrame(r, corr, "c")}
}

func handshakeAnswer(v int16, corr int32, code int16) msg {
	r := kmsg.NewPtrSASLHandshakeResponse()
	r.Version, r.ErrorCode, r.SupportedMechanisms = v, code, []string{"PLAIN", "SCRAM-SHA-256"}
	return msg{frame: responseFrame(r, corr)}
}

func authenticate(v int16, corr int32, tok string) msg {
	r := kmsg.NewPtrSASLAuthenticateRequest()
	r.Version, r.SASLAuthBytes = v, []byte(tok)
	return msg{fromClient: true, frame: requestFrame(r, corr, "c")}
}

func authenticateAnswer(v int16, corr int32, code int16, tok string, lifetimeMillis int64) msg {
	r := kmsg.NewPtrSASLAuthenticateResponse()
	r.Version, r.ErrorCode, r.SASLAuthBytes, r.SessionLifetimeMillis = v, code, []byte(tok), lifetimeMillis
	if code != 0 {
		r.ErrorMessage = kmsg.StringPtr("Authentication failed: Invalid username or password")
	}
	return msg{frame: responseFrame(r, corr)}
}

// SASL exchanges of each kind, with the secrets they carry.
const (
	plainPassword = "pl4in-S3CRET-pw"
	scramNonce    = "cNONCEfyrgdkw"
	scramSalt     = "c2FsdFNBTFQ="
	scramProof    = "PROOFdHBbpOk="
	scramSig      = "SIGNATUREs1g="
	oauthToken    = "eyJTOKENsecret.eyJzdWIiOiJ4In0.SIGN"
	gssSecret     = "GSS-session-key-bytes"
)

var (
	plainToken       = "\x00alice\x00" + plainPassword
	scramClientFirst = "n,,n=bob=2Cjr,r=" + scramNonce
	scramServerFirst = "r=" + scramNonce + "srv,s=" + scramSalt + ",i=4096"
	scramClientFinal = "c=biws,r=" + scramNonce + "srv,p=" + scramProof
	scramServerFinal = "v=" + scramSig
	oauthFirst       = "n,a=svc@example.com,\x01auth=Bearer " + oauthToken + "\x01\x01"
	secrets          = []string{plainPassword, scramNonce, scramSalt, scramProof, scramSig, oauthToken, gssSecret}
)

func TestSASL(t *testing.T) {
	type want struct {
		exchanges   int
		mech, user  string
		failed      bool
		ok, fails   int64
		tokens      int64
		summaryUser string // "-failed": ConnSummary's latest failed
	}
	tests := []struct {
		name   string
		script []msg
		want   want
	}{
		{
			name: "v0 PLAIN",
			script: []msg{
				handshake(0, 1, "PLAIN"), handshakeAnswer(0, 1, 0),
				rawToken(true, plainToken), rawToken(false, ""),
				saslProduce(2), saslAnswer(2), saslProduce(3), saslAnswer(3),
			},
			want: want{exchanges: 2, mech: "PLAIN", user: "alice", ok: 1, tokens: 2},
		},
		{
			name: "v0 PLAIN with an authzid",
			script: []msg{
				handshake(0, 1, "PLAIN"), handshakeAnswer(0, 1, 0),
				rawToken(true, "admin\x00alice\x00"+plainPassword), rawToken(false, ""),
				saslProduce(2), saslAnswer(2),
			},
			want: want{exchanges: 1, mech: "PLAIN", user: "alice (authzid admin)", ok: 1, tokens: 2},
		},
		{
			name: "v0 SCRAM-SHA-256",
			script: []msg{
				handshake(0, 1, "SCRAM-SHA-256"), handshakeAnswer(0, 1, 0),
				rawToken(true, scramClientFirst), rawToken(false, scramServerFirst),
				rawToken(true, scramClientFinal), rawToken(false, scramServerFinal),
				saslProduce(2), saslAnswer(2), saslProduce(3), saslAnswer(3),
			},
			want: want{exchanges: 2, mech: "SCRAM-SHA-256", user: "bob,jr", ok: 1, tokens: 4},
		},
		{
			name: "v0 OAUTHBEARER",
			script: []msg{
				handshake(0, 1, "OAUTHBEARER"), handshakeAnswer(0, 1, 0),
				rawToken(true, oauthFirst), rawToken(false, ""),
				saslProduce(2), saslAnswer(2),
			},
			want: want{exchanges: 1, mech: "OAUTHBEARER", user: "svc@example.com", ok: 1, tokens: 2},
		},
		{
			name: "v0 GSSAPI, rounds unknown",
			script: []msg{
				handshake(0, 1, "GSSAPI"), handshakeAnswer(0, 1, 0),
				rawToken(true, "\x60\x82\x02\x10\x06\x09*\x86H\x86\xf7\x12\x01\x02\x02"+gssSecret),
				rawToken(false, "\x60\x81\x90\x06\x09*\x86H\x86\xf7\x12\x01\x02\x02"+gssSecret),
				rawToken(true, ""),
				rawToken(false, "\x05\x04\x01\xff\x00\x0c\x00\x00"+gssSecret),
				rawToken(true, "\x05\x04\x00\xff\x00\x0c\x00\x00"+gssSecret),
				saslProduce(2), saslAnswer(2), saslProduce(3), saslAnswer(3),
			},
			want: want{exchanges: 2, mech: "GSSAPI", ok: 1, tokens: 5},
		},
		{
			name: "v0 handshake refused, then another mechanism",
			script: []msg{
				handshake(0, 1, "SCRAM-SHA-512"), handshakeAnswer(0, 1, 33),
				handshake(0, 2, "PLAIN"), handshakeAnswer(0, 2, 0),
				rawToken(true, plainToken), rawToken(false, ""),
				saslProduce(3), saslAnswer(3),
			},
			want: want{exchanges: 1, mech: "PLAIN", user: "alice", ok: 1, fails: 1, tokens: 2},
		},
		{
			name: "v0 PLAIN failed: the broker closes",
			script: []msg{
				handshake(0, 1, "PLAIN"), handshakeAnswer(0, 1, 0),
				rawToken(true, plainToken),
			},
			want: want{mech: "PLAIN", failed: true, fails: 1, tokens: 1},
		},
		{
			name: "v0 SCRAM failed: e= server-final",
			script: []msg{
				handshake(0, 1, "SCRAM-SHA-256"), handshakeAnswer(0, 1, 0),
				rawToken(true, scramClientFirst), rawToken(false, scramServerFirst),
				rawToken(true, scramClientFinal), rawToken(false, "e=invalid-proof"),
			},
			want: want{mech: "SCRAM-SHA-256", failed: true, fails: 1, tokens: 4},
		},
		{
			name: "v1 PLAIN, SaslAuthenticate v2",
			script: []msg{
				handshake(1, 1, "PLAIN"), handshakeAnswer(1, 1, 0),
				authenticate(2, 2, plainToken), authenticateAnswer(2, 2, 0, "", 3600000),
				saslProduce(3), saslAnswer(3), saslProduce(4), saslAnswer(4),
			},
			want: want{exchanges: 2, mech: "PLAIN", user: "alice", ok: 1},
		},
		{
			name: "v1 SCRAM-SHA-256, SaslAuthenticate v1",
			script: []msg{
				handshake(1, 1, "SCRAM-SHA-256"), handshakeAnswer(1, 1, 0),
				authenticate(1, 2, scramClientFirst), authenticateAnswer(1, 2, 0, scramServerFirst, 0),
				authenticate(1, 3, scramClientFinal), authenticateAnswer(1, 3, 0, scramServerFinal, 0),
				saslProduce(4), saslAnswer(4),
			},
			want: want{exchanges: 1, mech: "SCRAM-SHA-256", user: "bob,jr", ok: 1},
		},
		{
			name: "v1 GSSAPI ends at the next request",
			script: []msg{
				handshake(1, 1, "GSSAPI"), handshakeAnswer(1, 1, 0),
				authenticate(0, 2, "\x60\x82"+gssSecret), authenticateAnswer(0, 2, 0, "\x60\x81"+gssSecret, 0),
				authenticate(0, 3, ""), authenticateAnswer(0, 3, 0, "\x05\x04"+gssSecret, 0),
				authenticate(0, 4, "\x05\x04"+gssSecret), authenticateAnswer(0, 4, 0, "", 0),
				saslProduce(5), saslAnswer(5),
			},
			want: want{exchanges: 1, mech: "GSSAPI", ok: 1},
		},
		{
			name: "v1 failed",
			script: []msg{
				handshake(1, 1, "PLAIN"), handshakeAnswer(1, 1, 0),
				authenticate(2, 2, plainToken), authenticateAnswer(2, 2, 58, "", 0),
			},
			want: want{mech: "PLAIN", failed: true, fails: 1},
		},
		{
			name: "v1 failed: the broker closes unanswered",
			script: []msg{
				handshake(1, 1, "SCRAM-SHA-256"), handshakeAnswer(1, 1, 0),
				authenticate(1, 2, scramClientFirst), authenticateAnswer(1, 2, 0, scramServerFirst, 0),
				authenticate(1, 3, scramClientFinal),
			},
			want: want{mech: "SCRAM-SHA-256", failed: true, fails: 1},
		},
		{
			name: "re-authentication (KIP-368)",
			script: []msg{
				handshake(1, 1, "PLAIN"), handshakeAnswer(1, 1, 0),
				authenticate(2, 2, plainToken), authenticateAnswer(2, 2, 0, "", 1000),
				saslProduce(3), saslAnswer(3),
				saslProduce(4), handshake(1, 5, "PLAIN"), saslAnswer(4), handshakeAnswer(1, 5, 0),
				authenticate(2, 6, plainToken), authenticateAnswer(2, 6, 0, "", 1000),
				saslProduce(7), saslAnswer(7),
			},
			want: want{exchanges: 3, mech: "PLAIN", user: "alice", ok: 2},
		},
		{
			name: "re-authentication fails after produce",
			script: []msg{
				handshake(1, 1, "SCRAM-SHA-256"), handshakeAnswer(1, 1, 0),
				authenticate(1, 2, scramClientFirst), authenticateAnswer(1, 2, 0, scramServerFirst, 0),
				authenticate(1, 3, scramClientFinal), authenticateAnswer(1, 3, 0, scramServerFinal, 1000),
				saslProduce(4), saslAnswer(4),
				handshake(1, 5, "SCRAM-SHA-256"), handshakeAnswer(1, 5, 0),
				authenticate(1, 6, scramClientFirst), authenticateAnswer(1, 6, 58, "", 0),
			},
			// ConnInfo keeps what held when the exchange was handed on.
			want: want{exchanges: 1, mech: "SCRAM-SHA-256", user: "bob,jr", ok: 1, fails: 1, summaryUser: "-failed"},
		},
		{
			name: "SaslAuthenticate without its handshake in the capture",
			script: []msg{
				authenticate(2, 2, plainToken), authenticateAnswer(2, 2, 0, "", 0),
				saslProduce(3), saslAnswer(3),
			},
			want: want{exchanges: 1, ok: 1},
		},
	}
	splits := map[string]func([]byte) [][]byte{"whole": whole, "bytewise": bytewise, "cut at 3": cutAt(3), "cut at 7": cutAt(7)}
	for _, tt := range tests {
		for sname, split := range splits {
			t.Run(tt.name+"/"+sname, func(t *testing.T) {
				var s sink
				d := New(&s, Options{})
				c := feed(d, tt.script, split, true)
				for _, dir := range c.dirs {
					checkNoSecret(t, "frame buffer", string(dir.buf[:cap(dir.buf)]))
				}
				c.Close(t0.Add(time.Hour))
				st := d.Stats()
				if st.Malformed != 0 || st.Resyncs != 0 || st.DroppedBytes != 0 || st.Unmatched != 0 {
					t.Errorf("malformed %d, resyncs %d, dropped %d, unmatched %d; errors %q", st.Malformed, st.Resyncs, st.DroppedBytes, st.Unmatched, d.Errors())
				}
				w := tt.want
				if st.SASLAuthentications != w.ok || st.SASLFailures != w.fails || st.SASLTokens != w.tokens {
					t.Errorf("stats: %d authentications, %d failed, %d tokens; want %d, %d, %d",
						st.SASLAuthentications, st.SASLFailures, st.SASLTokens, w.ok, w.fails, w.tokens)
				}
				if len(s.xs) != w.exchanges {
					t.Fatalf("%d exchanges, want %d", len(s.xs), w.exchanges)
				}
				for _, x := range s.xs {
					if !x.Responded || len(x.Batches) != 1 || x.Batches[0].Response == nil || x.Batches[0].Response.BaseOffset != int64(x.CorrelationID) {
						t.Errorf("exchange %d not intact: %+v", x.CorrelationID, x)
					}
				}
				conns := d.Connections()
				if len(conns) != 1 {
					t.Fatalf("%d connections", len(conns))
				}
				info := conns[0].Info
				if info.SASLMechanism != w.mech || info.SASLUser != w.user || info.SASLFailed != w.failed {
					t.Errorf("ConnInfo: mechanism %q user %q failed %v; want %q %q %v", info.SASLMechanism, info.SASLUser, info.SASLFailed, w.mech, w.user, w.failed)
				}
				su, sf := w.user, w.failed
				if w.summaryUser == "-failed" {
					su, sf = "", true
				}
				if cs := conns[0]; cs.SASLMechanism != w.mech || cs.SASLUser != su || cs.SASLFailed != sf {
					t.Errorf("ConnSummary: mechanism %q user %q failed %v; want %q %q %v", cs.SASLMechanism, cs.SASLUser, cs.SASLFailed, w.mech, su, sf)
				}
				checkNoSecretIn(t, d, conns, s.xs)
				checkSASLSpans(t, tt.script, conns[0].SASLSpans)
			})
		}
	}
}

// TestSASLClientFirst delivers every client byte before any broker byte
// (as FuzzConn does): raw tokens are still told from frames, whichever
// direction is decoded first.
func TestSASLClientFirst(t *testing.T) {
	tokens := map[string]int64{"PLAIN": 2, "SCRAM": 4, "GSSAPI": 4}
	scripts := map[string][]msg{
		"PLAIN": {handshake(0, 1, "PLAIN"), handshakeAnswer(0, 1, 0), rawToken(true, plainToken), rawToken(false, ""),
			saslProduce(2), saslAnswer(2)},
		"SCRAM": {handshake(0, 1, "SCRAM-SHA-256"), handshakeAnswer(0, 1, 0), rawToken(true, scramClientFirst),
			rawToken(false, scramServerFirst), rawToken(true, scramClientFinal), rawToken(false, scramServerFinal),
			saslProduce(2), saslAnswer(2)},
		"GSSAPI": {handshake(0, 1, "GSSAPI"), handshakeAnswer(0, 1, 0), rawToken(true, "\x60\x82"+gssSecret),
			rawToken(false, "\x60\x81"+gssSecret), rawToken(true, "\x05\x04"+gssSecret), rawToken(false, "\x05\x04"+gssSecret),
			saslProduce(2), saslAnswer(2)},
	}
	for name, script := range scripts {
		t.Run(name, func(t *testing.T) {
			fromClient, fromBroker := streams(script)
			xs, st := decodeStreams(Options{}, fromClient, fromBroker, whole)
			if st.Malformed != 0 || st.Resyncs != 0 || len(xs) != 1 || !xs[0].Responded {
				t.Fatalf("malformed %d, resyncs %d, %d exchanges", st.Malformed, st.Resyncs, len(xs))
			}
			if st.SASLAuthentications != 1 || st.SASLTokens != tokens[name] || xs[0].Conn.SASLMechanism == "" {
				t.Errorf("stats %+v, conn %+v", st, xs[0].Conn)
			}
		})
	}
}

// checkNoSecret fails t when s holds any of the secrets.
func checkNoSecret(t *testing.T, where, s string) {
	t.Helper()
	for _, sec := range secrets {
		if strings.Contains(s, sec) {
			t.Errorf("%s holds the secret %q", where, sec)
		}
	}
}

// checkNoSecretIn looks for the secrets in everything the decoder gives:
// its errors, stats, connections (as printed and as JSON) and exchanges.
func checkNoSecretIn(t *testing.T, d *Decoder, conns []ConnSummary, xs []*Exchange) {
	t.Helper()
	checkNoSecret(t, "errors", strings.Join(d.Errors(), "\n"))
	for i, c := range conns {
		checkNoSecret(t, "connection", fmt.Sprintf("%+v %+v", c, *c.Info))
		j, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		checkNoSecret(t, fmt.Sprintf("connection %d JSON", i), string(j))
	}
	j, _ := json.Marshal(d.Stats())
	checkNoSecret(t, "stats JSON", string(j))
	for _, x := range xs {
		j, _ := json.Marshal(x)
		checkNoSecret(t, "exchange JSON", string(j))
	}
	for key, r := range d.reqs {
		if r == nil {
			continue
		}
		checkNoSecret(t, fmt.Sprintf("decoder's reused request %d", key), fmt.Sprintf("%+v", r))
	}
	if bytes.Contains([]byte(fmt.Sprintf("%+v", d.shared)), []byte(plainPassword)) {
		t.Errorf("shared state holds the password")
	}
}

// checkSASLSpans checks that the SASLSpans hold the times of every SASL
// frame of script (feed times message i at t0 + i ms) and of no produce
// frame, but for an answer to a request sent before the handshake.
func checkSASLSpans(t *testing.T, script []msg, spans []SASLSpan) {
	t.Helper()
	in := func(ts time.Time) bool {
		for _, sp := range spans {
			if !ts.Before(sp.From) && (sp.To.IsZero() || !ts.After(sp.To)) {
				return true
			}
		}
		return false
	}
	// produce says whether m is a produce frame, and its correlation ID
	// and whether it is the answer.
	produce := func(m msg) (bool, int32, bool) {
		for corr := int32(1); corr < 10; corr++ {
			if bytes.Equal(m.frame, saslProduce(corr).frame) {
				return true, corr, false
			}
			if bytes.Equal(m.frame, saslAnswer(corr).frame) {
				return true, corr, true
			}
		}
		return false, 0, false
	}
	sent := map[int32]time.Time{}
	for i, m := range script {
		ts := t0.Add(time.Duration(i) * time.Millisecond)
		p, corr, answer := produce(m)
		// An answer to a request sent before the span began may come
		// during it (KIP-368).
		before := answer && !in(sent[corr])
		switch {
		case p && in(ts) && !before:
			t.Errorf("message %d, a produce frame, is in the SASL spans %v", i, spans)
		case !p && !in(ts):
			t.Errorf("message %d, a SASL frame, is in no SASL span %v", i, spans)
		}
		if p && !answer {
			sent[corr] = ts
		}
	}
}

// TestSASLSpanFromFirstSegment: with no SaslHandshake captured, the span
// of an authentication starts at the packet that brought the first bytes
// of its SaslAuthenticate frame, not the one completing it: a long token
// (an OAUTHBEARER JWT) spans segments, and none of them may reach an
// evidence file.
func TestSASLSpanFromFirstSegment(t *testing.T) {
	d := New(nil, Options{})
	c := d.NewStream(client, broker, t0)
	frame := authenticate(1, 1, "n,,\x01auth=Bearer "+strings.Repeat("x", 3000)+"\x01\x01").frame
	first, second := t0.Add(time.Second), t0.Add(2*time.Second)
	c.Data(true, frame[:1000], first)
	c.Data(true, frame[1000:], second)
	conns := d.Connections()
	if len(conns) != 1 || len(conns[0].SASLSpans) != 1 {
		t.Fatalf("connections %+v: want one with one SASL span", conns)
	}
	if from := conns[0].SASLSpans[0].From; !from.Equal(first) {
		t.Errorf("the span starts at %v, want %v: the token's first segment", from, first)
	}
}

// TestSASLSpansReusedEnds: a new connection on the ends of an old one (a
// client port reused) keeps the old one's spans beside its own, so that
// evidence of a finding on either leaves both authentications out.
func TestSASLSpansReusedEnds(t *testing.T) {
	d := New(nil, Options{})
	old := &ConnSummary{Info: &ConnInfo{Client: client, Broker: broker}, SASLSpans: []SASLSpan{{From: t0, To: t0.Add(time.Second)}}}
	reused := &ConnSummary{Info: &ConnInfo{Client: client, Broker: broker}, SASLSpans: []SASLSpan{{From: t0.Add(time.Hour)}}}
	d.noteSASL(old)
	d.noteSASL(reused)
	if got := d.SASLSpans(broker, client); len(got) != 2 || !got[0].From.Equal(t0) || !got[1].From.Equal(t0.Add(time.Hour)) {
		t.Errorf("spans %v: want both connections'", got)
	}
	if len(d.saslOrder) != 1 {
		t.Errorf("the ends filed %d times in the order, want once", len(d.saslOrder))
	}
}
