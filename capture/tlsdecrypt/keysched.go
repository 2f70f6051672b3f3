package tlsdecrypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/tls"
	"errors"
	"hash"

	"golang.org/x/crypto/chacha20poly1305"
)

func tlsSuiteName(id uint16) string { return tls.CipherSuiteName(id) }

// expandLabel is HKDF-Expand-Label of RFC 8446 7.1 with an empty context.
func expandLabel(h func() hash.Hash, secret []byte, label string, n int) []byte {
	full := "tls13 " + label
	info := make([]byte, 0, 4+len(full))
	info = append(info, byte(n>>8), byte(n), byte(len(full)))
	info = append(info, full...)
	info = append(info, 0) // empty context
	out, err := hkdf.Expand(h, secret, string(info), n)
	if err != nil {
		panic("tlsdecrypt: hkdf: " + err.Error()) // only for n too large: a bug
	}
	return out
}

// nextSecret is the traffic secret after a KeyUpdate (RFC 8446 7.2).
func nextSecret(s *suite, secret []byte) []byte {
	return expandLabel(s.prf, secret, "traffic upd", len(secret))
}

// newCipher13 makes the record cipher of a TLS 1.3 traffic secret.
func newCipher13(s *suite, secret []byte) (*recordCipher, error) {
	if len(secret) != s.prf().Size() {
		return nil, errors.New("secret length does not match the suite's hash")
	}
	key := expandLabel(s.prf, secret, "key", s.keyLen)
	iv := expandLabel(s.prf, secret, "iv", 12)
	rc := &recordCipher{suite: s, secret: secret}
	copy(rc.iv[:], iv)
	return rc, rc.initAEAD(key)
}

// prf12 is the TLS 1.2 PRF (RFC 5246 5): P_hash(secret, label + seed).
func prf12(h func() hash.Hash, secret []byte, label string, seed []byte, n int) []byte {
	ls := append([]byte(label), seed...)
	mac := hmac.New(h, secret)
	mac.Write(ls)
	a := mac.Sum(nil) // A(1)
	out := make([]byte, 0, n+mac.Size())
	for len(out) < n {
		mac.Reset()
		mac.Write(a)
		mac.Write(ls)
		out = mac.Sum(out)
		mac.Reset()
		mac.Write(a)
		a = mac.Sum(a[:0])
	}
	return out[:n]
}

// keys12 makes the client and server record ciphers of a TLS 1.2
// connection from its master secret (RFC 5246 6.3).
func keys12(s *suite, master []byte, clientRandom, serverRandom [32]byte, etm bool) (client, server *recordCipher, err error) {
	ivLen := 0
	switch s.kind {
	case cipherGCM:
		ivLen = 4
	case cipherChaCha:
		ivLen = 12
	}
	n := 2*s.macLen + 2*s.keyLen + 2*ivLen
	seed := make([]byte, 0, 64)
	seed = append(seed, serverRandom[:]...)
	seed = append(seed, clientRandom[:]...)
	kb := prf12(s.prf, master, "key expansion", seed, n)
	cmac, kb := kb[:s.macLen], kb[s.macLen:]
	smac, kb := kb[:s.macLen], kb[s.macLen:]
	ckey, kb := kb[:s.keyLen], kb[s.keyLen:]
	skey, kb := kb[:s.keyLen], kb[s.keyLen:]
	civ, siv := kb[:ivLen], kb[ivLen:]
	mk := func(mac, key, iv []byte) (*recordCipher, error) {
		rc := &recordCipher{suite: s, etm: etm}
		copy(rc.iv[:], iv)
		if s.kind == cipherCBC {
			b, err := aes.NewCipher(key)
			if err != nil {
				return nil, err
			}
			rc.block = b
			rc.cbc = cipher.NewCBCDecrypter(b, make([]byte, aes.BlockSize))
			rc.mac = hmac.New(s.mac, mac)
			return rc, nil
		}
		return rc, rc.initAEAD(key)
	}
	if client, err = mk(cmac, ckey, civ); err != nil {
		return nil, nil, err
	}
	if server, err = mk(smac, skey, siv); err != nil {
		return nil, nil, err
	}
	return client, server, nil
}

func (rc *recordCipher) initAEAD(key []byte) error {
	var err error
	switch rc.suite.kind {
	case cipherGCM:
		var b cipher.Block
		if b, err = aes.NewCipher(key); err == nil {
			rc.aead, err = cipher.NewGCM(b)
		}
	case cipherChaCha:
		rc.aead, err = chacha20poly1305.New(key)
	default:
		err = errors.New("not an AEAD suite")
	}
	return err
}
