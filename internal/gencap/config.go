package gencap

import (
	"cmp"
	"fmt"
)

// Config says what to generate. The zero value of every field picks its
// default (see DefaultConfig); a negative ResendEvery or RetransmitEvery
// turns that feature off.
type Config struct {
	// TargetBytes is the size of the capture file to aim for. Generation
	// stops starting new requests once the file (written plus scheduled
	// packets) reaches it, then lets every exchange in flight finish and
	// closes every connection, so the file ends a little larger.
	TargetBytes int64 `json:"target_bytes"`
	// MTU is 65535 (loopback style: 127.0.0.0/8 addresses, zero MACs) or
	// 1500 (Ethernet style: 10.0.0.0/8 addresses). TCP payloads are cut to
	// MTU-40 bytes.
	MTU int `json:"mtu"`
	// Seed makes the capture: the same Config gives the same bytes.
	Seed int64 `json:"seed"`
	// Conns is the number of client connections open at the same time.
	Conns int `json:"conns"`
	// Brokers is the number of brokers, each listening on port 9092.
	Brokers int `json:"brokers"`
	// ResendEvery makes every ResendEvery-th record batch a known resend:
	// the batch is sent twice with two correlation IDs on one connection.
	ResendEvery int `json:"resend_every"`
	// RetransmitEvery writes every RetransmitEvery-th data segment twice
	// (a TCP retransmission, not a Kafka resend).
	RetransmitEvery int `json:"retransmit_every"`
	// TLS makes every connection TLS 1.3 (crypto/tls on both sides, in
	// process; tls.go): the same Kafka traffic, encrypted, its handshake
	// first. The key log goes to GenerateKeyLog's writer.
	TLS bool `json:"tls,omitempty"`
	// Secrets writes a pcapng instead of a pcap, carrying each TLS
	// connection's key log in a Decryption Secrets Block before its first
	// packet, so that the capture decrypts with no key log file. It needs
	// TLS.
	Secrets bool `json:"secrets,omitempty"`
	// AcksAll gives every producer acks=all, idempotent and not in turn,
	// where producers otherwise cycle through four classes (acks=1 and
	// acks=0 among them): with ResendEvery 1 every produce exchange but
	// the capture's first is then a resend, for a capture of many findings
	// in few bytes.
	AcksAll bool `json:"acks_all,omitempty"`
	// MaxRecords bounds the records of a batch (1..50; 0 is 50): each
	// batch holds 1..MaxRecords.
	MaxRecords int `json:"max_records,omitempty"`
	// MaxValueBytes bounds a record's value (100..1000 bytes; 0 is 1000):
	// each value is 100..MaxValueBytes long.
	MaxValueBytes int `json:"max_value_bytes,omitempty"`
}

// Defaults used for zero Config fields.
const (
	DefaultTargetBytes     = 100 << 20
	DefaultMTU             = 65535
	DefaultConns           = 16
	DefaultBrokers         = 3
	DefaultResendEvery     = 500
	DefaultRetransmitEvery = 1000
)

// DefaultConfig returns the configuration `make bench` uses.
func DefaultConfig() Config {
	return Config{
		TargetBytes:     DefaultTargetBytes,
		MTU:             DefaultMTU,
		Seed:            1,
		Conns:           DefaultConns,
		Brokers:         DefaultBrokers,
		ResendEvery:     DefaultResendEvery,
		RetransmitEvery: DefaultRetransmitEvery,
	}
}

// batchShape is the most records of a batch and bytes of a value:
// MaxRecords and MaxValueBytes, or the defaults for zero. They are not
// filled in by withDefaults, so that the manifests of the captures made
// before them (their Config) stay as they were.
func (c Config) batchShape() (records, valueBytes int) {
	return cmp.Or(c.MaxRecords, maxRecords), cmp.Or(c.MaxValueBytes, maxValueBytes)
}

// withDefaults fills zero fields and checks the rest.
func (c Config) withDefaults() (Config, error) {
	if c.TargetBytes == 0 {
		c.TargetBytes = DefaultTargetBytes
	}
	if c.MTU == 0 {
		c.MTU = DefaultMTU
	}
	if c.Conns == 0 {
		c.Conns = DefaultConns
	}
	if c.Brokers == 0 {
		c.Brokers = DefaultBrokers
	}
	if c.ResendEvery == 0 {
		c.ResendEvery = DefaultResendEvery
	}
	if c.RetransmitEvery == 0 {
		c.RetransmitEvery = DefaultRetransmitEvery
	}
	switch {
	case c.TargetBytes < 0:
		return c, fmt.Errorf("gencap: target bytes %d is negative", c.TargetBytes)
	case c.MTU != 1500 && c.MTU != 65535:
		return c, fmt.Errorf("gencap: mtu %d is neither 1500 nor 65535", c.MTU)
	case c.Conns < 0 || c.Conns > 10000:
		return c, fmt.Errorf("gencap: conns %d is outside 1..10000", c.Conns)
	case c.Brokers < 0 || c.Brokers > 250:
		return c, fmt.Errorf("gencap: brokers %d is outside 1..250", c.Brokers)
	case c.MaxRecords < 0 || c.MaxRecords > maxRecords:
		return c, fmt.Errorf("gencap: max records %d is outside %d..%d", c.MaxRecords, minRecords, maxRecords)
	case c.MaxValueBytes != 0 && (c.MaxValueBytes < minValueBytes || c.MaxValueBytes > maxValueBytes):
		return c, fmt.Errorf("gencap: max value bytes %d is outside %d..%d", c.MaxValueBytes, minValueBytes, maxValueBytes)
	case c.Secrets && !c.TLS:
		return c, fmt.Errorf("gencap: secrets (a pcapng carrying TLS keys) needs tls")
	}
	return c, nil
}
