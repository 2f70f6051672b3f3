package tlsdecrypt

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/capture"
)

// event is one write of one side, as a capture's reassembly would hand
// it on: fromA is the client.
type event struct {
	fromA bool
	data  []byte
	gap   int // > 0: a gap of that many bytes instead of data
}

// session is a recorded TLS connection: the raw bytes of each write in
// order, the key log, and the application bytes each side wrote.
type session struct {
	events []event
	keylog []byte
	sent   [2][]byte // [0]: the client's plaintext, [1]: the server's
	state  tls.ConnectionState
}

type recorder struct {
	mu     sync.Mutex
	events []event
}

func (r *recorder) add(fromA bool, p []byte) {
	r.mu.Lock()
	r.events = append(r.events, event{fromA: fromA, data: append([]byte(nil), p...)})
	r.mu.Unlock()
}

// recConn records what is written through it before sending it.
type recConn struct {
	net.Conn
	r     *recorder
	fromA bool
}

func (c *recConn) Write(p []byte) (int, error) {
	c.r.add(c.fromA, p)
	return c.Conn.Write(p)
}

var (
	certOnce          sync.Once
	ecCert, rsaCert   tls.Certificate
	rsaKeyPEM, rsaPEM []byte
)

func certTemplate() *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "broker.test"},
		DNSNames:     []string{"broker.test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
}

// ecdsaCert makes a self-signed ECDSA P-256 certificate (cheap: no RSA
// key generation, which is slow under fuzzing instrumentation).
func ecdsaCert() tls.Certificate {
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := certTemplate()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &ek.PublicKey, ek)
	if err != nil {
		panic(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: ek}
}

// certs makes self-signed ECDSA and RSA certificates, once.
func certs(t testing.TB) (ec, rs tls.Certificate) {
	certOnce.Do(func() {
		ecCert = ecdsaCert()
		rk, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		tmpl := certTemplate()
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &rk.PublicKey, rk)
		if err != nil {
			panic(err)
		}
		rsaCert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: rk}
		rsaPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		rsaKeyPEM = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rk)})
	})
	return ecCert, rsaCert
}

// payload is deterministic application data of n bytes.
func payload(tag byte, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = tag ^ byte(i*7) ^ byte(i>>8)
	}
	return p
}

