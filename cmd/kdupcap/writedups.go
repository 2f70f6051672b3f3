package main

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/gopacket/gopacket/layers"
	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/detect"
)

// --write-dups FILE (analyze): after the findings, the capture files are
// read a second time and every packet of the connections a finding relies
// on, within the time span it relies on them, goes to FILE:
//   - each attempt, from dupsMargin before it was sent to dupsMargin after
//     its answer (unanswered: after the finding's last answer, so that the
//     later response that showed it unanswered is kept; "connection closed":
//     to the end of the connection, so that the close is kept);
//   - each fetch that showed a copy of the batch, the EndTxn that ended its
//     transaction and the InitProducerId exchanges that gave its epochs;
//   - for a topic named by ID (Produce v13), the Metadata response that
//     named it.
//
// The margin catches the first bytes of a request or response spread over
// several packets (a finding's times are those of the packets completing
// them). FILE is a pcap of the input's link type, or a pcapng with one
// interface per link type when the inputs hold several. `kdupcap analyze
// FILE` finds the same findings, with one known difference: a batch
// confirmed fetched once needs every fetch that read on to the high
// watermark, which FILE does not keep, so its evidence reads
// produce_responses there.

// writeDupsUsage is the help text of --write-dups.
const writeDupsUsage = "write every packet of every finding's attempts and responses (and the fetches and transaction requests it relies on) to `FILE`, a pcap that analyze reads back into the same findings"

// dupsMargin widens every span of --write-dups, as live's evidence.
const dupsMargin = evidenceMargin

// noteLink records the link type of a packet read.
func (p *pipeline) noteLink(l layers.LinkType) {
	if !slices.Contains(p.links, l) {
		p.links = append(p.links, l)
	}
}

// dupSpans returns the connection spans --write-dups keeps for findings.
func (p *pipeline) dupSpans(findings []detect.Finding) []capture.ConnSpan {
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
		_, last := findingSpan(*f)
		for _, a := range f.Attempts {
			sp := capture.ConnSpan{A: a.Client, B: a.Broker, From: a.Time.Add(-dupsMargin)}
			switch {
			case a.Response != nil:
				sp.To = a.Response.Time.Add(dupsMargin)
			case a.NoResponse == "connection closed":
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
			if c, at, ok := p.dec.TopicNamedBy(f.TopicID); ok && c != nil {
				spans = append(spans, capture.ConnSpan{A: c.Client, B: c.Broker,
					From: at.Add(-dupsMargin), To: at.Add(dupsMargin)})
			}
		}
	}
	return spans
}

// writeDups writes the --write-dups file of findings.
func (p *pipeline) writeDups(cfg *analyzeConfig, findings []detect.Finding, stderr io.Writer) (err error) {
	f, err := os.Create(cfg.writeDups)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	w, err := capture.NewSpanWriter(f, p.dupSpans(findings), p.links)
	if err != nil {
		return err
	}
	// Files that failed to open were reported by the first pass.
	m, _ := openMerged(cfg.files, cfg.skew, nil)
	defer m.Close()
	var werr error
	eachPacket(m, nil, func(pkt capture.Packet) { // input errors: reported by the first pass
		if werr == nil {
			_, werr = w.Add(pkt)
		}
	})
	if werr != nil {
		return werr
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "kdupcap: wrote %d packets of %d findings to %s\n", w.Packets(), len(findings), cfg.writeDups)
	return nil
}
