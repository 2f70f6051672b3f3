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
