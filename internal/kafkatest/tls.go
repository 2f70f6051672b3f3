package kafkatest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TLS is a cluster's TLS listener and the client side that talks to it.
// The broker's side of TLS is terminated in the harness's own listener,
// before the fault logic, so that faults still read and rewrite plaintext
// responses (kfake itself then serves plaintext behind it): on the wire,
// between client and listener, every byte is TLS. The client writes its
// key log (NSS format, tls.Config.KeyLogWriter) to KeyLog.
type TLS struct {
	// KeyLog receives the client's secrets; nil writes none (a capture of
	// such a run cannot be decrypted).
	KeyLog io.Writer
	// MaxVersion and CipherSuites restrict the client (TLS 1.2 and its
	// suites: Go offers no choice of TLS 1.3 suite); zero: Go's defaults.
	MaxVersion   uint16
	CipherSuites []uint16
	// SessionTickets lets the client resume sessions (a client session
	// cache), so that a second connection's handshake is abbreviated.
	SessionTickets bool

	cert  tls.Certificate
	roots *x509.CertPool
	cache tls.ClientSessionCache
}

// NewTLS makes a self-signed certificate for 127.0.0.1 and returns the
// TLS of a cluster that presents it.
func NewTLS(keyLog io.Writer) (*TLS, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: tls key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "kdupcap test broker"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: tls certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: tls certificate: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	return &TLS{KeyLog: keyLog, cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, roots: roots}, nil
}

// server is the broker side's configuration.
func (t *TLS) server() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{t.cert}, MinVersion: tls.VersionTLS12}
}

// Client is the client side's configuration, for any client of the
// cluster (the producer, the read back, a test's own).
func (t *TLS) Client() *tls.Config {
	cfg := &tls.Config{RootCAs: t.roots, ServerName: "localhost", KeyLogWriter: t.KeyLog,
		MinVersion: tls.VersionTLS12, MaxVersion: t.MaxVersion, CipherSuites: t.CipherSuites}
	if t.SessionTickets {
		if t.cache == nil {
			t.cache = tls.NewLRUClientSessionCache(16)
		}
		cfg.ClientSessionCache = t.cache
	}
	return cfg
}

// kgoOpts are the kgo options of a client of a cluster with t; none for a
// nil t.
func (t *TLS) kgoOpts() []kgo.Opt {
	if t == nil {
		return nil
	}
	return []kgo.Opt{kgo.DialTLSConfig(t.Client())}
}
