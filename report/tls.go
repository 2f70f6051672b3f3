package report

import (
	"bytes"
	"fmt"
	"net/netip"
)

// TLSSummary is what the run saw of TLS: the connections recognised as
// TLS (by their ClientHello, or by TLS records with no handshake), and
// what became of each. A nil *TLSSummary: no TLS connection, no key log.
type TLSSummary struct {
	// Connections lists the first TLS connections, in the order they
	// started; Omitted counts the others.
	Connections []TLSConnection
	Omitted     int
	// Counts by status, over all TLS connections.
	Total, Decrypted, NoKey, MidStream, BadMAC, Undecryptable int
	// BadMACRecords counts the records that failed authentication.
	BadMACRecords int
	// KeyLogLines counts the key log lines read (files and pcapng
	// secrets blocks), KeyLogMalformed those that did not parse.
	KeyLogLines, KeyLogMalformed int
}

// TLSConnection is one connection recognised as TLS. It holds no secret.
type TLSConnection struct {
	Client, Broker netip.AddrPort
	// Version and CipherSuite are names ("TLS 1.3",
	// "TLS_AES_128_GCM_SHA256"), empty when the capture does not show
	// them; SNI is the ClientHello's server name.
	Version, CipherSuite, SNI string
	// Status: "decrypted", "no key", "started mid-stream", "bad MAC",
	// "undecryptable" or "handshake"; Reason says why when undecryptable.
	Status, Reason string
	Resumed        bool
	KeyUpdates     int
	BadMACs        int
	// Bytes is the application data decrypted and handed to Kafka
	// decoding.
	Bytes int64
}

// Hints are the one-line advice the TLS summary calls for.
func (s *TLSSummary) Hints() []string {
	if s == nil {
		return nil
	}
	var h []string
	if s.NoKey > 0 {
		h = append(h, fmt.Sprintf("%s had no key: give --tls-keylog (or a pcapng with the keys injected by editcap --inject-secrets)", plural(int64(s.NoKey), "TLS connection")))
	}
	if s.MidStream > 0 {
		h = append(h, fmt.Sprintf("%s started before the capture: TLS can only be decrypted from its handshake", plural(int64(s.MidStream), "TLS connection")))
	}
	if s.BadMAC > 0 {
		h = append(h, fmt.Sprintf("%s failed authentication (%s): a wrong key log, or damaged bytes; nothing of them was decoded after the failure", plural(int64(s.BadMAC), "TLS connection"), plural(int64(s.BadMACRecords), "record")))
	}
	if s.KeyLogMalformed > 0 {
		h = append(h, fmt.Sprintf("%s of the key logs did not parse (see the warnings)", plural(int64(s.KeyLogMalformed), "line")))
	}
	return h
}

// tlsTable writes the TLS section of the table summary, if any.
func (t *tableWriter) tlsTable(b *bytes.Buffer, s *TLSSummary) error {
	if s == nil || s.Total == 0 && len(s.Hints()) == 0 {
		return nil
	}
	if len(s.Connections) > 0 {
		b.WriteString("\nTLS connections\n")
		tbl := t.tables.get(left, left, left, left, left, left, right)
		tbl.Header("CLIENT", "BROKER", "VERSION", "CIPHER SUITE", "SNI", "STATUS", "DECRYPTED BYTES")
		for _, c := range s.Connections {
			status := c.Status
			if c.Reason != "" {
				status += " (" + c.Reason + ")"
			}
			if c.Resumed {
				status += ", resumed"
			}
			if c.KeyUpdates > 0 {
				status += ", " + plural(int64(c.KeyUpdates), "key update")
			}
			row := []string{c.Client.String(), c.Broker.String(), dash(c.Version), dash(c.CipherSuite), dash(Printable(c.SNI)), status, itoa(c.Bytes)}
			if err := tbl.Append(row); err != nil {
				return fmt.Errorf("report: summary: %w", err)
			}
		}
		if err := tbl.Render(); err != nil {
			return fmt.Errorf("report: summary: %w", err)
		}
		if s.Omitted > 0 {
			fmt.Fprintf(b, "(%s more not listed)\n", plural(int64(s.Omitted), "TLS connection"))
		}
	}
	for _, h := range s.Hints() {
		b.WriteString("hint: " + h + "\n")
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// jsonTLS is the summary's "tls" object.
type jsonTLS struct {
	Connections     []jsonTLSConnection `json:"connections"`
	Omitted         int                 `json:"connections_omitted,omitempty"`
	Total           int                 `json:"total"`
	Decrypted       int                 `json:"decrypted"`
	NoKey           int                 `json:"no_key"`
	MidStream       int                 `json:"mid_stream"`
	BadMAC          int                 `json:"bad_mac"`
	Undecryptable   int                 `json:"undecryptable"`
	BadMACRecords   int                 `json:"bad_mac_records,omitempty"`
	KeyLogLines     int                 `json:"keylog_lines"`
	KeyLogMalformed int                 `json:"keylog_malformed,omitempty"`
	Hints           []string            `json:"hints,omitempty"`
}

type jsonTLSConnection struct {
	Client      string `json:"client"`
	Broker      string `json:"broker"`
	Version     string `json:"version,omitempty"`
	CipherSuite string `json:"cipher_suite,omitempty"`
	SNI         string `json:"sni,omitempty"`
	Status      string `json:"status"`
	Reason      string `json:"reason,omitempty"`
	Resumed     bool   `json:"resumed,omitempty"`
	KeyUpdates  int    `json:"key_updates,omitempty"`
	BadMACs     int    `json:"bad_macs,omitempty"`
	Bytes       int64  `json:"decrypted_bytes"`
}

// toJSONTLS is s as the summary's "tls" object; nil for nil.
func toJSONTLS(s *TLSSummary) *jsonTLS {
	if s == nil {
		return nil
	}
	j := &jsonTLS{Connections: make([]jsonTLSConnection, len(s.Connections)), Omitted: s.Omitted,
		Total: s.Total, Decrypted: s.Decrypted, NoKey: s.NoKey, MidStream: s.MidStream, BadMAC: s.BadMAC,
		Undecryptable: s.Undecryptable, BadMACRecords: s.BadMACRecords,
		KeyLogLines: s.KeyLogLines, KeyLogMalformed: s.KeyLogMalformed, Hints: s.Hints()}
	for i, c := range s.Connections {
		j.Connections[i] = jsonTLSConnection{Client: c.Client.String(), Broker: c.Broker.String(), Version: c.Version,
			CipherSuite: c.CipherSuite, SNI: c.SNI, Status: c.Status, Reason: c.Reason, Resumed: c.Resumed,
			KeyUpdates: c.KeyUpdates, BadMACs: c.BadMACs, Bytes: c.Bytes}
	}
	return j
}
