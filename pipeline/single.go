package pipeline

import (
	"net/netip"
	"slices"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
)

// single is the run on one goroutine: capture -> decode -> detect.
type single struct {
	asm *capture.Assembler
	dec *decode.Decoder
	det *detect.Detector
	// links are the link types of the packets read (for --write-dups).
	links []layers.LinkType
}

// stages is what a run is made of, for single and sharded alike.
type stages struct {
	det detect.Options
	dec decode.Options
	asm capture.AssemblerOptions
	// observe, if set, sees every produce exchange detect takes as a
	// request of its own (detect.Options.Observe).
	observe func(*decode.Exchange)
	// ignore, if set, keeps connections it answers true for out of the
	// run (kdupcap's own emission traffic).
	ignore func(a, b netip.AddrPort) bool
	// wrap, if set, stands between reassembly and decode: TLS decryption.
	wrap func(capture.NewStreamFunc) capture.NewStreamFunc
	// attempts, if set, sees every exchange and connection end before
	// detect (attempts.go).
	attempts AttemptSink
}

// streamsOf hands dec a stream per connection; a nil *decode.Conn (not
// Kafka) must become a nil interface, or capture would call methods on it.
func streamsOf(dec *decode.Decoder) capture.NewStreamFunc {
	return func(a, b netip.AddrPort, ts time.Time) capture.Stream {
		if c := dec.NewStream(a, b, ts); c != nil {
			return c
		}
		return nil
	}
}

func newSingle(st stages) *single {
	p := &single{}
	st.det.Observe = st.observe
	p.det = detect.New(st.det)
	p.dec = decode.New(sinkOf(st, p.det), st.dec)
	newStream := streamsOf(p.dec)
	if st.wrap != nil {
		newStream = st.wrap(newStream)
	}
	ignore := st.ignore
	p.asm = capture.NewAssembler(func(a, b netip.AddrPort, ts time.Time) capture.Stream {
		if ignore == nil {
			return newStream(a, b, ts)
		}
		if ignore(a, b) {
			return nil
		}
		return &ownCheck{a: a, b: b, ts: ts, ignore: ignore, newStream: newStream}
	}, st.asm)
	return p
}

// add hands one packet to the run.
func (p *single) add(pkt capture.Packet) {
	p.asm.Add(pkt)
	if !slices.Contains(p.links, pkt.LinkType) {
		p.links = append(p.links, pkt.LinkType)
	}
}

// finish closes every connection and returns all findings, sorted.
func (p *single) finish() []detect.Finding {
	p.dec.EndOfInput()
	p.asm.Close()
	return p.det.Flush()
}

// ownCheck asks ignore again when a connection's first bytes come, and only
// then hands it to the decoder. The emitter learns the ends of a connection
// it dials once the handshake is done: its SYN may be read from the ring
// before that, but no byte is written on it before.
type ownCheck struct {
	a, b      netip.AddrPort
	ts        time.Time
	ignore    func(a, b netip.AddrPort) bool
	newStream capture.NewStreamFunc
	s         capture.Stream // set once decided and not ignored
	decided   bool
}

// stream decides, once, whether the connection is analyzed.
func (o *ownCheck) stream() capture.Stream {
	if !o.decided {
		o.decided = true
		if !o.ignore(o.a, o.b) {
			o.s = o.newStream(o.a, o.b, o.ts)
		}
	}
	return o.s
}

func (o *ownCheck) Data(fromA bool, data []byte, ts time.Time) bool {
	s := o.stream()
	return s != nil && s.Data(fromA, data, ts)
}

func (o *ownCheck) Gap(fromA bool, n int, ts time.Time) {
	if s := o.stream(); s != nil {
		s.Gap(fromA, n, ts)
	}
}

func (o *ownCheck) End(fromA bool, rst bool, ts time.Time) {
	if e, ok := o.s.(capture.Ender); ok {
		e.End(fromA, rst, ts)
	}
}

func (o *ownCheck) Close(ts time.Time) {
	// A connection closed before any byte was never the decoder's.
	if o.s != nil {
		o.s.Close(ts)
	}
}
