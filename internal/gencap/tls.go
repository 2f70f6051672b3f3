package gencap

import (
	"container/heap"
	"crypto"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// TLS mode (Config.TLS). Every connection is a real TLS 1.3 connection
// made by crypto/tls: a tls.Client and a tls.Server run their handshake in
// process over a memPipe, which records what each side writes; the
// handshake's flights (ClientHello; ServerHello, ChangeCipherSpec,
// EncryptedExtensions, Certificate, CertificateVerify, Finished; the
// client's ChangeCipherSpec and Finished; no NewSessionTicket, as a Go
// client without a session cache asks for none) are sent in that order and
// direction as TCP payload. Then every Kafka frame is written into its
// sender's tls.Conn and the records that come out are sent instead of the
// frame, cut by MSS as ever; closing sends each side's close_notify before
// the FINs. The client's tls.Config.KeyLogWriter gives the connection's
// NSS key log lines, for GenerateKeyLog's writer and, with Config.Secrets,
// a Decryption Secrets Block before the connection's SYN.
//
// Brokers present one fixed self-signed ECDSA P-256 certificate; clients
// verify it (SNI broker-N.kafka.gencap.test) and offer X25519 only. The
// suite is TLS_AES_128_GCM_SHA256 where the CPU has AES instructions
// (crypto/tls's own preference; TLS 1.3 suites cannot be configured), else
// TLS_CHACHA20_POLY1305_SHA256; the manifest names it.
//
// Determinism: crypto/tls draws its randoms, key shares and signatures
// from crypto/rand, so the bytes of a TLS capture and its key log differ on
// every run. Their lengths do not: every handshake message has a fixed
// length (fixedLenSigner makes the one variable one, the ECDSA signature,
// fixed), and so does every record, so the manifest (findings, packets,
// file size) is the same on every run of the same Config.

// tlsCertPEM and tlsKeyPEM are the brokers' certificate (CN
// kafka.gencap.test, SAN *.kafka.gencap.test, valid 2025 to 2100) and its
// key. The key guards nothing but synthetic captures; "TESTING KEY" stands
// for "PRIVATE KEY" so that secret scanners pass it by, as in crypto/tls's
// own tests.
const tlsCertPEM = `-----BEGIN CERTIFICATE-----
MIIB0zCCAXmgAwIBAgICI4QwCgYIKoZIzj0EAwIwNTEXMBUGA1UEChMOa2R1cGNh
cCBnZW5jYXAxGjAYBgNVBAMTEWthZmthLmdlbmNhcC50ZXN0MCAXDTI1MDEwMTAw
MDAwMFoYDzIxMDAwMTAxMDAwMDAwWjA1MRcwFQYDVQQKEw5rZHVwY2FwIGdlbmNh
cDEaMBgGA1UEAxMRa2Fma2EuZ2VuY2FwLnRlc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAATgGDToj1fYTGuQAutR5agfv+4sboEi+j+flkKcYNiwGom+MaOGepf8
g6YwKXjEWJXtA3FfVCBvY7ZeaiEZ1xkYo3cwdTAOBgNVHQ8BAf8EBAMCAoQwEwYD
VR0lBAwwCgYIKwYBBQUHAwEwDwYDVR0TAQH/BAUwAwEB/zAdBgNVHQ4EFgQUjOiS
DWRG/l2OwQu2CBBKQbUN2TEwHgYDVR0RBBcwFYITKi5rYWZrYS5nZW5jYXAudGVz
dDAKBggqhkjOPQQDAgNIADBFAiEAl3vphaQaamWGWJX6q9CpW4fej+kTGQBFOwHd
7ejzd7kCIA4ing6PK6rx9HVeczMrk3qDkqoMODAhvEc7pNIfrQ7j
-----END CERTIFICATE-----
`

const tlsKeyPEM = `-----BEGIN TESTING KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgICiEprlKKFDOdFdT
x0DuO4TTvijr/1jiCayxhSVTOnChRANCAATgGDToj1fYTGuQAutR5agfv+4sboEi
+j+flkKcYNiwGom+MaOGepf8g6YwKXjEWJXtA3FfVCBvY7ZeaiEZ1xkY
-----END TESTING KEY-----
`

// Handshake timing, µs: the broker's work between ClientHello and its
// flight (key share, signature), the client's between that flight and its
// Finished (verification), and the pause after the TCP handshake.
const (
	tlsServerMicros = 150
	tlsClientMicros = 100
	tlsHelloMicros  = 10
)

// TLSTotals says what the connections of a Config.TLS capture negotiated.
type TLSTotals struct {
	Version string `json:"version"`
	// CipherSuites counts connections by suite name.
	CipherSuites map[string]int64 `json:"cipher_suites"`
	// KeyLogLines counts the key log's lines (4 per connection).
	KeyLogLines int64 `json:"key_log_lines"`
}

// KeyLogPath is where the key log of the TLS capture at pcapPath goes.
func KeyLogPath(pcapPath string) string { return pcapPath + ".keys" }

// tlsConfigs are the brokers' and the clients' configurations, made once.
var tlsConfigs = sync.OnceValues(func() (*tlsBase, error) {
	cb, _ := pem.Decode([]byte(tlsCertPEM))
	kb, _ := pem.Decode([]byte(strings.ReplaceAll(tlsKeyPEM, "TESTING KEY", "PRIVATE KEY")))
	if cb == nil || kb == nil {
		return nil, errors.New("gencap: bad built-in TLS certificate")
	}
	leaf, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("gencap: built-in TLS certificate: %w", err)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("gencap: built-in TLS key: %w", err)
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("gencap: built-in TLS key is not ECDSA")
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	curves := []tls.CurveID{tls.X25519}
	return &tlsBase{
		server: &tls.Config{
			Certificates:     []tls.Certificate{{Certificate: [][]byte{cb.Bytes}, PrivateKey: fixedLenSigner{key}, Leaf: leaf}},
			MinVersion:       tls.VersionTLS13,
			CurvePreferences: curves,
		},
		client: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS13, CurvePreferences: curves},
	}, nil
})