// goSession runs a TLS connection between crypto/tls client and server
// over loopback TCP: the client writes each size in turn and the server
// answers each with a message of half that size plus one. The key log is
// written by the client.
func goSession(t testing.TB, ccfg, scfg *tls.Config, sizes []int) *session {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var rec recorder
	var keylog bytes.Buffer
	ccfg = ccfg.Clone()
	ccfg.KeyLogWriter = &keylog
	ccfg.InsecureSkipVerify = true
	if ccfg.ServerName == "" {
		ccfg.ServerName = "broker.test"
	}
	s := &session{}
	srvErr := make(chan error, 1)
	go func() {
		raw, err := ln.Accept()
		if err != nil {
			srvErr <- err
			return
		}
		defer raw.Close()
		sc := tls.Server(&recConn{raw, &rec, false}, scfg)
		for i, n := range sizes {
			buf := make([]byte, n)
			if _, err := io.ReadFull(sc, buf); err != nil {
				srvErr <- err
				return
			}
			reply := payload(byte(0x80+i), n/2+1)
			s.sent[1] = append(s.sent[1], reply...)
			if _, err := sc.Write(reply); err != nil {
				srvErr <- err
				return
			}
		}
		io.Copy(io.Discard, sc)
		sc.Close()
		srvErr <- nil
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	cc := tls.Client(&recConn{raw, &rec, true}, ccfg)
	cc.SetDeadline(time.Now().Add(20 * time.Second))
	for i, n := range sizes {
		msg := payload(byte(i+1), n)
		s.sent[0] = append(s.sent[0], msg...)
		if _, err := cc.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(cc, make([]byte, n/2+1)); err != nil {
			t.Fatal(err)
		}
	}
	s.state = cc.ConnectionState()
	cc.Close()
	if err := <-srvErr; err != nil {
		t.Fatal(err)
	}
	raw.Close()
	rec.mu.Lock()
	s.events = rec.events
	rec.mu.Unlock()
	s.keylog = keylog.Bytes()
	return s
}

// sink is an inner Stream recording what it is handed.
type sink struct {
	data   [2][]byte
	calls  [2]int
	gaps   [2]int
	closed bool
	first  [2]*byte // the first byte of the first slice handed, for no-copy checks
}

func (s *sink) Data(fromA bool, p []byte, _ time.Time) bool {
	i := idx(fromA)
	if s.calls[i] == 0 && len(p) > 0 {
		s.first[i] = &p[0]
	}
	s.calls[i]++
	s.data[i] = append(s.data[i], p...)
	return true
}
func (s *sink) Gap(fromA bool, _ int, _ time.Time) { s.gaps[idx(fromA)]++ }
func (s *sink) Close(time.Time)                    { s.closed = true }

var (
	clientAddr = netip.MustParseAddrPort("10.0.0.1:51000")
	brokerAddr = netip.MustParseAddrPort("10.0.0.2:9093")
)

// split modes: how the events are cut into Data calls.
type split int

const (
	splitEvents split = iota // one call per write
	splitWhole               // consecutive writes of one side in one call
	splitBytes               // one byte per call
	splitRandom              // random cuts
)

func (s split) String() string {
	return [...]string{"events", "whole", "bytes", "random"}[s]
}

// chunks cuts the events into Data calls.
func chunks(events []event, mode split, seed uint64) []event {
	var out []event
	r := mrand.New(mrand.NewPCG(seed, 7))
	for _, e := range events {
		if e.gap > 0 {
			out = append(out, e)
			continue
		}
		switch mode {
		case splitEvents:
			out = append(out, e)
		case splitWhole:
			if n := len(out); n > 0 && out[n-1].fromA == e.fromA {
				out[n-1].data = append(out[n-1].data, e.data...)
			} else {
				out = append(out, event{fromA: e.fromA, data: append([]byte(nil), e.data...)})
			}
		case splitBytes:
			for i := range e.data {
				out = append(out, event{fromA: e.fromA, data: e.data[i : i+1]})
			}
		case splitRandom:
			for p := e.data; len(p) > 0; {
				n := min(len(p), 1+r.IntN(3000))
				if r.IntN(4) == 0 {
					n = min(len(p), 1+r.IntN(6))
				}
				out = append(out, event{fromA: e.fromA, data: p[:n]})
				p = p[n:]
			}
		}
	}
	return out
}

// keyLogOf parses key log text, failing on malformed lines.
func keyLogOf(t testing.TB, text []byte) *KeyLog {
	t.Helper()
	k := NewKeyLog()
	k.Add(text, "test.keylog")
	if m := k.Malformed(); len(m) > 0 {
		t.Fatalf("malformed key log: %v", m)
	}
	return k
}

// run feeds chunks into a new connection of d and closes it.
func run(d *Decrypter, chs []event) *sink {
	s, st := open(d, clientAddr)
	feedAll(st, chs)
	st.Close(time.Unix(3, 0))
	return s
}

// open makes a connection of d from client to brokerAddr.
func open(d *Decrypter, client netip.AddrPort) (*sink, capture.Stream) {
	s := &sink{}
	st := d.Wrap(func(a, b netip.AddrPort, ts time.Time) capture.Stream { return s })(client, brokerAddr, time.Unix(1, 0))
	return s, st
}

func feedAll(st capture.Stream, chs []event) {
	for _, c := range chs {
		if c.gap > 0 {
			st.Gap(c.fromA, c.gap, time.Unix(2, 0))
			continue
		}
		st.Data(c.fromA, c.data, time.Unix(2, 0))
	}
}

// onlyConn returns the single ConnState of d.
func onlyConn(t testing.TB, d *Decrypter) ConnState {
	t.Helper()
	cs := d.Conns()
	if len(cs) != 1 {
		t.Fatalf("%d TLS connections, want 1", len(cs))
	}
	return cs[0]
}

// flipSecrets returns the key log with every byte of every secret flipped.
func flipSecrets(text []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(text, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) == 3 {
			sec := f[2]
			flipped := make([]byte, len(sec))
			for i, c := range sec {
				v := hexVal(c) ^ 0xf
				flipped[i] = "0123456789abcdef"[v]
			}
			line = bytes.Join([][]byte{f[0], f[1], flipped}, []byte(" "))
		}
		out = append(out, line...)
		out = append(out, '\n')
	}
	return out
}

func hexVal(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10
	}
	return 0
}

func clientAddrN(i int) netip.AddrPort {
	return netip.AddrPortFrom(clientAddr.Addr(), clientAddr.Port()+uint16(i))
}
