package tlsdecrypt

import (
	"bytes"
	"crypto/tls"
	"testing"
	"time"
)

// TestKeepClosed: with Options.KeepClosed, a connection that closes before
// its keys are in the key log (a live capture whose key log is written a
// little after each handshake) is kept: once they come, Wake hands on its
// plaintext and only then closes the next stream; if they never come,
// Flush gives it up as NoKey and closes it. Without the option it is
// given up at its Close.
func TestKeepClosed(t *testing.T) {
	s := goSession(t, &tls.Config{}, &tls.Config{Certificates: []tls.Certificate{ecdsaCert()}}, []int{5, 300})
	t.Run("keys come after the close", func(t *testing.T) {
		kl := NewKeyLog()
		d := New(kl, Options{KeepClosed: true})
		out, st := open(d, clientAddr)
		feedAll(st, s.events)
		st.Close(time.Unix(3, 0))
		if out.closed || len(out.data[0]) != 0 {
			t.Fatalf("closed %v, %d bytes before the keys came", out.closed, len(out.data[0]))
		}
		kl.Add(s.keylog, "late")
		d.Wake()
		if !out.closed || !bytes.Equal(out.data[0], s.sent[0]) || !bytes.Equal(out.data[1], s.sent[1]) {
			t.Errorf("after the keys: closed %v, %d and %d bytes, want %d and %d", out.closed,
				len(out.data[0]), len(out.data[1]), len(s.sent[0]), len(s.sent[1]))
		}
		if st := d.Conns()[0]; st.Status != Decrypted || !st.Closed {
			t.Errorf("state %v closed %v, want decrypted and closed", st.Status, st.Closed)
		}
	})
	t.Run("keys never come", func(t *testing.T) {
		d := New(NewKeyLog(), Options{KeepClosed: true})
		out, st := open(d, clientAddr)
		feedAll(st, s.events)
		st.Close(time.Unix(3, 0))
		d.Flush()
		if !out.closed || len(out.data[0])+len(out.data[1]) != 0 {
			t.Errorf("after Flush: closed %v, %d bytes", out.closed, len(out.data[0])+len(out.data[1]))
		}
		if st := d.Conns()[0]; st.Status != NoKey {
			t.Errorf("state %v, want no key", st.Status)
		}
	})
	t.Run("without the option", func(t *testing.T) {
		d := New(NewKeyLog(), Options{})
		out, st := open(d, clientAddr)
		feedAll(st, s.events)
		st.Close(time.Unix(3, 0))
		if !out.closed {
			t.Error("not closed at its Close")
		}
	})
}

// TestGapWhileWaiting: a TCP gap that comes while a connection waits for
// its keys gives, once they come, what the same bytes give with the keys
// there from the start: the bytes after the hole are framed anew (resync)
// with the keys, never taken for the rest of the record the hole cut.
func TestGapWhileWaiting(t *testing.T) {
	s := goSession(t, &tls.Config{}, &tls.Config{Certificates: []tls.Certificate{ecdsaCert()}}, []int{5, 300, 300, 300, 300})
	// The client's bytes cut in chunks, one chunk in the middle lost.
	var evs []event
	var clientChunks int
	for _, e := range s.events {
		for p := e.data; len(p) > 0; {
			n := min(len(p), 97)
			if e.fromA {
				clientChunks++
			}
			evs = append(evs, event{fromA: e.fromA, data: p[:n]})
			p = p[n:]
		}
	}
	lost, seen := clientChunks*2/3, 0
	for i := range evs {
		if evs[i].fromA {
			if seen == lost {
				evs[i] = event{fromA: true, gap: len(evs[i].data)}
				break
			}
			seen++
		}
	}
	kl := NewKeyLog()
	kl.Add(s.keylog, "keys")
	want := run(New(kl, Options{}), evs)

	late := NewKeyLog()
	d := New(late, Options{})
	got, st := open(d, clientAddr)
	feedAll(st, evs)
	late.Add(s.keylog, "keys")
	d.Wake()
	st.Close(time.Unix(3, 0))
	for i := range want.data {
		if !bytes.Equal(got.data[i], want.data[i]) {
			t.Errorf("direction %d: %d bytes with the keys late, %d with them there", i, len(got.data[i]), len(want.data[i]))
		}
	}
	if len(want.data[0]) == 0 || len(want.data[0]) >= len(s.sent[0]) {
		t.Errorf("harness: with the keys there, %d of %d client bytes: the gap should cut some, not all", len(want.data[0]), len(s.sent[0]))
	}
}