type tlsBase struct{ server, client *tls.Config }

// fixedLenSigner signs with key and hands out only signatures of the
// longest DER encoding (72 bytes for P-256: r and s both 33 bytes with
// their sign byte), drawing again otherwise (about 4 draws): an ECDSA
// signature is 70 to 72 bytes, and a fixed length keeps every
// CertificateVerify, so every handshake, the same length.
type fixedLenSigner struct{ key *ecdsa.PrivateKey }

const ecdsaP256MaxSig = 72

func (s fixedLenSigner) Public() crypto.PublicKey { return s.key.Public() }

func (s fixedLenSigner) Sign(r io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	for range 1000 {
		sig, err := s.key.Sign(r, digest, opts)
		if err != nil || len(sig) == ecdsaP256MaxSig {
			return sig, err
		}
	}
	return nil, errors.New("gencap: no 72-byte ECDSA signature in 1000 draws")
}

// tlsSession is one connection's TLS: both ends and the pipe between them.
type tlsSession struct {
	client, server *tls.Conn
	pipe           *memPipe
	keyLog         keyLogBuffer
	flights        []flight // the handshake, until scheduled
}

// keyLogBuffer collects the client's key log lines.
type keyLogBuffer struct{ b []byte }

func (k *keyLogBuffer) Write(p []byte) (int, error) {
	k.b = append(k.b, p...)
	return len(p), nil
}

