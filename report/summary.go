package report

import (
	"bytes"
	"fmt"
	"net/netip"
	"time"
)

// Summary holds the counts of one run, filled by pipeline from every stage.
// It is plain data so that report needs no stage but detect.
type Summary struct {
	Files []string

	// Capture stage.
	Packets        int64
	Bytes          int64 // captured bytes of all packets
	Drops          int64 // packets the kernel dropped before reading (live capture only)
	TCPConnections int64
	Gaps           int64 // holes in TCP streams (packets the capture lost)
	GapBytes       int64
	// SnapCut counts the packets the snap length cut short (captured
	// length below the original), SnapCutBytes the bytes they lost;
	// SnapLen is the largest captured length among them: the snap length
	// the capture was taken with. Zero when no packet was cut.
	SnapLen      int64
	SnapCut      int64
	SnapCutBytes int64

	// Decode stage.
	KafkaConnections []Connection
	// KafkaConnectionsOmitted counts the connections taken as Kafka but not
	// in KafkaConnections (a live run lists a bounded number).
	KafkaConnectionsOmitted int64
	Frames                  int64 // Kafka frames decoded, both directions
	ProduceRequests         int64
	ProduceResponses        int64
	Batches                 int64
	Records                 int64
	Malformed               int64 // frames that did not parse
	Resyncs                 int64 // times decoding resumed after losing frame boundaries
	// FetchResponses counts the FetchResponses decoded (consumers' and
	// followers'), FetchedBatches the whole record batches they held: the
	// fetched data findings may rest on.
	FetchResponses int64
	FetchedBatches int64

	// Detect stage.
	Findings int64
	// EvictedBatches counts the batches decided early because the bound on
	// batches remembered was reached; EvictedAge is how recent the
	// youngest of them was: re-sends later than that after their previous
	// attempt may have gone unmatched.
	EvictedBatches int64
	EvictedAge     time.Duration
	// ProducerExchangesOmitted counts the produce exchanges of producers
	// beyond the profiler's bound, in no producer profile.
	ProducerExchangesOmitted int64
	// RecordFindings counts the record-level findings among Findings
	// (record_resend and record_duplicate).
	RecordFindings int64
	// EchoedRequests counts the requests seen on two connections (a
	// proxy's two legs, NAT, a capture given twice), each counted once;
	// EchoLegs names the first pairs of connections they came on.
	EchoedRequests int64
	EchoLegs       []EchoLeg
	ByVerdict      map[string]int64
	ByTopic        []TopicCount

	// Dropped counts what bounds on untrusted input left out or cut
	// (dropped.go); all zero on an ordinary capture.
	Dropped Dropped

	// TLS is what the run saw of TLS connections (tls.go); nil when it
	// saw none and read no key log.
	TLS *TLSSummary

	// Errors holds input errors that ended reading early (file and position).
	// Any makes the run's result incomplete: InputFailed.
	Errors []string
	// FailedInputs says, of each input file an error ended early, how far
	// its results go (Errors has the messages).
	FailedInputs []FailedInput
	// Interrupted names the signal that stopped the reading ("SIGINT");
	// empty when the inputs were read to their end.
	Interrupted string
	// InputLimit, when not 0, is the capture bytes read when the bound on
	// them (--max-input-bytes) stopped the reading.
	InputLimit int64

	// Fleet is what a correlation saw of its hosts (kdupcap correlate);
	// Attempts what the run published of its attempts (--attempts). Nil
	// otherwise (fleet.go).
	Fleet    *FleetSummary
	Attempts *AttemptsSummary
}

// Connection is one TCP connection taken as Kafka.
type Connection struct {
	ID              uint64
	Client, Broker  netip.AddrPort
	DetectedBy      string // "port" or "sniff"
	ClientIDs       []string
	ProduceRequests int64
	// SASLMechanism, SASLUser and SASLFailed say what the connection's
	// latest SASL authentication showed: the mechanism, empty when none
	// was captured; the user it authenticated, empty when the mechanism
	// does not show it (GSSAPI) or it failed, which SASLFailed says.
	SASLMechanism string
	SASLUser      string
	SASLFailed    bool
}

