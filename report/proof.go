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

// proofOf is the finding's Proof, produce_responses when unset.
func proofOf(f *detect.Finding) detect.Proof {
	if f.Proof == "" {
		return detect.ProofProduce
	}
	return f.Proof
}

// addProof fills the proof fields of j: evidence, fetched offsets and
// transaction.
func addProof(j *jsonFinding, f *detect.Finding) {
	j.Evidence = string(proofOf(f))
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

// proofText is the table's "evidence:" line, "" when the produce responses
// alone decided and no fetch or transaction is known (findings read as
// before).
func proofText(f *detect.Finding) string {
	ev := proofOf(f)
	if ev == detect.ProofProduce && len(f.FetchedOffsets) == 0 && f.Transaction == nil {
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
