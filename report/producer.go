package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/profile"
)

// ProducerWriter is a Writer that also writes producer profiles: the
// settings read off the wire, latency per broker and a diagnosis. The table,
// JSON and lines writers implement it, and Multi hands the profiles to those
// of its writers that do; call Producers after the findings and before the
// summary.
type ProducerWriter interface {
	Producers(ps []profile.Producer) error
}

// TimelineWriter is a Writer that also draws the produce latency per
// broker over capture time of every answered exchange of the run (the
// HTML page does; Multi hands it on). Call Timeline before Producers; the
// writer may keep tl, which the caller no longer changes.
type TimelineWriter interface {
	Timeline(tl *profile.Timeline) error
}

// jsonProducer is one "type":"producer" line.
type jsonProducer struct {
	Type             string           `json:"type"`
	Client           string           `json:"client"`
	ClientID         *string          `json:"client_id"`
	ProducerID       int64            `json:"producer_id"`
	Idempotent       bool             `json:"idempotent"`
	TransactionalIDs []string         `json:"transactional_ids"`
	SoftwareName     string           `json:"software_name"`
	SoftwareVersion  string           `json:"software_version"`
	Librdkafka       string           `json:"librdkafka_version,omitempty"`
	SoftwareGuess    string           `json:"software_guess,omitempty"`
	InferredFrom     string           `json:"software_inferred_from,omitempty"`
	ApiVersions      []int16          `json:"api_versions_versions"`
	ProduceVersions  []int16          `json:"produce_versions"`
	SASLUsers        []string         `json:"sasl_users,omitempty"`
	Acks             []int16          `json:"acks"`
	TimeoutsMillis   []int32          `json:"timeout_ms"`
	MaxInFlight      int              `json:"max_in_flight"`
	Codecs           []string         `json:"codecs"`
	Requests         int64            `json:"requests"`
	Sends            int64            `json:"sends"`
	Batches          int64            `json:"batches"`
	RecordsMean      float64          `json:"records_per_batch_mean"`
	RecordsMax       int32            `json:"records_per_batch_max"`
	Latency          []jsonLatency    `json:"latency"`
	Resent           int64            `json:"resent"`
	Resends          int64            `json:"resends"`
	ByVerdict        map[string]int64 `json:"by_verdict"`
	Causes           []jsonCause      `json:"causes"`
	Renumbered       int64            `json:"renumbered"`
	Changes          []jsonChange     `json:"producer_changes"`
	Unretried        []jsonErrorCount `json:"unretried"`
	Diagnosis        string           `json:"diagnosis"`
}

type jsonLatency struct {
	Broker             string  `json:"broker"`
	Answered           int64   `json:"answered"`
	P50Millis          float64 `json:"p50_ms"`
	P99Millis          float64 `json:"p99_ms"`
	MaxMillis          float64 `json:"max_ms"`
	Succeeded          int64   `json:"succeeded"`
	SucceededP50Millis float64 `json:"succeeded_p50_ms"`
	SucceededP99Millis float64 `json:"succeeded_p99_ms"`
}

type jsonCause struct {
	Cause        string  `json:"cause"`
	Error        string  `json:"error,omitempty"`
	Count        int64   `json:"count"`
	MinGapMillis float64 `json:"min_gap_ms"`
	MaxGapMillis float64 `json:"max_gap_ms"`
	// Only when the connection ends were captured (Ended > 0).
	Ended             int64    `json:"ended,omitempty"`
	MinEndMillis      *float64 `json:"min_end_ms,omitempty"`
	MaxEndMillis      *float64 `json:"max_end_ms,omitempty"`
	MinAfterEndMillis *float64 `json:"min_after_end_ms,omitempty"`
	MaxAfterEndMillis *float64 `json:"max_after_end_ms,omitempty"`
}

type jsonChange struct {
	Change        string `json:"change"`
	ProducerID    int64  `json:"producer_id"`
	ProducerEpoch int16  `json:"producer_epoch"`
	ToProducerID  int64  `json:"to_producer_id"`
	ToEpoch       int16  `json:"to_producer_epoch"`
	Cause         string `json:"cause,omitempty"`
	Error         string `json:"error,omitempty"`
	Count         int64  `json:"count"`
	Duplicated    int64  `json:"duplicated"`
}

type jsonErrorCount struct {
	Error string `json:"error"`
	Count int64  `json:"count"`
}