// EchoLeg is a pair of connections that carried copies of the same
// requests: the First's were kept, the Second's counted once.
type EchoLeg struct {
	FirstClient, FirstBroker   netip.AddrPort
	SecondClient, SecondBroker netip.AddrPort
	Requests                   int64
}

// TopicCount counts produce traffic and findings per topic.
type TopicCount struct {
	Topic      string
	Batches    int64
	Records    int64
	Findings   int64
	Duplicated int64
}

// FailedInput is an input file that could not be read to its end.
type FailedInput struct {
	File string
	// ResultsUpTo counts the bytes of File's capture read whole before the
	// error (decompressed bytes when Decompressed): the results are those
	// of these bytes. 0: nothing of File was read.
	ResultsUpTo  int64
	Decompressed bool
}

// InputFailed reports whether an input error ended reading early: the
// results are then those of what was read, not of the whole input.
func (s *Summary) InputFailed() bool { return len(s.Errors) > 0 || len(s.FailedInputs) > 0 }

// NothingToJudge is why a run found nothing because it had nothing to
// look at: no produce request reached it.
type NothingToJudge struct {
	// Reason is "no_packets", "no_tcp", "no_kafka", "tls_undecrypted" or
	// "no_produce".
	Reason string
	// Text says what the capture held, in one sentence without its
	// period; Hint what to try.
	Text, Hint string
}

// NothingToJudge says why the run had nothing to judge, when it saw no
// produce request and made no finding; ok is false when it had something,
// and when an input failed before any packet was read (the failure says
// why).
func (s *Summary) NothingToJudge() (n NothingToJudge, ok bool) {
	if s.ProduceRequests > 0 || s.Findings > 0 || s.Packets == 0 && s.InputFailed() {
		return n, false
	}
	kafka := int64(len(s.KafkaConnections)) + s.KafkaConnectionsOmitted
	var undecrypted int64
	if t := s.TLS; t != nil {
		undecrypted = int64(t.NoKey + t.MidStream + t.BadMAC + t.Undecryptable)
	}
	tlsHint := "give --tls-keylog FILE with the clients' TLS keys (their SSLKEYLOGFILE); see TLS connections below"
	switch {
	case s.Packets == 0:
		return NothingToJudge{Reason: "no_packets", Text: "the capture holds no packet",
			Hint: "capture on the interface the producers' traffic crosses, e.g. tcpdump -i any -w FILE tcp port 9092"}, true
	case s.TCPConnections == 0:
		return NothingToJudge{Reason: "no_tcp", Text: fmt.Sprintf("the capture's %s no TCP connection", counted(s.Packets, "packet holds", "packets hold")),
			Hint: "Kafka runs over TCP: capture the brokers' traffic, e.g. tcpdump -i any -w FILE tcp port 9092"}, true
	case kafka == 0 && undecrypted > 0:
		some := fmt.Sprintf("%d of the %s", undecrypted, plural(s.TCPConnections, "TCP connection"))
		switch {
		case undecrypted == s.TCPConnections && undecrypted == 1:
			some = "the TCP connection is"
		case undecrypted == s.TCPConnections:
			some = fmt.Sprintf("the %d TCP connections are", undecrypted)
		case undecrypted == 1:
			some += " is"
		default:
			some += " are"
		}
		return NothingToJudge{Reason: "tls_undecrypted", Text: "no Kafka connection could be read: " + some + " TLS, not decrypted", Hint: tlsHint}, true
	case kafka == 0:
		none := fmt.Sprintf("none of the %d TCP connections is", s.TCPConnections)
		if s.TCPConnections == 1 {
			none = "the TCP connection is not"
		}
		return NothingToJudge{Reason: "no_kafka", Text: none + " Kafka (none on a --port port, none whose bytes parse as Kafka requests)",
			Hint: "if the brokers listen on other ports, give them with --port (e.g. --port 9093,19092)"}, true
	}
	n = NothingToJudge{Reason: "no_produce", Hint: "kdupcap judges producers' re-sends: capture where the producers connect to the brokers"}
	conns := counted(kafka, "Kafka connection carries", "Kafka connections carry")
	if kafka == 1 {
		conns = "the Kafka connection carries"
	}
	if s.FetchResponses > 0 {
		n.Text = fmt.Sprintf("%s no produce request, only consumers' traffic (%s)", conns, plural(s.FetchResponses, "fetch response"))
	} else {
		n.Text = fmt.Sprintf("%s no produce request, only metadata and other requests (%s)", conns, plural(s.Frames, "frame"))
	}
	if undecrypted > 0 {
		n.Text += fmt.Sprintf("; %s not decrypted: producers may be among them", counted(undecrypted, "TLS connection was", "TLS connections were"))
		n.Hint = tlsHint
	}
	return n, true
}

