package pipeline

import (
	"io"
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

// WriteEvidenceFile is WriteEvidence to a new file at path (truncated if
// it exists).
func (a *Analysis) WriteEvidenceFile(path string, findings []detect.Finding) (n int, err error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	return a.WriteEvidence(f, findings)
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
	spans := withoutSASL(evidenceSpans(findings, namedBy), authOf)
	sw, err := capture.NewSpanWriter(w, spans, links, a.tls.keysOf(spans))
	if err != nil {
		return 0, err
	}
	m, _ := a.in.open(nil)
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
