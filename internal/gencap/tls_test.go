package gencap

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"strings"
	"testing"
)

// smallTLS is small with TLS: every kind of resend, a few connections.
func smallTLS(mtu int, seed int64) Config {
	c := small(mtu, seed)
	c.TLS = true
	return c
}

func generateTLS(t testing.TB, cfg Config) (file, keys []byte, m *Manifest) {
	t.Helper()
	var buf, kl bytes.Buffer
	m, err := GenerateKeyLog(&buf, &kl, cfg)
	if err != nil {
		t.Fatalf("GenerateKeyLog(%+v): %v", cfg, err)
	}
	return buf.Bytes(), kl.Bytes(), m
}

// TestTLSManifestDeterministic: crypto/tls's randomness changes every byte
// of a TLS capture from run to run, never its manifest or its length.
func TestTLSManifestDeterministic(t *testing.T) {
	for _, cfg := range []Config{smallTLS(65535, 7), smallTLS(1500, 7), func() Config { c := smallTLS(1500, 7); c.Secrets = true; return c }()} {
		a, ka, ma := generateTLS(t, cfg)
		b, kb, mb := generateTLS(t, cfg)
		var ja, jb bytes.Buffer
		if err := ma.WriteJSON(&ja); err != nil {
			t.Fatal(err)
		}
		if err := mb.WriteJSON(&jb); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ja.Bytes(), jb.Bytes()) {
			t.Fatalf("mtu %d secrets %v: two runs give different manifests:\n%s\n%s", cfg.MTU, cfg.Secrets, ja.Bytes(), jb.Bytes())
		}
		if len(a) != len(b) || int64(len(a)) != ma.Totals.Bytes || len(ka) != len(kb) {
			t.Fatalf("mtu %d secrets %v: files of %d and %d bytes, key logs of %d and %d, manifest %d",
				cfg.MTU, cfg.Secrets, len(a), len(b), len(ka), len(kb), ma.Totals.Bytes)
		}
		if bytes.Equal(a, b) || bytes.Equal(ka, kb) {
			t.Fatalf("mtu %d: two TLS runs gave the same bytes: is crypto/tls random no more?", cfg.MTU)
		}
		tl := ma.TLS
		if tl == nil || tl.Version != "TLS 1.3" || tl.KeyLogLines != 4*ma.Totals.Connections || sumSuites(tl.CipherSuites) != ma.Totals.Connections {
			t.Fatalf("manifest TLS %+v for %d connections", tl, ma.Totals.Connections)
		}
		if n := int64(strings.Count(string(ka), "\n")); n != tl.KeyLogLines {
			t.Fatalf("key log of %d lines, manifest %d", n, tl.KeyLogLines)
		}
		if len(ma.Resends) == 0 || len(ma.Totals.Verdicts) != 4 {
			t.Fatalf("TLS capture with resends %v", ma.Totals.Verdicts)
		}
	}
}

