package pipeline

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
)

// Evidence is the packets that show a finding. An analysis writes them for
// all its findings to one file (--write-dups FILE, WriteEvidence): after
// the findings, the capture files are read a second time and every packet
// of the connections a finding relies on, within the time span it relies
// on them, goes to FILE:
//   - each attempt, from dupsMargin before it was sent to dupsMargin after
//     its answer (unanswered: after the finding's last answer, so that the
//     later response that showed it unanswered is kept; "connection closed":
//     to the end of the connection, so that the close is kept);
//   - each fetch that showed a copy of the batch, the EndTxn that ended its
//     transaction and the InitProducerId exchanges that gave its epochs;
//   - for a topic named by ID (Produce v13), the Metadata response that
//     named it;
//   - for a decrypted TLS connection, all of it from its handshake to the
//     end of its last span (tls.go): records cannot be decrypted without
//     the handshake and the records before them;
//   - but never the packets of a SASL authentication (sasl.go): no
//     password or token reaches FILE.
//
// FILE is a pcap of the input's link type, or a pcapng with one
// interface per link type when the inputs hold several. `kdupcap analyze
// FILE` finds the same findings, with one known difference: a batch
// confirmed fetched once needs every fetch that read on to the high
// watermark, which FILE does not keep, so its evidence reads
// produce_responses there. A live run writes a file per finding from the
// packets its Evidence ring holds (live.go).

// EvidenceMargin widens every span of the packets kept as a finding's
// evidence, analyze's and live's: it catches the first bytes of a request
// or response spread over several packets, a finding's times being those
// of the packets completing them.
const EvidenceMargin = 200 * time.Millisecond

// dupsMargin widens every span of --write-dups, as live's evidence.
const dupsMargin = EvidenceMargin

// evidenceSpans returns the connection spans the evidence of findings
// keeps; namedBy says which Metadata response named a topic ID.
func evidenceSpans(findings []detect.Finding, namedBy func([16]byte) (*decode.ConnInfo, time.Time, bool)) []capture.ConnSpan {
	var spans []capture.ConnSpan
	wire := func(x detect.WireExchange) {
		to := x.ResponseTime
		if to.IsZero() {
			to = x.RequestTime
		}
		spans = append(spans, capture.ConnSpan{A: x.Client, B: x.Broker,
			From: x.RequestTime.Add(-dupsMargin), To: to.Add(dupsMargin)})
	}
	for i := range findings {
		f := &findings[i]
		_, last := f.Span()
		for _, a := range f.Attempts {
			sp := capture.ConnSpan{A: a.Client, B: a.Broker, From: a.Time.Add(-dupsMargin)}
			switch {
			case a.Response != nil:
				sp.To = a.Response.Time.Add(dupsMargin)
			case a.NoResponse == decode.NoResponseClosed:
				// Open: to the connection's close.
			default:
				sp.To = last.Add(dupsMargin)
			}
			spans = append(spans, sp)
		}
		for _, x := range f.Fetches {
			wire(x)
		}
		if t := f.Transaction; t != nil {
			if t.End != nil {
				wire(*t.End)
			}
			for _, x := range t.Inits {
				wire(x)
			}
		}
		if f.TopicID != ([16]byte{}) {
			if c, at, ok := namedBy(f.TopicID); ok && c != nil {
				spans = append(spans, capture.ConnSpan{A: c.Client, B: c.Broker,
					From: at.Add(-dupsMargin), To: at.Add(dupsMargin)})
			}
		}
	}
	return spans
}

// EvidenceFile is the file of --write-dups, opened before the inputs are
// read (CreateEvidenceFile), so that a path that cannot be written fails
// at once and not after hours of reading, and written after the findings
// (Analysis.WriteEvidenceFile).
type EvidenceFile struct {
	f       *os.File
	created bool // it did not exist: Discard removes it
	trunc   bool // an existing regular file, truncated only when written
}

