package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kdupcap/kdupcap/detect"
)

// TestProofOutput: a finding decided by fetched data inside an aborted
// transaction shows both in the JSON keys and the table's evidence line; a
// finding of the produce responses alone adds only "evidence".
func TestProofOutput(t *testing.T) {
	f := detect.Finding{Verdict: detect.Duplicated, Proof: detect.ProofFetch, FetchedOffsets: []int64{3, 9},
		AppendedOffsets: []int64{3, 9}, ProducerID: 5, ProducerEpoch: 1,
		Transaction: &detect.Transaction{TransactionalID: "tx", ProducerID: 5, ProducerEpoch: 1,
			Outcome: detect.TxnAborted, Epochs: []int16{0, 1}}}
	var j, tb bytes.Buffer
	if err := NewJSON(&j).Finding(f); err != nil {
		t.Fatal(err)
	}
	if err := streamTable(&tb).Finding(f); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"evidence":"fetched_data"`, `"fetched_offsets":[3,9]`,
		`"transaction":{"transactional_id":"tx","producer_id":5,"epoch":1,"outcome":"aborted","epochs":[0,1]}`} {
		if !strings.Contains(j.String(), want) {
			t.Errorf("JSON lacks %s: %s", want, j.String())
		}
	}
	if want := `evidence: fetched_data, fetched at offsets 3, 9; transaction "tx" producer id 5 epoch 1: aborted (epochs 0 -> 1)`; !strings.Contains(tb.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, tb.String())
	}

	j.Reset()
	tb.Reset()
	plain := detect.Finding{Verdict: detect.Single}
	if err := NewJSON(&j).Finding(plain); err != nil {
		t.Fatal(err)
	}
	if err := streamTable(&tb).Finding(plain); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(j.String(), `"evidence":"produce_responses"`) || strings.Contains(j.String(), "fetched_offsets") ||
		strings.Contains(j.String(), `"transaction"`) || strings.Contains(tb.String(), "evidence:") {
		t.Errorf("a finding of the responses alone: %s\n%s", j.String(), tb.String())
	}
}
