package capture

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"time"

	"github.com/gopacket/gopacket/layers"
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
	w     *packetWriter
	n     int
}

// spanSnapLen is the snap length a SpanWriter's file declares: the packets
// are those of files read before, of any length their own snap length
// allowed, not known when the header is written. Readers take a larger
// snap length than theirs as theirs, and read the packets up to it.
const spanSnapLen = 1 << 24

// NewSpanWriter starts a file on w for the packets spans select, of the
// link types links (those of the capture files read; at least one). With
// keylog, the TLS secrets of the connections written, the file is a pcapng
// that carries them (see newPacketWriter).
func NewSpanWriter(w io.Writer, spans []ConnSpan, links []layers.LinkType, keylog []byte) (*SpanWriter, error) {
	if len(links) == 0 {
		links = []layers.LinkType{layers.LinkTypeEthernet}
	}
	s := &SpanWriter{dec: newDecoder(), spans: make(map[connKey][]ConnSpan)}
	for _, sp := range spans {
		k := keyOf(sp.A, sp.B)
		s.spans[k] = append(s.spans[k], sp)
	}
	pw, err := newPacketWriter(w, links, spanSnapLen, keylog)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	s.w = pw
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
	ok, err := s.w.write(p.CI, p.Data, p.LinkType)
	if err != nil {
		return false, fmt.Errorf("capture: writing packet: %w", err)
	}
	if ok {
		s.n++
	}
	return ok, nil
}

// Packets counts the packets written.
func (s *SpanWriter) Packets() int { return s.n }

// Flush writes out what is buffered.
func (s *SpanWriter) Flush() error { return s.w.flush() }