// jsonFailedInput is one of the summary's "failed_inputs".
type jsonFailedInput struct {
	File         string `json:"file"`
	ResultsUpTo  int64  `json:"results_up_to_byte"`
	Decompressed bool   `json:"decompressed,omitempty"`
}

// jsonNothing is the summary's "nothing_to_judge" object.
type jsonNothing struct {
	Reason string `json:"reason"`
	Text   string `json:"text"`
	Hint   string `json:"hint"`
}

// addJSONStatus sets j's keys of a failed input and of nothing to judge.
func addJSONStatus(j *jsonSummary, s *Summary) {
	j.InputFailed = s.InputFailed()
	for _, f := range s.FailedInputs {
		j.FailedInputs = append(j.FailedInputs, jsonFailedInput(f))
	}
	if n, ok := s.NothingToJudge(); ok {
		j.NothingToJudge = &jsonNothing{Reason: n.Reason, Text: n.Text, Hint: n.Hint}
	}
}

// statusText writes, at the head of the text summary, whether the input
// failed and what the run judged: after n findings, the input errors with
// how far the results go, or why there was nothing to judge, or the
// all-clear, which only a run that read all its input and saw produce
// requests gives.
func statusText(b *bytes.Buffer, s *Summary, n int) {
	if n > 0 {
		b.WriteByte('\n')
	}
	nothing, none := s.NothingToJudge()
	if s.InputFailed() {
		if s.Packets == 0 && n == 0 {
			b.WriteString("Input failed: nothing was read, nothing was judged.\n")
		} else {
			b.WriteString("Input failed: these results are of what was read before the error, not of the whole input.\n")
		}
		for _, e := range s.Errors {
			fmt.Fprintf(b, "  %s\n", Printable(e))
		}
		for _, f := range s.FailedInputs {
			switch {
			case f.ResultsUpTo > 0 && f.Decompressed:
				fmt.Fprintf(b, "  results up to decompressed byte %d of %s\n", f.ResultsUpTo, Printable(f.File))
			case f.ResultsUpTo > 0:
				fmt.Fprintf(b, "  results up to byte %d of %s\n", f.ResultsUpTo, Printable(f.File))
			}
		}
		if none {
			fmt.Fprintf(b, "Nothing to judge in what was read: %s.\nhint: %s\n", nothing.Text, nothing.Hint)
		}
		b.WriteByte('\n')
		return
	}
	switch {
	case n > 0:
	case none:
		fmt.Fprintf(b, "Nothing to judge: %s.\nhint: %s\n\n", nothing.Text, nothing.Hint)
	case s.Interrupted != "":
		fmt.Fprintf(b, "No batch was sent more than once in the packets read before %s.\n\n", s.Interrupted)
	case s.InputLimit > 0:
		fmt.Fprintf(b, "No batch was sent more than once in the %d bytes of capture read (--max-input-bytes).\n\n", s.InputLimit)
	default:
		b.WriteString("No batch was sent more than once.\n\n")
	}
}
