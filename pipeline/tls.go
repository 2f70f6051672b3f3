package pipeline

import (
	"fmt"
	"net/netip"
	"os"
	"slices"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/capture/tlsdecrypt"
	"github.com/kdupcap/kdupcap/report"
)

// tlsLayer is a run's TLS decryption: the key log (Options.TLSKeyLogs and
// the capture's own pcapng secrets blocks) and the Decrypter every
// connection passes through between reassembly and Kafka decoding. A
// connection that is not TLS passes through untouched; one that is gives
// decode its application data, decrypted, or nothing.
type tlsLayer struct {
	keys  *tlsdecrypt.KeyLog
	dec   *tlsdecrypt.Decrypter
	files []string
	// read: the key log files were read (once).
	read bool
}

// newTLSLayer is the TLS layer of a run reading the key log files; a live
// one (follow) keeps connections that close before their keys come.
func newTLSLayer(files []string, ports []uint16, follow bool) *tlsLayer {
	keys := tlsdecrypt.NewKeyLog()
	return &tlsLayer{keys: keys, dec: tlsdecrypt.New(keys, tlsdecrypt.Options{Ports: ports, KeepClosed: follow}), files: files}
}

// load reads the key log files, once; an error names its file. A
// malformed line is counted, never an error (Malformed).
func (t *tlsLayer) load() []error {
	if t.read {
		return nil
	}
	t.read = true
	var errs []error
	for _, name := range t.files {
		f, err := os.Open(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("--tls-keylog: %w", err))
			continue
		}
		if _, err := t.keys.Load(f, name); err != nil {
			errs = append(errs, err)
		}
		f.Close()
	}
	return errs
}

// secrets takes the key log of a pcapng Decryption Secrets Block
// (capture.MergeOptions.OnSecrets).
func (t *tlsLayer) secrets(source string, keylog []byte) {
	t.keys.Add(keylog, source+" (pcapng secrets)")
}

// wrap puts the Decrypter in front of the streams f makes.
func (t *tlsLayer) wrap(f capture.NewStreamFunc) capture.NewStreamFunc { return t.dec.Wrap(f) }

// fromHandshake makes the spans of every decrypted TLS connection one: from
// the connection's first packet, its handshake, to the end of its last span
// (open when one is). Evidence that is to be decrypted again needs the
// handshake, and every record after it up to the last one kept: each
// record's nonce or MAC counts the records before it
// (tlsdecrypt.Decrypter.DecryptedSince). Other spans are left as they are.
func (t *tlsLayer) fromHandshake(spans []capture.ConnSpan) []capture.ConnSpan {
	var (
		out   []capture.ConnSpan
		whole = map[[2]netip.AddrPort]int{} // its span in out
	)
	for _, sp := range spans {
		start, ok := t.dec.DecryptedSince(sp.A, sp.B)
		if !ok {
			out = append(out, sp)
			continue
		}
		k := pairKey(sp.A, sp.B)
		i, seen := whole[k]
		if !seen {
			whole[k] = len(out)
			out = append(out, capture.ConnSpan{A: sp.A, B: sp.B, From: start, To: sp.To})
			continue
		}
		if w := &out[i]; !w.To.IsZero() && (sp.To.IsZero() || sp.To.After(w.To)) {
			w.To = sp.To
		}
	}
	return out
}

// keysOf is the key log of the TLS connections spans select that were
// decrypted: exactly their secrets, each line once, for an evidence file
// that opens decrypted with no other file. Nil when none was.
func (t *tlsLayer) keysOf(spans []capture.ConnSpan) []byte {
	var (
		out  []byte
		seen = map[string]bool{}
		done = map[[2]netip.AddrPort]bool{}
	)
	for _, sp := range spans {
		k := pairKey(sp.A, sp.B)
		if done[k] {
			continue
		}
		done[k] = true
		for _, line := range t.dec.KeyLines(sp.A, sp.B) {
			if !seen[line] {
				seen[line] = true
				out = append(append(out, line...), '\n')
			}
		}
	}
	return out
}

// Malformed returns the messages of the key log lines that did not parse.
func (t *tlsLayer) malformed() []string { return t.keys.Malformed() }

// summary is the report's view of the TLS connections; nil when there was
// no TLS connection and no key log, so that plaintext runs report as they
// always did.
func (t *tlsLayer) summary() *report.TLSSummary {
	st, ks := t.dec.Stats(), t.keys.Stats()
	if st.Conns == 0 && ks.Lines == 0 && ks.Malformed == 0 {
		return nil
	}
	conns := t.dec.Conns()
	// Sharded Assemblers recognise connections in no fixed order: list
	// them in the capture's.
	slices.SortStableFunc(conns, func(a, b tlsdecrypt.ConnState) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		if c := a.Client.Compare(b.Client); c != 0 {
			return c
		}
		return a.Broker.Compare(b.Broker)
	})
	s := &report.TLSSummary{
		Omitted: st.ConnsUnlisted, Total: st.Conns,
		Decrypted: st.Decrypted(), NoKey: st.NoKey(), MidStream: st.MidStream(), BadMAC: st.BadMAC(),
		Undecryptable: st.Undecryptable(), BadMACRecords: st.BadMACs,
		KeyLogLines: ks.Lines, KeyLogMalformed: ks.Malformed,
	}
	for _, c := range conns {
		s.Connections = append(s.Connections, report.TLSConnection{
			Client: c.Client, Broker: c.Broker, Version: c.VersionName(), CipherSuite: c.SuiteName(), SNI: c.SNI,
			Status: c.Status.String(), Reason: c.Reason, Resumed: c.Resumed, KeyUpdates: c.KeyUpdates,
			BadMACs: c.BadMACs, Bytes: c.Bytes,
		})
	}
	return s
}
