package tlsdecrypt

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"hash"
)

// cipherKind is how a suite protects records.
type cipherKind uint8

const (
	cipherGCM    cipherKind = iota + 1 // AES-GCM
	cipherChaCha                       // ChaCha20-Poly1305
	cipherCBC                          // AES-CBC with HMAC
)

// suite describes a cipher suite this package decrypts.
type suite struct {
	id     uint16
	tls13  bool
	kind   cipherKind
	keyLen int              // cipher key bytes
	macLen int              // HMAC bytes (CBC only)
	mac    func() hash.Hash // HMAC hash (CBC only)
	prf    func() hash.Hash // TLS 1.2 PRF hash, TLS 1.3 HKDF hash
}

func newSHA256() hash.Hash { return sha256.New() }
func newSHA384() hash.Hash { return sha512.New384() }
func newSHA1() hash.Hash   { return sha1.New() }

var suites = map[uint16]*suite{
	// TLS 1.3 (RFC 8446 B.4)
	0x1301: {kind: cipherGCM, tls13: true, keyLen: 16, prf: newSHA256},
	0x1302: {kind: cipherGCM, tls13: true, keyLen: 32, prf: newSHA384},
	0x1303: {kind: cipherChaCha, tls13: true, keyLen: 32, prf: newSHA256},

	// TLS 1.2 AES-GCM (RFC 5288, 5289)
	0xc02f: {kind: cipherGCM, keyLen: 16, prf: newSHA256}, // ECDHE_RSA_WITH_AES_128_GCM_SHA256
	0xc02b: {kind: cipherGCM, keyLen: 16, prf: newSHA256}, // ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
	0x009c: {kind: cipherGCM, keyLen: 16, prf: newSHA256}, // RSA_WITH_AES_128_GCM_SHA256
	0x009e: {kind: cipherGCM, keyLen: 16, prf: newSHA256}, // DHE_RSA_WITH_AES_128_GCM_SHA256
	0xc030: {kind: cipherGCM, keyLen: 32, prf: newSHA384}, // ECDHE_RSA_WITH_AES_256_GCM_SHA384
	0xc02c: {kind: cipherGCM, keyLen: 32, prf: newSHA384}, // ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
	0x009d: {kind: cipherGCM, keyLen: 32, prf: newSHA384}, // RSA_WITH_AES_256_GCM_SHA384
	0x009f: {kind: cipherGCM, keyLen: 32, prf: newSHA384}, // DHE_RSA_WITH_AES_256_GCM_SHA384

	// TLS 1.2 ChaCha20-Poly1305 (RFC 7905)
	0xcca8: {kind: cipherChaCha, keyLen: 32, prf: newSHA256}, // ECDHE_RSA
	0xcca9: {kind: cipherChaCha, keyLen: 32, prf: newSHA256}, // ECDHE_ECDSA
	0xccaa: {kind: cipherChaCha, keyLen: 32, prf: newSHA256}, // DHE_RSA

	// TLS 1.2 AES-CBC with HMAC-SHA1 (RFC 4492, 5246)
	0xc013: {kind: cipherCBC, keyLen: 16, macLen: 20, mac: newSHA1, prf: newSHA256}, // ECDHE_RSA_WITH_AES_128_CBC_SHA
	0xc014: {kind: cipherCBC, keyLen: 32, macLen: 20, mac: newSHA1, prf: newSHA256}, // ECDHE_RSA_WITH_AES_256_CBC_SHA
	0xc009: {kind: cipherCBC, keyLen: 16, macLen: 20, mac: newSHA1, prf: newSHA256}, // ECDHE_ECDSA_WITH_AES_128_CBC_SHA
	0xc00a: {kind: cipherCBC, keyLen: 32, macLen: 20, mac: newSHA1, prf: newSHA256}, // ECDHE_ECDSA_WITH_AES_256_CBC_SHA
	0x002f: {kind: cipherCBC, keyLen: 16, macLen: 20, mac: newSHA1, prf: newSHA256}, // RSA_WITH_AES_128_CBC_SHA
	0x0035: {kind: cipherCBC, keyLen: 32, macLen: 20, mac: newSHA1, prf: newSHA256}, // RSA_WITH_AES_256_CBC_SHA
	0x0033: {kind: cipherCBC, keyLen: 16, macLen: 20, mac: newSHA1, prf: newSHA256}, // DHE_RSA_WITH_AES_128_CBC_SHA
	0x0039: {kind: cipherCBC, keyLen: 32, macLen: 20, mac: newSHA1, prf: newSHA256}, // DHE_RSA_WITH_AES_256_CBC_SHA

	// TLS 1.2 AES-CBC with HMAC-SHA256/384 (RFC 5246, 5289)
	0xc027: {kind: cipherCBC, keyLen: 16, macLen: 32, mac: newSHA256, prf: newSHA256}, // ECDHE_RSA_WITH_AES_128_CBC_SHA256
	0xc023: {kind: cipherCBC, keyLen: 16, macLen: 32, mac: newSHA256, prf: newSHA256}, // ECDHE_ECDSA_WITH_AES_128_CBC_SHA256
	0x003c: {kind: cipherCBC, keyLen: 16, macLen: 32, mac: newSHA256, prf: newSHA256}, // RSA_WITH_AES_128_CBC_SHA256
	0x003d: {kind: cipherCBC, keyLen: 32, macLen: 32, mac: newSHA256, prf: newSHA256}, // RSA_WITH_AES_256_CBC_SHA256
	0x0067: {kind: cipherCBC, keyLen: 16, macLen: 32, mac: newSHA256, prf: newSHA256}, // DHE_RSA_WITH_AES_128_CBC_SHA256
	0x006b: {kind: cipherCBC, keyLen: 32, macLen: 32, mac: newSHA256, prf: newSHA256}, // DHE_RSA_WITH_AES_256_CBC_SHA256
	0xc028: {kind: cipherCBC, keyLen: 32, macLen: 48, mac: newSHA384, prf: newSHA384}, // ECDHE_RSA_WITH_AES_256_CBC_SHA384
	0xc024: {kind: cipherCBC, keyLen: 32, macLen: 48, mac: newSHA384, prf: newSHA384}, // ECDHE_ECDSA_WITH_AES_256_CBC_SHA384
}

func init() {
	for id, s := range suites {
		s.id = id
	}
}

// suiteName names a cipher suite as IANA does, or by number.
func suiteName(id uint16) string {
	if n, ok := suiteNames[id]; ok {
		return n
	}
	return tlsSuiteName(id)
}

// suiteNames covers the suites crypto/tls cannot name.
var suiteNames = map[uint16]string{
	0x009e: "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256",
	0x009f: "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384",
	0xccaa: "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
	0x0033: "TLS_DHE_RSA_WITH_AES_128_CBC_SHA",
	0x0039: "TLS_DHE_RSA_WITH_AES_256_CBC_SHA",
	0x0067: "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256",
	0x006b: "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256",
	0x003d: "TLS_RSA_WITH_AES_256_CBC_SHA256",
	0xc028: "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384",
	0xc024: "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384",
}
