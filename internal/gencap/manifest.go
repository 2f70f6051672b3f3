package gencap

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// Verdicts the manifest assigns to resends; the strings equal detect.Verdict
// values, so the bench compares them directly.
const (
	VerdictDuplicated   = "duplicated"
	VerdictDeduplicated = "deduplicated"
	VerdictSingle       = "single"
	VerdictUnconfirmed  = "unconfirmed"
)

// Manifest is the ground truth of one generated capture: every resend the
// generator put into it, in the order of their first attempts, and totals. JSON names follow kdupcap's JSON Lines.
type Manifest struct {
	Config  Config   `json:"config"`
	Totals  Totals   `json:"totals"`
	Resends []Resend `json:"resends"`
	// TLS is set for a Config.TLS capture (tls.go).
	TLS *TLSTotals `json:"tls,omitempty"`
	// Port is the brokers' port when it is not 9092, and Source what made
	// the capture when gencap did not: a capture of real clients
	// (internal/kafkatest's BulkCapture, its broker on a free port), whose
	// manifest holds its Resends, Totals.Packets and ProduceRequests.
	Port   uint16 `json:"port,omitempty"`
	Source string `json:"source,omitempty"`
}

// Totals counts what the capture holds. Batches and Records count every
// copy sent, resends included; a TCP retransmission counts once.
type Totals struct {
	Packets                  int64            `json:"packets"`
	Bytes                    int64            `json:"bytes"`
	Connections              int64            `json:"connections"`
	ProduceRequests          int64            `json:"produce_requests"`
	ProduceRequestsByVersion map[int16]int64  `json:"produce_requests_by_version"`
	ProduceResponses         int64            `json:"produce_responses"`
	Batches                  int64            `json:"batches"`
	Records                  int64            `json:"records"`
	RetransmittedSegments    int64            `json:"retransmitted_segments"`
	Resends                  int64            `json:"resends"`
	Verdicts                 map[string]int64 `json:"verdicts"`
}

// Resend is one batch the generator sent twice on one connection.
type Resend struct {
	Client         string    `json:"client"` // ip:port
	Broker         string    `json:"broker"` // ip:port
	ClientID       string    `json:"client_id"`
	Topic          string    `json:"topic"`
	Partition      int32     `json:"partition"`
	APIVersion     int16     `json:"api_version"`
	ProducerID     int64     `json:"producer_id"`
	ProducerEpoch  int16     `json:"producer_epoch"`
	BaseSequence   int32     `json:"base_sequence"`
	RecordCount    int32     `json:"record_count"`
	BatchCRC       uint32    `json:"batch_crc"`
	Idempotent     bool      `json:"idempotent"`
	CorrelationIDs []int32   `json:"correlation_ids"`
	Attempts       []Attempt `json:"attempts"`
	Verdict        string    `json:"verdict"`
	// AppendedOffsets are the distinct base offsets, ascending, at which
	// the responses in the capture show the log holds the batch (answers
	// with no error or REQUEST_TIMED_OUT carry the offset); never nil.
	AppendedOffsets []int64 `json:"appended_offsets"`
}

// Attempt is one sending of a resent batch and the answer written for it.
type Attempt struct {
	CorrelationID int32     `json:"correlation_id"`
	Response      *Response `json:"response"` // nil: no response in the capture
	// Cause is why the attempt was sent again, with detect.Cause's values:
	// empty for the first, "client_timeout" when the earlier attempt had
	// no answer, "broker_error" when it was answered with the error named
	// in CauseError (Kafka's name, such as REQUEST_TIMED_OUT).
	Cause      string `json:"cause,omitempty"`
	CauseError string `json:"cause_error,omitempty"`
}

// Response is the partition's answer to one attempt.
type Response struct {
	ErrorCode  int16 `json:"error_code"`
	BaseOffset int64 `json:"base_offset"`
}

// WriteJSON writes m as indented JSON.
func (m *Manifest) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return fmt.Errorf("gencap: write manifest: %w", err)
	}
	return nil
}

// WriteFile writes m as WriteJSON does to path (mode 0644), atomically: to
// a temporary file beside it, renamed to path once complete, so that a
// failure leaves no partial manifest and an existing one as it was.
func (m *Manifest) WriteFile(path string) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("gencap: write manifest: %w", err)
	}
	if err = f.Chmod(0o644); err != nil { // CreateTemp makes it 0600
		err = fmt.Errorf("gencap: write manifest: %w", err)
	} else {
		err = m.WriteJSON(f) // its error says gencap: write manifest
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("gencap: write manifest: %w", cerr)
	}
	if err == nil {
		if rerr := os.Rename(f.Name(), path); rerr != nil {
			err = fmt.Errorf("gencap: write manifest: %w", rerr)
		}
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// ReadManifest reads a manifest written by WriteJSON.
func ReadManifest(r io.Reader) (*Manifest, error) {
	var m Manifest
	if err := json.NewDecoder(r).Decode(&m); err != nil {
		return nil, fmt.Errorf("gencap: read manifest: %w", err)
	}
	return &m, nil
}

// ManifestPath is where the manifest of the capture at pcapPath goes.
func ManifestPath(pcapPath string) string { return pcapPath + ".manifest.json" }

// Found is one finding as a checker of the manifest sees it, from
// kdupcap's JSON Lines or from detect.Finding.
type Found struct {
	Client, Broker, Topic string
	Partition             int32
	CorrelationIDs        []int32 // every attempt's, in send order
	Verdict               string
	AppendedOffsets       []int64
}

// Check compares found with the resends of m: the same set, each with the
// same client, broker, topic-partition, attempts (by correlation ID, in
// order), verdict and appended offsets.
func (m *Manifest) Check(found []Found) error {
	type key struct {
		client, broker, topic string
		partition             int32
		first                 int32
	}
	want := map[key]Resend{}
	for _, r := range m.Resends {
		want[key{r.Client, r.Broker, r.Topic, r.Partition, r.CorrelationIDs[0]}] = r
	}
	for _, f := range found {
		if len(f.CorrelationIDs) == 0 {
			return errors.New("gencap: a finding with no attempts")
		}
		k := key{f.Client, f.Broker, f.Topic, f.Partition, f.CorrelationIDs[0]}
		r, ok := want[k]
		if !ok {
			return fmt.Errorf("gencap: finding not in the manifest: %+v", k)
		}
		delete(want, k)
		if !slices.Equal(f.CorrelationIDs, r.CorrelationIDs) || f.Verdict != r.Verdict || !slices.Equal(f.AppendedOffsets, r.AppendedOffsets) {
			return fmt.Errorf("gencap: finding %+v: attempts %v verdict %s offsets %v, manifest %v %s %v",
				k, f.CorrelationIDs, f.Verdict, f.AppendedOffsets, r.CorrelationIDs, r.Verdict, r.AppendedOffsets)
		}
	}
	if len(want) > 0 {
		missing := make([]string, 0, len(want))
		for k := range want {
			missing = append(missing, fmt.Sprintf("%+v", k))
		}
		slices.Sort(missing)
		return fmt.Errorf("gencap: %d findings, the manifest re-sent %d batches; missing e.g. %s", len(found), len(m.Resends), missing[0])
	}
	return nil
}