// startTLS runs c's TLS handshake at capture time t, before its SYN is
// scheduled: it writes the key log lines and, with Config.Secrets,
// schedules their secrets block at t, before the SYN. A failure is g.err.
func (g *generator) startTLS(c *conn, t int64) {
	s, err := newTLSSession(c, t)
	if err != nil {
		g.err = err
		return
	}
	c.tls = s
	if g.man.TLS == nil {
		g.man.TLS = &TLSTotals{Version: "TLS 1.3", CipherSuites: map[string]int64{}}
	}
	g.man.TLS.CipherSuites[tls.CipherSuiteName(s.client.ConnectionState().CipherSuite)]++
	g.man.TLS.KeyLogLines += int64(countLines(s.keyLog.b))
	if g.keys != nil {
		if _, err := g.keys.Write(s.keyLog.b); err != nil {
			g.err = fmt.Errorf("gencap: write key log: %w", err)
			return
		}
	}
	if g.ng != nil {
		sg := &segment{tsMicros: t, keyLog: s.keyLog.b, order: g.order}
		g.order++
		g.pendingBytes += g.fileBytes(sg)
		heap.Push(&g.segs, sg)
	}
}

func countLines(b []byte) int {
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}

// newTLSSession runs a TLS 1.3 handshake between a client and a broker
// whose clocks read capture time t, and keeps its flights.
func newTLSSession(c *conn, t int64) (*tlsSession, error) {
	base, err := tlsConfigs()
	if err != nil {
		return nil, err
	}
	now := time.UnixMicro(t).UTC()
	clock := func() time.Time { return now }
	s := &tlsSession{pipe: newMemPipe()}
	cc := base.client.Clone()
	cc.ServerName = fmt.Sprintf("broker-%d.kafka.gencap.test", c.p.broker.addr.As4()[3])
	cc.KeyLogWriter = &s.keyLog
	cc.Time = clock
	sc := base.server.Clone()
	sc.Time = clock
	s.client = tls.Client(&pipeEnd{p: s.pipe, side: 0}, cc)
	s.server = tls.Server(&pipeEnd{p: s.pipe, side: 1}, sc)
	var wg sync.WaitGroup
	var serr error
	wg.Go(func() {
		if serr = s.server.Handshake(); serr != nil {
			s.pipe.close()
		}
	})
	cerr := s.client.Handshake()
	if cerr != nil {
		s.pipe.close()
	}
	wg.Wait()
	if err := errors.Join(cerr, serr); err != nil {
		return nil, fmt.Errorf("gencap: TLS handshake of %s: %w", c.client, err)
	}
	s.flights = s.pipe.endHandshake()
	if len(s.flights) < 3 || !s.flights[0].fromClient {
		return nil, fmt.Errorf("gencap: TLS handshake of %s: %d flights", c.client, len(s.flights))
	}
	return s, nil
}

// tlsHandshake schedules c's handshake flights from t on, each answered
// after half a round trip and the answerer's work, and the last one's
// ACK; it returns the time the client may send its first frame.
func (g *generator) tlsHandshake(c *conn, t int64) int64 {
	rtt := g.rtt()
	t += tlsHelloMicros
	for i, f := range c.tls.flights {
		if i > 0 {
			work := int64(tlsServerMicros)
			if f.fromClient {
				work = tlsClientMicros
			}
			t += rtt/2 + work
		}
		t = g.sendRaw(c, f.fromClient, t, f.data)
	}
	last := c.tls.flights[len(c.tls.flights)-1]
	c.tls.flights = nil
	g.control(c, !last.fromClient, t+rtt/2, flagACK)
	return t + rtt/2
}

// send schedules a Kafka frame on c: as it is, or on a TLS connection as
// the records its sender's tls.Conn makes of it.
func (g *generator) send(c *conn, fromClient bool, t int64, frame []byte) int64 {
	if c.tls == nil {
		return g.sendRaw(c, fromClient, t, frame)
	}
	end := c.tls.server
	if fromClient {
		end = c.tls.client
	}
	c.tls.pipe.expect(len(frame) + len(frame)/32 + 64)
	if _, err := end.Write(frame); err != nil && g.err == nil {
		g.err = fmt.Errorf("gencap: TLS write on %s: %w", c.client, err)
	}
	return g.sendRaw(c, fromClient, t, c.tls.pipe.take())
}