func sumSuites(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// TestTLSPlaintextUnchanged: the TLS mode leaves the plaintext capture of a
// Config as it was.
func TestTLSPlaintextUnchanged(t *testing.T) {
	plain, mp := generate(t, small(65535, 3))
	var kl bytes.Buffer
	var again bytes.Buffer
	if _, err := GenerateKeyLog(&again, &kl, small(65535, 3)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(plain, again.Bytes()) || kl.Len() != 0 || mp.TLS != nil {
		t.Fatalf("a plaintext config with a key log writer: %d vs %d bytes, %d key log bytes, manifest TLS %+v", len(plain), again.Len(), kl.Len(), mp.TLS)
	}
}

func TestTLSConfigErrors(t *testing.T) {
	var buf bytes.Buffer
	if _, err := Generate(&buf, Config{Secrets: true}); err == nil || buf.Len() != 0 {
		t.Fatalf("secrets without tls: %v, %d bytes written", err, buf.Len())
	}
}

// TestTLSSecretsBlocks: a pcapng with Config.Secrets holds one Decryption
// Secrets Block per connection, before any packet of it, whose key logs
// are the key log file's lines.
func TestTLSSecretsBlocks(t *testing.T) {
	cfg := smallTLS(1500, 4)
	cfg.Secrets = true
	file, keys, m := generateTLS(t, cfg)
	blocks, err := ngBlocks(file)
	if err != nil {
		t.Fatal(err)
	}
	var dsb, epb int64
	var kl []byte
	for i, b := range blocks {
		switch {
		case i == 0 && b.typ != ngBlockSHB, i == 1 && b.typ != ngBlockIDB:
			t.Fatalf("block %d of type %#x", i, b.typ)
		case b.typ == ngBlockDSB:
			dsb++
			if le32(b.body) != ngSecretsTLS || int(le32(b.body[4:])) > len(b.body)-8 {
				t.Fatalf("secrets block %d: %x", i, b.body[:8])
			}
			kl = append(kl, b.body[8:8+le32(b.body[4:])]...)
			// The next block is the connection's SYN (flags at Ethernet
			// 14 + IPv4 20 + 13, after the EPB's 20 bytes).
			if next := blocks[i+1]; next.typ != ngBlockEPB || next.body[20+14+20+13]&flagSYN == 0 {
				t.Fatalf("secrets block %d not before a SYN", i)
			}
		case b.typ == ngBlockEPB:
			epb++
		}
	}
	if dsb != m.Totals.Connections || epb != m.Totals.Packets || !bytes.Equal(kl, keys) || int64(len(file)) != m.Totals.Bytes {
		t.Fatalf("%d secrets blocks, %d packets, key logs equal %v; manifest %+v", dsb, epb, bytes.Equal(kl, keys), m.Totals)
	}
}

type ngBlock struct {
	typ  uint32
	body []byte // after type and length, before the trailing length
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// ngBlocks splits a little-endian pcapng into its blocks, checking their
// lengths.
func ngBlocks(b []byte) ([]ngBlock, error) {
	var out []ngBlock
	for off := 0; off < len(b); {
		if len(b)-off < 12 {
			return nil, fmt.Errorf("%d bytes left at %d", len(b)-off, off)
		}
		n := int(le32(b[off+4:]))
		if n < 12 || n%4 != 0 || n > len(b)-off || le32(b[off+n-4:]) != uint32(n) {
			return nil, fmt.Errorf("block at %d: length %d", off, n)
		}
		out = append(out, ngBlock{typ: le32(b[off:]), body: b[off+8 : off+n-4]})
		off += n
	}
	return out, nil
}

// TestTLSCertificate: the brokers' built-in certificate and key match and
// are ECDSA, and every signature is 72 bytes long.
func TestTLSCertificate(t *testing.T) {
	base, err := tlsConfigs()
	if err != nil {
		t.Fatal(err)
	}
	cert := base.server.Certificates[0]
	pub, ok := cert.Leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || !pub.Equal(cert.PrivateKey.(fixedLenSigner).Public()) {
		t.Fatal("certificate and key do not match")
	}
	if _, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: base.client.RootCAs, DNSName: "broker-1.kafka.gencap.test", CurrentTime: cert.Leaf.NotBefore.AddDate(1, 0, 0)}); err != nil {
		t.Fatal(err)
	}
	if b, _ := pem.Decode([]byte(tlsKeyPEM)); b == nil || b.Type != "TESTING KEY" {
		t.Fatal("the key's PEM type is not TESTING KEY")
	}
	digest := make([]byte, 32)
	for i := range 50 {
		digest[0] = byte(i)
		sig, err := cert.PrivateKey.(fixedLenSigner).Sign(rand.Reader, digest, nil)
		if err != nil || len(sig) != ecdsaP256MaxSig || !ecdsa.VerifyASN1(pub, digest, sig) {
			t.Fatalf("signature %d: %d bytes, %v", i, len(sig), err)
		}
	}
}

func BenchmarkGenerateTLS(b *testing.B) {
	cfg := Config{TargetBytes: 8 << 20, MTU: 65535, Seed: 1, TLS: true}
	b.ReportAllocs()
	b.SetBytes(cfg.TargetBytes)
	for b.Loop() {
		if _, err := GenerateKeyLog(io.Discard, io.Discard, cfg); err != nil {
			b.Fatal(err)
		}
	}
}
