package tlsdecrypt

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// TestResumption: TLS 1.2 and 1.3 sessions resumed by ticket decrypt with
// the resumed handshake's key log line, and TLS 1.2 ones also with only the
// original connection's line (the master secret remembered by ticket).
func TestResumption(t *testing.T) {
	t.Parallel()
	_, rs := certs(t)
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		t.Run(tls.VersionName(v), func(t *testing.T) {
			ccfg := &tls.Config{MaxVersion: v, ClientSessionCache: tls.NewLRUClientSessionCache(4)}
			scfg := &tls.Config{Certificates: []tls.Certificate{rs}}
			first := goSession(t, ccfg, scfg, sizes[:2])
			second := goSession(t, ccfg, scfg, sizes[:3])
			if !second.state.DidResume {
				t.Fatal("second session not resumed")
			}
			logs := map[string][]byte{"both-lines": append(append([]byte(nil), first.keylog...), second.keylog...)}
			if v == tls.VersionTLS12 {
				logs["original-line-only"] = first.keylog
			}
			for name, kl := range logs {
				t.Run(name, func(t *testing.T) {
					d := New(keyLogOf(t, kl), Options{})
					c2 := netip.MustParseAddrPort("10.0.0.1:51001")
					s1, st1 := open(d, clientAddr)
					feedAll(st1, chunks(first.events, splitRandom, 4))
					st1.Close(time.Unix(3, 0))
					s2, st2 := open(d, c2)
					feedAll(st2, chunks(second.events, splitRandom, 5))
					st2.Close(time.Unix(3, 0))
					for i, pair := range []struct {
						s    *sink
						sess *session
					}{{s1, first}, {s2, second}} {
						if !bytes.Equal(pair.s.data[0], pair.sess.sent[0]) || !bytes.Equal(pair.s.data[1], pair.sess.sent[1]) {
							t.Errorf("connection %d: plaintext differs", i+1)
						}
					}
					cs := d.Conns()
					if len(cs) != 2 || cs[0].Status != Decrypted || cs[1].Status != Decrypted || !cs[1].Resumed || cs[0].Resumed {
						t.Fatalf("states %+v", cs)
					}
					lines := d.KeyLines(c2, brokerAddr)
					if len(lines) == 0 {
						t.Fatal("no KeyLines for the resumed connection")
					}
					// The lines given for evidence decrypt the connection alone.
					d2 := New(keyLogOf(t, []byte(fmt.Sprintln(joinLines(lines)))), Options{})
					s := run(d2, chunks(second.events, splitEvents, 0))
					if !bytes.Equal(s.data[0], second.sent[0]) {
						t.Error("KeyLines do not decrypt the connection")
					}
				})
			}
		})
	}
}

func joinLines(l []string) string {
	var b bytes.Buffer
	for _, s := range l {
		b.WriteString(s + "\n")
	}
	return b.String()
}

// TestGaps: records lost in a TCP gap are skipped; the records after it
// are found again and decrypted, and nothing else is handed on.
func TestGaps(t *testing.T) {
	t.Parallel()
	for _, tc := range goCases(t) {
		if tc.name == "tls13-hrr" || tc.name == "tls12-ecdsa-aes128gcm" {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sess := goSession(t, tc.ccfg, tc.scfg, []int{5, 700, 40000, 3, 40000, 9})
			// Writes of the client's 40000-byte messages: whole records.
			var big []int
			for i, e := range sess.events {
				if e.fromA && len(e.data) > 1000 {
					big = append(big, i)
				}
			}
			if len(big) < 4 {
				t.Fatalf("only %d large client writes", len(big))
			}
			for _, gc := range []struct {
				name string
				cut  func([]event) []event
			}{
				{"whole-record", func(evs []event) []event {
					evs = append([]event(nil), evs...)
					i := big[1]
					evs[i] = event{fromA: true, gap: len(evs[i].data)}
					return evs
				}},
				{"three-records", func(evs []event) []event {
					var out []event
					for i, e := range evs {
						if i == big[1] || i == big[2] || i == big[3] {
							e = event{fromA: true, gap: len(e.data)}
						}
						out = append(out, e)
					}
					return out
				}},
				{"mid-record", func(evs []event) []event {
					var out []event
					for i, e := range evs {
						if i == big[1] {
							out = append(out, event{fromA: true, data: e.data[:100]}, event{fromA: true, gap: len(e.data) - 100 + 37})
							continue
						}
						if i == big[1]+1 && evs[i].fromA {
							out = append(out, event{fromA: true, data: e.data[37:]})
							continue
						}
						out = append(out, e)
					}
					return out
				}},
			} {
				for _, mode := range []split{splitEvents, splitRandom} {
					t.Run(gc.name+"/"+mode.String(), func(t *testing.T) {
						d := New(keyLogOf(t, sess.keylog), Options{})
						s := run(d, chunks(gc.cut(sess.events), mode, 6))
						got, want := s.data[0], sess.sent[0]
						p := commonPrefix(got, want)
						if !bytes.HasSuffix(want[p:], got[p:]) {
							t.Fatalf("after the gap: %d bytes that are not the end of what was sent", len(got)-p)
						}
						if len(got) == p || len(got) == len(want) {
							t.Errorf("nothing recovered after the gap (%d of %d bytes)", len(got), len(want))
						}
						if !bytes.Equal(s.data[1], sess.sent[1]) {
							t.Error("the other direction was disturbed")
						}
						if s.gaps[0] == 0 {
							t.Error("gap not passed on")
						}
						if cs := onlyConn(t, d); cs.Status != Decrypted || cs.BadMACs != 0 {
							t.Errorf("state %s (%s), %d bad MACs", cs.Status, cs.Reason, cs.BadMACs)
						}
					})
				}
			}
		})
	}
}