// closeTLS schedules the client's close_notify at t and the broker's
// answer after half a round trip; it returns the time after them.
func (g *generator) closeTLS(c *conn, t int64) int64 {
	s := c.tls
	c.tls = nil
	for _, fromClient := range []bool{true, false} {
		end := s.server
		if fromClient {
			end = s.client
		} else {
			t += g.rtt() / 2
		}
		if err := end.CloseWrite(); err != nil && g.err == nil {
			g.err = fmt.Errorf("gencap: TLS close_notify on %s: %w", c.client, err)
		}
		t = g.sendRaw(c, fromClient, t, s.pipe.take())
	}
	return t + 1
}

// flight is what one side wrote before the other wrote again.
type flight struct {
	fromClient bool
	data       []byte
}

// memPipe joins a tls.Client (side 0) and a tls.Server (side 1). During
// the handshake what one side writes the other reads; after it, writes
// are only recorded. Every write is recorded, consecutive writes of one
// side in one flight, in the order they were made.
type memPipe struct {
	mu      sync.Mutex
	cond    sync.Cond
	unread  [2][]byte // what side i has yet to read
	flights []flight
	deliver bool
	closed  bool
	want    int // capacity of the next flight's buffer
}

func newMemPipe() *memPipe {
	p := &memPipe{deliver: true}
	p.cond.L = &p.mu
	return p
}

func (p *memPipe) close() {
	p.mu.Lock()
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
}

// endHandshake stops delivery and returns the flights so far.
func (p *memPipe) endHandshake() []flight {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deliver = false
	p.unread = [2][]byte{}
	f := p.flights
	p.flights = nil
	return f
}

// expect sizes the buffer of the next flight.
func (p *memPipe) expect(n int) {
	p.mu.Lock()
	p.want = n
	p.mu.Unlock()
}

// take returns the bytes written since the last take, in a new slice
// (one side writes at a time after the handshake).
func (p *memPipe) take() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b []byte
	if len(p.flights) == 1 {
		b = p.flights[0].data
	} else {
		for _, f := range p.flights {
			b = append(b, f.data...)
		}
	}
	clear(p.flights)
	p.flights = p.flights[:0]
	return b
}

func (p *memPipe) write(side int, b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, net.ErrClosed
	}
	if n := len(p.flights); n > 0 && p.flights[n-1].fromClient == (side == 0) {
		p.flights[n-1].data = append(p.flights[n-1].data, b...)
	} else {
		p.flights = append(p.flights, flight{fromClient: side == 0, data: append(make([]byte, 0, max(p.want, len(b))), b...)})
		p.want = 0
	}
	if p.deliver {
		p.unread[1-side] = append(p.unread[1-side], b...)
		p.cond.Broadcast()
	}
	return len(b), nil
}

func (p *memPipe) read(side int, b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.unread[side]) == 0 && !p.closed && p.deliver {
		p.cond.Wait()
	}
	if len(p.unread[side]) == 0 {
		return 0, io.EOF
	}
	n := copy(b, p.unread[side])
	p.unread[side] = p.unread[side][n:]
	return n, nil
}

// pipeEnd is one side of a memPipe as a net.Conn.
type pipeEnd struct {
	p    *memPipe
	side int
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "mem" }
func (pipeAddr) String() string  { return "mem" }

func (e *pipeEnd) Read(b []byte) (int, error)       { return e.p.read(e.side, b) }
func (e *pipeEnd) Write(b []byte) (int, error)      { return e.p.write(e.side, b) }
func (e *pipeEnd) Close() error                     { e.p.close(); return nil }
func (e *pipeEnd) LocalAddr() net.Addr              { return pipeAddr{} }
func (e *pipeEnd) RemoteAddr() net.Addr             { return pipeAddr{} }
func (e *pipeEnd) SetDeadline(time.Time) error      { return nil }
func (e *pipeEnd) SetReadDeadline(time.Time) error  { return nil }
func (e *pipeEnd) SetWriteDeadline(time.Time) error { return nil }
