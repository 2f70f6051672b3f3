package pipeline

import (
	"runtime"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/profile"
	"github.com/kdupcap/kdupcap/report"
)

// Analysis is the run of `kdupcap analyze`: capture files read to their
// end, their findings decided at once at the end, and a profile per
// producer. It runs on one goroutine, or shards the connections over
// Options.Workers; the answer is the same.
type Analysis struct {
	opts Options
	// One of single or sharded runs.
	single  *single
	sharded *sharded
	prof    *profile.Profiler
	tls     *tlsLayer
	in      Inputs
	end     readEnd // why Read ended
	limit   int64   // the capture bytes read when Inputs.MaxBytes ended it
	// secretsDropped counts the pcapng secrets blocks over
	// capture.MaxSecretsBytes, left unread.
	secretsDropped int
	// splitMin is the fewest bytes of input for which the default workers
	// split the run (splitMinBytes; tests lower it).
	splitMin int64
}

// NewAnalysis returns an Analysis with o; o.Check must have passed.
func NewAnalysis(o Options) *Analysis {
	a := &Analysis{opts: o, prof: profile.New(profile.Options{}), tls: newTLSLayer(o.TLSKeyLogs, o.Ports, false), splitMin: splitMinBytes}
	observe := a.prof.Produce
	if o.Observe != nil {
		observe = func(x *decode.Exchange) {
			a.prof.Produce(x)
			o.Observe(x)
		}
	}
	n := o.workers()
	st := stages{det: o.detectOptions(), dec: o.decodeOptions(n), asm: o.assemblerOptions(n), observe: observe, wrap: a.tls.wrap, attempts: o.Attempts}
	if n > 1 {
		a.sharded = newSharded(st, n)
	} else {
		a.single = newSingle(st)
	}
	return a
}

// detector is the run's Detector.
func (a *Analysis) detector() *detect.Detector {
	if a.sharded != nil {
		return a.sharded.det
	}
	return a.single.det
}

// showClusters reports whether findings name their cluster: when the run
// saw more than one, or the user named clusters; one cluster named on every
// finding says nothing.
func showClusters(o Options, det *detect.Detector) bool {
	return len(o.Clusters) > 0 || det.Clusters() > 1
}

// Stats are the Detector's counts so far (for a progress bar: safe to call
// from onRead).
func (a *Analysis) Stats() detect.Stats {
	if a.sharded != nil {
		return a.sharded.det.Stats()
	}
	return a.single.stats()
}

// Read feeds the inputs into the run, telling onRead (if set) now and then
// how far it read. It returns the input errors, each naming its file and
// position, in the order met; a file that fails is dropped and the others
// go on, and what was read before an error stays in the run. Read is
// called once.
func (a *Analysis) Read(in Inputs, onRead func(Read)) []error {
	a.in = in
	errs := a.tls.load()
	srcs, skew, oerrs := in.sources()
	errs = append(errs, oerrs...)
	// Workers 0 with one worker chosen and a second core: decode and
	// detect on a goroutine of their own (single.go's split), where it
	// gains (splitPays).
	split := a.single != nil && a.opts.Workers == 0 && runtime.GOMAXPROCS(0) > 1 &&
		splitPays(srcs, in.MaxBytes, a.splitMin)
	if split {
		a.single.startSplit()
	}
	// The reading goroutine reads ahead when others decode.
	m := capture.Merge(srcs, capture.MergeOptions{ClockSkew: skew, OnSecrets: a.tls.secrets, ReadAheadPlain: a.sharded != nil || split})
	defer m.Close()
	var rerrs []error
	if a.sharded != nil {
		rerrs, a.end = a.sharded.read(m, onRead, in)
	} else {
		rerrs, a.end = eachPacket(m, onRead, in, a.single.add)
	}
	if a.end == readLimit {
		a.limit = m.CaptureBytes()
	}
	a.secretsDropped = m.SecretsDropped()
	return append(errs, rerrs...)
}

// Stopped reports whether Read ended early because Inputs.Stop was closed.
func (a *Analysis) Stopped() bool { return a.end == readStopped }

// Limited reports whether Read ended early because Inputs.MaxBytes of
// capture were read.
func (a *Analysis) Limited() bool { return a.end == readLimit }

// Finish closes every connection and returns all findings, sorted; it
// tallies them into the producer profiles.
func (a *Analysis) Finish() []detect.Finding {
	var findings []detect.Finding
	if a.sharded != nil {
		findings = a.sharded.finish()
	} else {
		findings = a.single.finish()
	}
	det := a.detector()
	show := showClusters(a.opts, det)
	for i := range findings {
		if !show {
			findings[i].Cluster = ""
		}
		a.prof.Finding(&findings[i])
	}
	return findings
}

// Producers returns the producer profiles, after Finish.
func (a *Analysis) Producers() []profile.Producer { return a.prof.Producers() }

// Timeline returns the produce latency per broker over capture time of
// every answered exchange read (a copy).
func (a *Analysis) Timeline() *profile.Timeline { return a.prof.Timeline() }

// Errors returns the first malformed-input messages, in capture order,
// then those of the key log lines that did not parse.
func (a *Analysis) Errors() []string {
	var errs []string
	if a.sharded != nil {
		errs = a.sharded.shared.Errors()
	} else {
		errs = a.single.dec.Errors()
	}
	return append(errs, a.tls.malformed()...)
}

// Summary is the run's summary, after Finish; inputErrs are the errors
// Read returned.
func (a *Analysis) Summary(inputErrs []string) report.Summary {
	var (
		cs    capture.Stats
		ds    decode.Stats
		conns []decode.ConnSummary
		ts    detect.Stats
	)
	if a.sharded != nil {
		cs, ds, conns = a.sharded.stats()
		ts = a.sharded.det.Stats()
	} else {
		cs, ds, conns, ts = a.single.asm.Stats(), a.single.dec.Stats(), a.single.dec.Connections(), a.single.det.Stats()
	}
	s := buildSummary(a.in.Files, inputErrs, cs, ds, conns, ts)
	s.ProducerExchangesOmitted = a.prof.Omitted()
	s.TLS = a.tls.summary()
	s.Dropped.SecretsBlocks = int64(a.secretsDropped)
	s.InputLimit = a.limit
	return s
}
