package report

import (
	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/profile"
)

// Multi returns a Writer that hands every finding and the summary to each
// of ws in turn. Every writer is called even when one fails; the error
// returned is the first one.
func Multi(ws ...Writer) Writer {
	return multiWriter(append([]Writer(nil), ws...))
}

type multiWriter []Writer

func (m multiWriter) Finding(f detect.Finding) error {
	var first error
	for _, w := range m {
		if err := w.Finding(f); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (m multiWriter) Summary(s Summary) error {
	var first error
	for _, w := range m {
		if err := w.Summary(s); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// DrawsTimeline reports whether w, or one of the writers of a Multi,
// draws a timeline (TimelineWriter), so that a caller makes one only then.
func DrawsTimeline(w Writer) bool {
	if m, ok := w.(multiWriter); ok {
		for _, x := range m {
			if DrawsTimeline(x) {
				return true
			}
		}
		return false
	}
	_, ok := w.(TimelineWriter)
	return ok
}

// Timeline hands the timeline to each of the writers that draw it
// (TimelineWriter), in turn.
func (m multiWriter) Timeline(tl *profile.Timeline) error {
	var first error
	for _, w := range m {
		tw, ok := w.(TimelineWriter)
		if !ok {
			continue
		}
		if err := tw.Timeline(tl); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Producers hands the producer profiles to each of the writers that write
// them (ProducerWriter), in turn.
func (m multiWriter) Producers(ps []profile.Producer) error {
	var first error
	for _, w := range m {
		pw, ok := w.(ProducerWriter)
		if !ok {
			continue
		}
		if err := pw.Producers(ps); err != nil && first == nil {
			first = err
		}
	}
	return first
}