// round3 rounds milliseconds to the microsecond.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func toJSONProducer(p *profile.Producer) jsonProducer {
	j := jsonProducer{
		Type:             "producer",
		Client:           p.ClientIP.String(),
		ClientID:         p.ClientID,
		ProducerID:       p.ProducerID,
		Idempotent:       p.Idempotent,
		TransactionalIDs: nonNil(p.TransactionalIDs),
		SoftwareName:     p.SoftwareName,
		SoftwareVersion:  p.SoftwareVersion,
		Librdkafka:       p.LibrdkafkaVersion,
		SoftwareGuess:    p.SoftwareGuess,
		InferredFrom:     p.InferredFrom,
		ApiVersions:      nonNil(p.ApiVersions),
		ProduceVersions:  nonNil(p.ProduceVersions),
		SASLUsers:        p.SASLUsers,
		Acks:             nonNil(p.Acks),
		TimeoutsMillis:   nonNil(p.TimeoutsMillis),
		MaxInFlight:      p.MaxInFlight,
		Codecs:           nonNil(p.Codecs),
		Requests:         p.Requests,
		Sends:            p.Sends,
		Batches:          p.Batches,
		RecordsMean:      round3(p.RecordsMean),
		RecordsMax:       p.RecordsMax,
		Latency:          []jsonLatency{},
		Resent:           p.Resent,
		Resends:          p.Resends,
		ByVerdict:        map[string]int64{},
		Causes:           []jsonCause{},
		Renumbered:       p.Renumbered,
		Changes:          []jsonChange{},
		Unretried:        []jsonErrorCount{},
		Diagnosis:        p.Diagnosis,
	}
	for _, l := range p.Latency {
		j.Latency = append(j.Latency, jsonLatency{
			Broker:             l.Broker.String(),
			Answered:           l.Answered,
			P50Millis:          round3(l.P50Millis),
			P99Millis:          round3(l.P99Millis),
			MaxMillis:          round3(l.MaxMillis),
			Succeeded:          l.Succeeded,
			SucceededP50Millis: round3(l.SucceededP50Millis),
			SucceededP99Millis: round3(l.SucceededP99Millis),
		})
	}
	for v, n := range p.ByVerdict {
		if n > 0 {
			j.ByVerdict[string(v)] = n
		}
	}
	for _, c := range p.Causes {
		jc := jsonCause{Cause: string(c.Cause), Error: c.Error, Count: c.Count,
			MinGapMillis: round3(c.MinGapMillis), MaxGapMillis: round3(c.MaxGapMillis)}
		if c.Ended > 0 {
			jc.Ended = c.Ended
			jc.MinEndMillis, jc.MaxEndMillis = ptr(round3(c.MinEndMillis)), ptr(round3(c.MaxEndMillis))
			jc.MinAfterEndMillis, jc.MaxAfterEndMillis = ptr(round3(c.MinAfterEndMillis)), ptr(round3(c.MaxAfterEndMillis))
		}
		j.Causes = append(j.Causes, jc)
	}
	for _, c := range p.Changes {
		j.Changes = append(j.Changes, jsonChange{Change: string(c.Change), ProducerID: c.ProducerID, ProducerEpoch: c.Epoch,
			ToProducerID: c.ToProducerID, ToEpoch: c.ToEpoch, Cause: string(c.Cause), Error: c.Error, Count: c.Count, Duplicated: c.Duplicated})
	}
	for _, u := range p.Unretried {
		j.Unretried = append(j.Unretried, jsonErrorCount{Error: u.Error, Count: u.Count})
	}
	return j
}

func ptr[T any](v T) *T { return &v }

// nonNil makes a nil slice an empty one, so that JSON shows [] not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Producers writes one "type":"producer" line per producer.
func (w *jsonWriter) Producers(ps []profile.Producer) error {
	for i := range ps {
		line, err := w.enc.line(toJSONProducer(&ps[i]))
		if err == nil {
			_, err = w.w.Write(line)
		}
		if err != nil {
			return fmt.Errorf("report: writing producer: %w", err)
		}
	}
	return nil
}