// CreateEvidenceFile opens path to write evidence to. It never writes over
// evidence of its own: it refuses path when it is one of the inputs (the
// same file, through a symlink or a hard link too; "-" is none), and when
// it is an existing regular file, unless overwrite (which is still never
// an input). An existing file is left as it is until written to. A device
// or a pipe (/dev/null, /dev/stdout) is written as it is. Every error
// names path.
func CreateEvidenceFile(path string, inputs []string, overwrite bool) (*EvidenceFile, error) {
	e := &EvidenceFile{}
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return nil, fmt.Errorf("%s: is a directory", path)
	case err == nil && st.Mode().IsRegular() && !overwrite:
		if in, ok := SameInput(st, inputs); ok {
			return nil, errIsInput(path, in)
		}
		return nil, fmt.Errorf("%s: file exists; give --force to overwrite it", path)
	case err == nil:
		e.f, err = os.OpenFile(path, os.O_WRONLY, 0)
		e.trunc = st.Mode().IsRegular()
	default:
		// Not there (or a dangling symlink, which O_EXCL refuses as
		// existing): created here, and by no one else meanwhile.
		e.f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		e.created = true
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("%s: file exists; give --force to overwrite it", path)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: cannot be written: %w", path, pathErr(err))
	}
	// The file opened, whatever path went through, is not an input.
	if st, err = e.f.Stat(); err == nil {
		if in, ok := SameInput(st, inputs); ok {
			e.Discard()
			return nil, errIsInput(path, in)
		}
	}
	return e, nil
}

// pathErr is err without the operation and path of an *fs.PathError, for
// a message that names the path once.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// SameInput returns the input that is the file of st (through a symlink or
// a hard link too; "-" is none): an output file that must never be one.
func SameInput(st os.FileInfo, inputs []string) (string, bool) {
	for _, in := range inputs {
		if in == "-" {
			continue
		}
		if ist, err := os.Stat(in); err == nil && os.SameFile(st, ist) {
			return in, true
		}
	}
	return "", false
}

func errIsInput(path, in string) error {
	if path == in {
		return fmt.Errorf("%s: is an input: evidence is never written over a capture", path)
	}
	return fmt.Errorf("%s: is the input %s (the same file): evidence is never written over a capture", path, in)
}

// Name is the file's path.
func (e *EvidenceFile) Name() string { return e.f.Name() }

// Discard closes the file unwritten, and removes it when
// CreateEvidenceFile created it: a run that ends before its evidence
// leaves no empty file, and an existing file as it was. It does nothing
// after WriteEvidenceFile.
func (e *EvidenceFile) Discard() {
	if e.f == nil {
		return
	}
	e.f.Close()
	if e.created {
		os.Remove(e.f.Name())
	}
	e.f = nil
}

// WriteEvidenceFile is WriteEvidence to e, which it closes; an existing
// file is truncated first.
func (a *Analysis) WriteEvidenceFile(e *EvidenceFile, findings []detect.Finding) (n int, err error) {
	f := e.f
	e.f = nil
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if e.trunc {
		if err := f.Truncate(0); err != nil {
			return 0, err
		}
	}
	return a.WriteEvidence(f, findings)
}

// CheckEvidenceDir makes dir, as live's evidence directory, and checks a
// file can be created in it, so that live fails at its start rather than
// at its first finding.
func CheckEvidenceDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s: cannot be made: %w", dir, pathErr(err))
	}
	f, err := os.CreateTemp(dir, ".kdupcap-check-*")
	if err != nil {
		return fmt.Errorf("%s: no file can be created in it: %w", dir, pathErr(err))
	}
	f.Close()
	return os.Remove(f.Name())
}

// WriteEvidence writes to w, after Finish, every packet of the inputs
// that the findings rely on (see above): the inputs are read a second time.
// It returns the packets written. Input errors are not reported again: Read
// said them.
func (a *Analysis) WriteEvidence(w io.Writer, findings []detect.Finding) (int, error) {
	var (
		links   []layers.LinkType
		namedBy func([16]byte) (*decode.ConnInfo, time.Time, bool)
	)
	var authOf func(a, b netip.AddrPort) []decode.SASLSpan
	if a.sharded != nil {
		links, namedBy, authOf = a.sharded.links, a.sharded.shared.TopicNamedBy, a.sharded.saslSpans
	} else {
		links, namedBy, authOf = a.single.links, a.single.dec.TopicNamedBy, a.single.dec.SASLSpans
	}
	spans := withoutSASL(a.tls.fromHandshake(evidenceSpans(findings, namedBy)), authOf)
	sw, err := capture.NewSpanWriter(w, spans, links, a.tls.keysOf(spans))
	if err != nil {
		return 0, err
	}
	m, _ := a.in.open()
	defer m.Close()
	var werr error
	eachPacket(m, nil, Inputs{MaxBytes: a.in.MaxBytes}, func(pkt capture.Packet) {
		if werr == nil {
			_, werr = sw.Add(pkt)
		}
	})
	if werr != nil {
		return 0, werr
	}
	if err := sw.Flush(); err != nil {
		return 0, err
	}
	return sw.Packets(), nil
}