// TestGapTooLong: more lost records than MaxGapRecords leave the rest of
// that direction undecryptable, never garbage.
func TestGapTooLong(t *testing.T) {
	t.Parallel()
	tc := goCases(t)[0]
	sess := goSession(t, tc.ccfg, tc.scfg, []int{5, 40000, 40000, 40000, 9})
	var evs []event
	lost := 0
	for i, e := range sess.events {
		if i > 4 && e.fromA && len(e.data) > 1000 && lost < 5 {
			lost++
			evs = append(evs, event{fromA: true, gap: len(e.data)})
			continue
		}
		evs = append(evs, e)
	}
	d := New(keyLogOf(t, sess.keylog), Options{MaxGapRecords: 3})
	s := run(d, chunks(evs, splitEvents, 0))
	if !bytes.HasPrefix(sess.sent[0], s.data[0]) {
		t.Fatal("garbage after a long gap")
	}
	if cs := onlyConn(t, d); cs.Status != Undecryptable || cs.LostBytes == 0 {
		t.Errorf("state %s (%s), lost %d", cs.Status, cs.Reason, cs.LostBytes)
	}
}

// TestLateKeys: records that arrive before their keys are kept and
// decrypted, in order, when the keys arrive; beyond the bound the
// connection is NoKey and nothing is handed on.
func TestLateKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range goCases(t)[:3] {
		sess := goSession(t, tc.ccfg, tc.scfg, sizes)
		chs := chunks(sess.events, splitRandom, 8)
		t.Run(tc.name, func(t *testing.T) {
			k := NewKeyLog()
			d := New(k, Options{})
			s, st := open(d, clientAddr)
			half := len(chs) * 2 / 3
			feedAll(st, chs[:half])
			if len(s.data[0])+len(s.data[1]) != 0 {
				t.Fatal("plaintext before the keys")
			}
			if cs := onlyConn(t, d); cs.Status != NoKey {
				t.Errorf("waiting: status %s", cs.Status)
			}
			k.Add(sess.keylog, "late")
			feedAll(st, chs[half:])
			st.Close(time.Unix(3, 0))
			if !bytes.Equal(s.data[0], sess.sent[0]) || !bytes.Equal(s.data[1], sess.sent[1]) {
				t.Fatalf("got %d+%d bytes, want %d+%d", len(s.data[0]), len(s.data[1]), len(sess.sent[0]), len(sess.sent[1]))
			}
			if cs := onlyConn(t, d); cs.Status != Decrypted {
				t.Errorf("status %s", cs.Status)
			}
			if d.buffered.Load() != 0 {
				t.Errorf("%d bytes still counted as buffered", d.buffered.Load())
			}
		})
		t.Run(tc.name+"/bound", func(t *testing.T) {
			k := NewKeyLog()
			d := New(k, Options{MaxBufferPerConn: 4000})
			s, st := open(d, clientAddr)
			half := len(chs) * 2 / 3
			feedAll(st, chs[:half])
			k.Add(sess.keylog, "late")
			feedAll(st, chs[half:])
			st.Close(time.Unix(3, 0))
			if len(s.data[0])+len(s.data[1]) != 0 {
				t.Fatal("plaintext after the bound was hit")
			}
			if cs, st := onlyConn(t, d), d.Stats(); cs.Status != NoKey || st.BufferLimits != 1 {
				t.Errorf("status %s, %d bound hits", cs.Status, st.BufferLimits)
			}
			if d.buffered.Load() != 0 {
				t.Errorf("%d bytes still counted as buffered", d.buffered.Load())
			}
		})
	}
}

// TestStatsAndList: Stats count every connection, Conns lists the first
// MaxConns.
func TestStatsAndList(t *testing.T) {
	t.Parallel()
	tc := goCases(t)[0]
	sess := goSession(t, tc.ccfg, tc.scfg, sizes[:2])
	d := New(keyLogOf(t, sess.keylog), Options{MaxConns: 2})
	for i := range 5 {
		_, st := open(d, netip.AddrPortFrom(clientAddr.Addr(), uint16(40000+i)))
		feedAll(st, sess.events)
		st.Close(time.Unix(3, 0))
	}
	st := d.Stats()
	if st.Conns != 5 || st.Decrypted() != 5 || st.ConnsUnlisted != 3 || len(d.Conns()) != 2 {
		t.Errorf("stats %+v, %d listed", st, len(d.Conns()))
	}
	if st.Bytes != 5*int64(len(sess.sent[0])+len(sess.sent[1])) {
		t.Errorf("Bytes %d", st.Bytes)
	}
}
