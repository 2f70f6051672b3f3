package report

import (
	"strconv"
	"strings"

	"github.com/kdupcap/kdupcap/detect"
)

// jsonTransaction is a finding's "transaction" object.
type jsonTransaction struct {
	TransactionalID string  `json:"transactional_id"`
	ProducerID      int64   `json:"producer_id"`
	Epoch           int16   `json:"epoch"`
	Outcome         string  `json:"outcome"`
	Epochs          []int16 `json:"epochs,omitempty"`
}

// evidenceOf is the finding's Evidence, produce_responses when unset.
func evidenceOf(f *detect.Finding) detect.Evidence {
	if f.Evidence == "" {
		return detect.EvidenceProduce
	}
	return f.Evidence
}

// addEvidence fills the fetch and transaction fields of j.
func addEvidence(j *jsonFinding, f *detect.Finding) {
	j.Evidence = string(evidenceOf(f))
	if len(f.FetchedOffsets) > 0 {
		j.FetchedOffsets = append([]int64{}, f.FetchedOffsets...)
	}
	if t := f.Transaction; t != nil {
		j.Transaction = &jsonTransaction{
			TransactionalID: t.TransactionalID,
			ProducerID:      t.ProducerID,
			Epoch:           t.ProducerEpoch,
			Outcome:         string(t.Outcome),
			Epochs:          append([]int16(nil), t.Epochs...),
		}
	}
}

// evidenceText is the table's evidence line, "" when the produce responses
// alone decided and no fetch or transaction is known (findings read as
// before).
func evidenceText(f *detect.Finding) string {
	ev := evidenceOf(f)
	if ev == detect.EvidenceProduce && len(f.FetchedOffsets) == 0 && f.Transaction == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("evidence: ")
	b.WriteString(string(ev))
	if len(f.FetchedOffsets) > 0 {
		b.WriteString(", fetched at ")
		b.WriteString(offsetsText(f.FetchedOffsets))
	}
	if t := f.Transaction; t != nil {
		b.WriteString("; transaction ")
		b.WriteString(strconv.Quote(t.TransactionalID))
		b.WriteString(" producer id " + strconv.FormatInt(t.ProducerID, 10) + " epoch " + strconv.Itoa(int(t.ProducerEpoch)))
		b.WriteString(": " + string(t.Outcome))
		if len(t.Epochs) > 1 {
			eps := make([]string, len(t.Epochs))
			for i, e := range t.Epochs {
				eps[i] = strconv.Itoa(int(e))
			}
			b.WriteString(" (epochs " + strings.Join(eps, " -> ") + ")")
		}
	}
	return b.String()
}
