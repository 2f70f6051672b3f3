package tlsdecrypt

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

var updateSeeds = flag.Bool("update-seeds", false, "regenerate testdata/seeds from live TLS connections")

// seedNames are the recorded connections under testdata/seeds: events
// (encodeEvents), the client's key log, and what each side sent.
var seedNames = []string{"tls13-aes128gcm", "tls12-ecdsa-aes128cbc"}

// TestSeeds checks the recorded seeds still decrypt; with -update-seeds
// it records them again first.
func TestSeeds(t *testing.T) {
	if *updateSeeds {
		ec := ecdsaCert()
		cfgs := [][2]*tls.Config{
			{{}, {Certificates: []tls.Certificate{ec}}},
			{{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}}, {Certificates: []tls.Certificate{ec}}},
		}
		for i, name := range seedNames {
			s := goSession(t, cfgs[i][0], cfgs[i][1], []int{5, 300})
			base := filepath.Join("testdata", "seeds", name)
			os.MkdirAll(filepath.Dir(base), 0o755)
			for ext, data := range map[string][]byte{".events": encodeEvents(s.events), ".keylog": s.keylog, ".sent0": s.sent[0], ".sent1": s.sent[1]} {
				if err := os.WriteFile(base+ext, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	sessions, keys := loadSeeds(t)
	for i, s := range sessions {
		d := New(keyLogOf(t, keys), Options{})
		got := run(d, s.events)
		if !bytes.Equal(got.data[0], s.sent[0]) || !bytes.Equal(got.data[1], s.sent[1]) {
			t.Errorf("%s: does not decrypt", seedNames[i])
		}
	}
}

// loadSeeds reads the recorded connections; a missing file fails.
func loadSeeds(t testing.TB) ([]*session, []byte) {
	var sessions []*session
	var keys []byte
	for _, name := range seedNames {
		base := filepath.Join("testdata", "seeds", name)
		read := func(ext string) []byte {
			b, err := os.ReadFile(base + ext)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		s := &session{events: decodeEvents(read(".events")), keylog: read(".keylog")}
		s.sent = [2][]byte{read(".sent0"), read(".sent1")}
		sessions = append(sessions, s)
		keys = append(keys, s.keylog...)
	}
	return sessions, keys
}

// encodeEvents writes events as flag (bit 0: from A, bit 1: gap), a
// 2-byte length and the data (none for a gap).
func encodeEvents(evs []event) []byte {
	var out []byte
	for _, e := range evs {
		for p := e.data; len(p) > 0; {
			n := min(len(p), 0xffff)
			out = append(out, b2i(e.fromA), byte(n>>8), byte(n))
			out = append(out, p[:n]...)
			p = p[n:]
		}
	}
	return out
}

func b2i(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func decodeEvents(in []byte) []event {
	var evs []event
	for len(in) >= 3 {
		flag, n := in[0], int(binary.BigEndian.Uint16(in[1:3]))
		in = in[3:]
		if flag&2 != 0 {
			evs = append(evs, event{fromA: flag&1 != 0, gap: n + 1})
			continue
		}
		n = min(n, len(in))
		evs = append(evs, event{fromA: flag&1 != 0, data: in[:n]})
		in = in[n:]
	}
	return evs
}

// isSubsequence reports whether a is a subsequence of b.
func isSubsequence(a, b []byte) bool {
	for _, c := range a {
		i := bytes.IndexByte(b, c)
		if i < 0 {
			return false
		}
		b = b[i+1:]
	}
	return true
}

// FuzzRecords feeds arbitrary events (the recorded connections, mutated)
// into a connection. Invariants: no panic; without a key no plaintext;
// with the key, only bytes each side really sent, in their order; bytes
// not taken for TLS pass through unchanged.
func FuzzRecords(f *testing.F) {
	sessions, keys := loadSeeds(f)
	for _, s := range sessions {
		f.Add(false, encodeEvents(s.events))
		f.Add(true, encodeEvents(s.events))
		f.Add(false, encodeEvents(chunks(s.events, splitRandom, 1)))
	}
	f.Add(false, []byte{1, 0, 8, 0, 0, 0, 4, 0, 1, 2, 3})
	f.Fuzz(func(t *testing.T, noKey bool, in []byte) {
		evs := decodeEvents(in)
		kl := keyLogOf(t, keys)
		if noKey {
			kl = NewKeyLog()
		}
		d := New(kl, Options{MaxBufferPerConn: 64 << 10, MaxGapRecords: 4})
		s := run(d, evs)
		var raw [2][]byte
		for _, e := range evs {
			if e.gap == 0 {
				raw[idx(e.fromA)] = append(raw[idx(e.fromA)], e.data...)
			}
		}
		cs := d.Conns()
		if len(cs) == 0 {
			for i := range raw {
				if !bytes.Equal(s.data[i], raw[i]) {
					t.Fatalf("direction %d: pass-through changed the bytes", i)
				}
			}
			return
		}
		if cs[0].Status == MidStream {
			for i := range raw {
				if !bytes.HasPrefix(raw[i], s.data[i]) {
					t.Fatalf("direction %d: mid-stream bytes not the raw bytes", i)
				}
			}
			return
		}
		for i := range s.data {
			if len(s.data[i]) == 0 {
				continue
			}
			if noKey {
				t.Fatalf("direction %d: %d plaintext bytes without a key", i, len(s.data[i]))
			}
			ok := false
			for _, sess := range sessions {
				ok = ok || isSubsequence(s.data[i], sess.sent[i])
			}
			if !ok {
				t.Fatalf("direction %d: %d bytes never sent", i, len(s.data[i]))
			}
		}
	})
}

var hexRun = regexp.MustCompile(`[0-9a-fA-F]{16,}`)

// FuzzKeyLog parses arbitrary key log text. Invariants: no panic; no
// message shows a run of hex digits (a secret); what was stored prints as
// lines that parse back to the same store.
func FuzzKeyLog(f *testing.F) {
	_, keys := loadSeeds(f)
	f.Add(keys)
	f.Add([]byte("# comment\n\nCLIENT_RANDOM 00 11\nEXPORTER_SECRET x y\r\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		k := NewKeyLog()
		k.Add(text, "f")
		for _, m := range k.Malformed() {
			if hexRun.MatchString(m) {
				t.Fatalf("message shows hex: %q", m)
			}
		}
		lines := k.allLines()
		k2 := NewKeyLog()
		for _, l := range lines {
			if err := k2.AddLine(l); err != nil {
				t.Fatalf("stored line does not parse: %v", err)
			}
		}
		if got := k2.allLines(); !slices.Equal(got, lines) {
			t.Fatalf("round trip: %d lines, want %d", len(got), len(lines))
		}
		_ = k.String()
	})
}
