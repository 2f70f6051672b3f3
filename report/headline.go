package report

import (
	"bytes"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/profile"
)

// Headline counts findings as the table writer does and gives the
// headline that opens the table, for writers of other formats (package
// report/html): the same words and numbers from the same counting.
type Headline struct {
	seen   int
	counts tally
	// producers is what the headline says of each producer profiled.
	producers map[profile.ProducerKey]producerNote
}

// HeldCounts is what the findings counted say of the records: the JSON
// summary's duplicated_records, extra_copies and
// possibly_duplicated_records.
type HeldCounts struct {
	Duplicated, ExtraCopies, Possibly int64
}

// NewHeadline returns an empty Headline.
func NewHeadline() *Headline { return &Headline{} }

// Finding counts f; it keeps nothing of it but the counts (bounded as the
// table's are).
func (h *Headline) Finding(f *detect.Finding) {
	h.seen++
	h.counts.add(f)
}

// Producers notes each producer's software and fix for the headline.
func (h *Headline) Producers(ps []profile.Producer) { h.producers = noteProducers(h.producers, ps) }

// Text is the headline, lines ending in "\n"; "" when no finding was
// counted.
func (h *Headline) Text(s *Summary) string {
	var b bytes.Buffer
	writeHeadline(&b, s, h.seen, &h.counts, h.producers)
	return b.String()
}

// Held is the counts of records of the findings counted.
func (h *Headline) Held() HeldCounts {
	c := h.counts.total
	return HeldCounts{Duplicated: c.Duplicated, ExtraCopies: c.Extra, Possibly: c.Possibly}
}
