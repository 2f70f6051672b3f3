package tlsdecrypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"encoding/binary"
	"errors"
	"hash"
)

// Record layer limits (RFC 8446 5.2, RFC 5246 6.2.3).
const (
	recordHeaderLen = 5
	maxPlaintext    = 1 << 14
	maxWire         = maxPlaintext + 2048 // TLS 1.2 ciphertext bound; 1.3's is lower
)

// Record content types.
const (
	typeCCS       = 20
	typeAlert     = 21
	typeHandshake = 22
	typeAppData   = 23
)

// errAuth is a record that does not authenticate: a wrong key, a wrong
// sequence number or damaged bytes. It never carries record bytes.
var errAuth = errors.New("bad record MAC")

// validHeader reports whether h (at least 5 bytes) is a plausible record
// header and returns the fragment length.
func validHeader(h []byte) (int, bool) {
	n := int(binary.BigEndian.Uint16(h[3:5]))
	if h[0] < typeCCS || h[0] > typeAppData+1 || h[1] != 3 || h[2] > 4 || n > maxWire {
		return n, false
	}
	return n, true
}

// recordCipher opens the protected records of one direction.
type recordCipher struct {
	suite  *suite
	secret []byte // TLS 1.3 traffic secret, for KeyUpdate
	aead   cipher.AEAD
	iv     [12]byte // TLS 1.3 and ChaCha: the full IV; TLS 1.2 GCM: 4-byte salt
	etm    bool     // encrypt-then-MAC (RFC 7366)
	block  cipher.Block
	cbc    cipher.BlockMode
	mac    hash.Hash
	nonce  [12]byte
	ad     [13]byte
	sum    [64]byte
}

type ivSetter interface{ SetIV([]byte) }

// open authenticates and decrypts one record (hdr is its 5-byte header,
// body its fragment) as number seq, into dst's storage (cap at least
// len(body)). It returns the content type and plaintext.
func (rc *recordCipher) open(dst []byte, seq uint64, hdr, body []byte) (byte, []byte, error) {
	s := rc.suite
	if s.tls13 {
		rc.nonce = rc.iv
		xorSeq(&rc.nonce, seq)
		pt, err := rc.aead.Open(dst[:0], rc.nonce[:], body, hdr)
		if err != nil {
			return 0, nil, errAuth
		}
		i := len(pt) - 1
		for i >= 0 && pt[i] == 0 {
			i--
		}
		if i < 0 {
			return 0, nil, errAuth // no content type: cannot be a sane record
		}
		return pt[i], pt[:i], nil
	}
	binary.BigEndian.PutUint64(rc.ad[:8], seq)
	rc.ad[8], rc.ad[9], rc.ad[10] = hdr[0], hdr[1], hdr[2]
	switch s.kind {
	case cipherGCM:
		if len(body) < 8+16 {
			return 0, nil, errAuth
		}
		copy(rc.nonce[:4], rc.iv[:4])
		copy(rc.nonce[4:], body[:8])
		binary.BigEndian.PutUint16(rc.ad[11:], uint16(len(body)-24))
		pt, err := rc.aead.Open(dst[:0], rc.nonce[:], body[8:], rc.ad[:])
		if err != nil {
			return 0, nil, errAuth
		}
		return hdr[0], pt, nil
	case cipherChaCha:
		if len(body) < 16 {
			return 0, nil, errAuth
		}
		rc.nonce = rc.iv
		xorSeq(&rc.nonce, seq)
		binary.BigEndian.PutUint16(rc.ad[11:], uint16(len(body)-16))
		pt, err := rc.aead.Open(dst[:0], rc.nonce[:], body, rc.ad[:])
		if err != nil {
			return 0, nil, errAuth
		}
		return hdr[0], pt, nil
	}
	return rc.openCBC(dst, hdr, body)
}

func xorSeq(n *[12]byte, seq uint64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	for i := range b {
		n[4+i] ^= b[i]
	}
}

// openCBC opens an AES-CBC record with an explicit IV (TLS 1.1+),
// MAC-then-encrypt or encrypt-then-MAC. rc.ad[:11] holds seq, type and
// version already.
func (rc *recordCipher) openCBC(dst []byte, hdr, body []byte) (byte, []byte, error) {
	ml := rc.suite.macLen
	if rc.etm {
		if len(body) < aes.BlockSize*2+ml {
			return 0, nil, errAuth
		}
		ct, tag := body[:len(body)-ml], body[len(body)-ml:]
		binary.BigEndian.PutUint16(rc.ad[11:], uint16(len(ct)))
		if !rc.checkMAC(ct, tag) {
			return 0, nil, errAuth
		}
		pt, ok := rc.decryptCBC(dst, ct)
		if !ok {
			return 0, nil, errAuth
		}
		return hdr[0], pt, nil
	}
	if len(body) < aes.BlockSize+((ml+1+aes.BlockSize-1)/aes.BlockSize)*aes.BlockSize {
		return 0, nil, errAuth
	}
	pt, ok := rc.decryptCBC(dst, body)
	if !ok || len(pt) < ml {
		return 0, nil, errAuth
	}
	content, tag := pt[:len(pt)-ml], pt[len(pt)-ml:]
	binary.BigEndian.PutUint16(rc.ad[11:], uint16(len(content)))
	if !rc.checkMAC(content, tag) {
		return 0, nil, errAuth
	}
	return hdr[0], content, nil
}

// decryptCBC decrypts IV || ciphertext and removes the padding.
func (rc *recordCipher) decryptCBC(dst, ivct []byte) ([]byte, bool) {
	if len(ivct)%aes.BlockSize != 0 || len(ivct) < 2*aes.BlockSize {
		return nil, false
	}
	iv, ct := ivct[:aes.BlockSize], ivct[aes.BlockSize:]
	if s, ok := rc.cbc.(ivSetter); ok {
		s.SetIV(iv)
	} else {
		rc.cbc = cipher.NewCBCDecrypter(rc.block, iv)
	}
	pt := dst[:len(ct)]
	rc.cbc.CryptBlocks(pt, ct)
	pad := int(pt[len(pt)-1])
	if pad+1 > len(pt) {
		return nil, false
	}
	for _, b := range pt[len(pt)-1-pad:] {
		if int(b) != pad {
			return nil, false
		}
	}
	return pt[:len(pt)-1-pad], true
}

func (rc *recordCipher) checkMAC(data, tag []byte) bool {
	rc.mac.Reset()
	rc.mac.Write(rc.ad[:])
	rc.mac.Write(data)
	return hmac.Equal(rc.mac.Sum(rc.sum[:0]), tag)
}