// Producers writes the "Producers" section: per producer its settings, its
// counts, a table of latency per broker and the diagnosis.
func (t *tableWriter) Producers(ps []profile.Producer) error {
	if len(ps) == 0 {
		return nil
	}
	t.buf.Reset()
	b := &t.buf
	if t.n > 0 {
		b.WriteByte('\n')
	}
	b.WriteString("Producers\n")
	for i := range ps {
		p := &ps[i]
		b.WriteByte('\n')
		software := "software unknown (no ApiVersions v3+ captured)"
		if p.SoftwareName != "" {
			software = Printable(profile.SoftwareText(p))
		}
		fmt.Fprintf(b, "P%d %s  client.id %s  %s  producer id %d\n", i+1, p.ClientIP, ClientIDText(p.ClientID), software, p.ProducerID)
		if g := profile.GuessText(p); g != "" {
			fmt.Fprintf(b, "   client    %s\n", Printable(g))
		}
		fmt.Fprintf(b, "   settings  %s\n", producerSettings(p))
		if len(p.ApiVersions)+len(p.ProduceVersions) > 0 {
			fmt.Fprintf(b, "   protocol  ApiVersions %s, Produce %s\n", versionsList(p.ApiVersions), versionsList(p.ProduceVersions))
		}
		if len(p.SASLUsers) > 0 {
			users := make([]string, len(p.SASLUsers))
			for i, u := range p.SASLUsers {
				users[i] = Printable(u)
			}
			fmt.Fprintf(b, "   sasl user %s\n", strings.Join(users, ", "))
		}
		fmt.Fprintf(b, "   batches   %d (%d sent in %s), records per batch mean %s max %d\n",
			p.Batches, p.Sends, plural(p.Requests, "request"), strconv.FormatFloat(p.RecordsMean, 'f', 1, 64), p.RecordsMax)
		if p.Resends > 0 {
			renumbered := ""
			if p.Renumbered > 0 {
				renumbered = fmt.Sprintf("; %d sent again under another epoch or producer ID", p.Renumbered)
			}
			fmt.Fprintf(b, "   re-sent   %d (%s): %s%s\n", p.Resent, plural(p.Resends, "re-send"), verdictCounts(p.ByVerdict), renumbered)
		}
		if len(p.Latency) > 0 {
			tbl := t.tables.get(left, right, right, right, right, right, right, right)
			tbl.Header("BROKER", "ANSWERED", "P50 MS", "P99 MS", "MAX MS", "NO ERROR", "P50 MS", "P99 MS")
			for _, l := range p.Latency {
				row := []string{l.Broker.String(), itoa(l.Answered), MillisText(l.P50Millis), MillisText(l.P99Millis),
					MillisText(l.MaxMillis), itoa(l.Succeeded), "-", "-"}
				if l.Succeeded > 0 {
					row[6], row[7] = MillisText(l.SucceededP50Millis), MillisText(l.SucceededP99Millis)
				}
				if err := tbl.Append(row); err != nil {
					return fmt.Errorf("report: producer %d: %w", i+1, err)
				}
			}
			if err := tbl.Render(); err != nil {
				return fmt.Errorf("report: producer %d: %w", i+1, err)
			}
		}
		if p.Diagnosis != "" {
			b.WriteString("   Diagnosis:\n")
			for _, line := range wrap(p.Diagnosis, 96) {
				fmt.Fprintf(b, "     %s\n", Printable(line))
			}
		}
	}
	return t.flush("producers")
}

// producerSettings lists the settings read off the wire for the table.
func producerSettings(p *profile.Producer) string {
	var parts []string
	parts = append(parts, "acks="+orDash(p.AcksText()))
	tos := make([]string, len(p.TimeoutsMillis))
	for i, v := range p.TimeoutsMillis {
		tos[i] = itoa(v)
	}
	parts = append(parts, "timeout "+orDash(strings.Join(tos, "/"))+" ms")
	if p.Idempotent {
		parts = append(parts, "idempotent")
	} else {
		parts = append(parts, "not idempotent")
	}
	txn := make([]string, len(p.TransactionalIDs))
	for i, id := range p.TransactionalIDs {
		txn[i] = strconv.Quote(id)
	}
	parts = append(parts, "transactional.id "+orDash(strings.Join(txn, ", ")))
	inflight := "-"
	if p.MaxInFlight > 0 {
		inflight = strconv.Itoa(p.MaxInFlight)
	}
	parts = append(parts, "max in flight "+inflight, "compression "+orDash(strings.Join(p.Codecs, "/")))
	return strings.Join(parts, ", ")
}

// versionsList is "v2", "v3/v4", or "-" for none.
func versionsList(vs []int16) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = "v" + strconv.Itoa(int(v))
	}
	return orDash(strings.Join(parts, "/"))
}

// verdictCounts lists the non-zero verdict counts in print order.
func verdictCounts(m map[detect.Verdict]int64) string {
	var parts []string
	for _, v := range verdicts {
		if n := m[v]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", v, n))
		}
	}
	return orDash(strings.Join(parts, ", "))
}

// wrap breaks s into lines of at most width bytes at spaces (a longer word
// stays whole).
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
