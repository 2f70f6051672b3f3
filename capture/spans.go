package capture

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// ConnSpan selects the packets of one TCP connection, either direction,
// captured within [From, To]; a zero From or To leaves that end open.
type ConnSpan struct {
	A, B     netip.AddrPort
	From, To time.Time
}

// SpanWriter writes the packets its ConnSpans select, as read again from
// the capture files, to one file: a pcap of the single link type it was
// given, or, given several, a pcapng with one interface per link type (a
// pcap holds one link type; converting frames from one link type to another
// would invent bytes that were never captured). Packets keep their
// timestamps and captured bytes, so analyze reads the file as it read the
// originals.
type SpanWriter struct {
	dec   *decoder
	spans map[connKey][]ConnSpan
	bw    *bufio.Writer
	pw    *pcapgo.Writer
	nw    *pcapgo.NgWriter
	ifs   map[layers.LinkType]int
	link  layers.LinkType // the pcap's
	n     int
}

// NewSpanWriter starts a file on w for the packets spans select, of the
// link types links (those of the capture files read; at least one).
func NewSpanWriter(w io.Writer, spans []ConnSpan, links []layers.LinkType) (*SpanWriter, error) {
	if len(links) == 0 {
		links = []layers.LinkType{layers.LinkTypeEthernet}
	}
	s := &SpanWriter{dec: newDecoder(), spans: make(map[connKey][]ConnSpan)}
	for _, sp := range spans {
		k := keyOf(sp.A, sp.B)
		s.spans[k] = append(s.spans[k], sp)
	}
	if len(links) == 1 {
		s.bw = bufio.NewWriter(w)
		s.pw, s.link = pcapgo.NewWriterNanos(s.bw), links[0]
		if err := s.pw.WriteFileHeader(262144, links[0]); err != nil {
			return nil, fmt.Errorf("capture: writing pcap header: %w", err)
		}
		return s, nil
	}
	iface := func(link layers.LinkType) pcapgo.NgInterface {
		return pcapgo.NgInterface{Name: fmt.Sprintf("link%d", link), LinkType: link, TimestampResolution: 9, SnapLength: 262144}
	}
	opts := pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: "kdupcap"}}
	nw, err := pcapgo.NewNgWriterInterface(w, iface(links[0]), opts)
	if err != nil {
		return nil, fmt.Errorf("capture: writing pcapng header: %w", err)
	}
	s.nw, s.ifs = nw, map[layers.LinkType]int{links[0]: 0}
	for _, l := range links[1:] {
		if _, ok := s.ifs[l]; ok {
			continue
		}
		id, err := nw.AddInterface(iface(l))
		if err != nil {
			return nil, fmt.Errorf("capture: writing pcapng interface: %w", err)
		}
		s.ifs[l] = id
	}
	return s, nil
}

// Add writes p if a span selects it, reporting whether it did. A packet of
// a link type not given to NewSpanWriter is not written.
func (s *SpanWriter) Add(p Packet) (bool, error) {
	if s.dec.decode(p.LinkType, p.Data) != decodedTCP {
		return false, nil
	}
	ts := p.CI.Timestamp
	if !slices.ContainsFunc(s.spans[keyOf(s.dec.src, s.dec.dst)], func(sp ConnSpan) bool {
		return (sp.From.IsZero() || !ts.Before(sp.From)) && (sp.To.IsZero() || !ts.After(sp.To))
	}) {
		return false, nil
	}
	ci := p.CI
	ci.AncillaryData = nil
	var err error
	if s.pw != nil {
		if p.LinkType != s.link {
			return false, nil // a link type not announced: cannot be written
		}
		err = s.pw.WritePacket(ci, p.Data)
	} else {
		id, ok := s.ifs[p.LinkType]
		if !ok {
			return false, nil // a link type not announced: cannot be written
		}
		ci.InterfaceIndex = id
		err = s.nw.WritePacket(ci, p.Data)
	}
	if err != nil {
		return false, fmt.Errorf("capture: writing packet: %w", err)
	}
	s.n++
	return true, nil
}

// Packets counts the packets written.
func (s *SpanWriter) Packets() int { return s.n }

// Flush writes out what is buffered.
func (s *SpanWriter) Flush() error {
	if s.pw != nil {
		return s.bw.Flush()
	}
	return s.nw.Flush()
}
