package tlsdecrypt

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// maxMalformed caps the messages Malformed keeps; the count goes on.
const maxMalformed = 20

// maxKeyLogLine bounds one key log line; longer lines are malformed.
const maxKeyLogLine = 4096

// secretKind is the label of a key log line this package uses.
type secretKind int

const (
	kindMaster    secretKind = iota // CLIENT_RANDOM: TLS 1.2 master secret
	kindClientHS                    // CLIENT_HANDSHAKE_TRAFFIC_SECRET
	kindServerHS                    // SERVER_HANDSHAKE_TRAFFIC_SECRET
	kindClientApp                   // CLIENT_TRAFFIC_SECRET_0
	kindServerApp                   // SERVER_TRAFFIC_SECRET_0
	numKinds
)

var kindLabels = [numKinds]string{
	"CLIENT_RANDOM",
	"CLIENT_HANDSHAKE_TRAFFIC_SECRET",
	"SERVER_HANDSHAKE_TRAFFIC_SECRET",
	"CLIENT_TRAFFIC_SECRET_0",
	"SERVER_TRAFFIC_SECRET_0",
}

// ignoredLabels are valid NSS key log labels this package does not need.
var ignoredLabels = map[string]bool{
	"EXPORTER_SECRET":             true,
	"EARLY_EXPORTER_SECRET":       true,
	"CLIENT_EARLY_TRAFFIC_SECRET": true,
	"RSA":                         true, // encrypted pre-master secret
}

// secrets are the key log secrets of one client random; nil when absent.
type secrets [numKinds][]byte

// KeyLog is a store of TLS secrets in NSS key log format (SSLKEYLOGFILE),
// keyed by the ClientHello random. It is safe for concurrent use: a live
// capture may add lines while connections look keys up.
//
// Secret bytes never appear in an error, a Malformed message or a String;
// only [Decrypter.KeyLines] hands them out, for evidence files.
type KeyLog struct {
	gen atomic.Uint64

	mu        sync.RWMutex
	m         map[[32]byte]*secrets
	lines     int
	ignored   int
	malformed int
	msgs      []string
}

// KeyLogStats counts the lines a KeyLog has read.
type KeyLogStats struct {
	Lines     int // non-blank, non-comment lines read
	Randoms   int // client randoms with at least one secret
	Ignored   int // valid lines of labels not used (EXPORTER_SECRET, ...)
	Malformed int // lines that did not parse; see Malformed
}

// NewKeyLog returns an empty KeyLog.
func NewKeyLog() *KeyLog {
	return &KeyLog{m: make(map[[32]byte]*secrets)}
}

// Gen returns a counter that changes whenever a secret is added; a
// connection waiting for its keys looks again only when it has changed.
func (k *KeyLog) Gen() uint64 {
	if k == nil {
		return 0
	}
	return k.gen.Load()
}

// Load reads key log lines from r until EOF; name prefixes the position of
// malformed lines ("name:LINE: reason"). Malformed lines are counted and
// skipped, never fatal. It returns the number of secrets added and only an
// I/O error of r.
func (k *KeyLog) Load(r io.Reader, name string) (int, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	added, lineNo := 0, 0
	for {
		line, err := readLine(br)
		if len(line) > 0 || err == nil {
			lineNo++
			if k.addLine(line, name, lineNo) {
				added++
			}
		}
		if err == io.EOF {
			return added, nil
		}
		if err != nil {
			return added, fmt.Errorf("tlsdecrypt: key log %s line %d: %w", name, lineNo, err)
		}
	}
}

// readLine reads one line without its end; a line longer than
// maxKeyLogLine is returned cut (and so malformed).
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) <= maxKeyLogLine+1 {
			line = append(line, frag...)
		} else if len(line) <= maxKeyLogLine {
			line = append(line, frag[:maxKeyLogLine+1-len(line)]...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), err
	}
}

// Add parses a block of key log text, as carried by a pcapng Decryption
// Secrets Block; name prefixes the position of malformed lines. It returns
// the number of secrets added.
func (k *KeyLog) Add(text []byte, name string) int {
	added, lineNo := 0, 0
	for len(text) > 0 {
		line := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = nil
		}
		lineNo++
		if k.addLine(line, name, lineNo) {
			added++
		}
	}
	return added
}

// AddLine parses one key log line. It returns an error saying why a line
// is malformed (never its secret); blank lines, comments and ignored labels
// are no error. Lines added this way are not counted in Malformed.
func (k *KeyLog) AddLine(line string) error {
	kind, random, secret, reason := parseLine([]byte(line))
	if reason != "" {
		return errors.New("tlsdecrypt: key log line: " + reason)
	}
	if kind >= 0 {
		k.put(kind, random, secret)
	}
	return nil
}

// addLine parses and stores one line, counting it; it reports whether a
// secret was added.
func (k *KeyLog) addLine(line []byte, name string, lineNo int) bool {
	kind, random, secret, reason := parseLine(line)
	k.mu.Lock()
	defer k.mu.Unlock()
	if reason == "" && kind == kindBlank {
		return false
	}
	k.lines++
	switch {
	case reason != "":
		k.malformed++
		if len(k.msgs) < maxMalformed {
			k.msgs = append(k.msgs, fmt.Sprintf("%s:%d: %s", name, lineNo, reason))
		}
		return false
	case kind == kindIgnored:
		k.ignored++
		return false
	}
	k.putLocked(kind, random, secret)
	return true
}

const (
	kindBlank   secretKind = -1
	kindIgnored secretKind = -2
)

// parseLine parses one line: a kind (or kindBlank, kindIgnored), or a
// reason it is malformed that never holds secret bytes.
func parseLine(line []byte) (kind secretKind, random [32]byte, secret []byte, reason string) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] == '#' {
		return kindBlank, random, nil, ""
	}
	if len(line) > maxKeyLogLine {
		return 0, random, nil, "line too long"
	}
	f := bytes.Fields(line)
	label := string(f[0])
	kind = -3
	for i, l := range kindLabels {
		if l == label {
			kind = secretKind(i)
		}
	}
	if kind < 0 {
		if ignoredLabels[label] || laterGeneration(label) {
			return kindIgnored, random, nil, ""
		}
		return 0, random, nil, "unknown label " + safeLabel(label)
	}
	if len(f) != 3 {
		return 0, random, nil, fmt.Sprintf("%s: %d fields, want 3", label, len(f))
	}
	if len(f[1]) != 64 {
		return 0, random, nil, fmt.Sprintf("%s: client random of %d hex digits, want 64", label, len(f[1]))
	}
	if _, err := hex.Decode(random[:], f[1]); err != nil {
		return 0, random, nil, label + ": client random is not hex"
	}
	secret = make([]byte, len(f[2])/2)
	if len(f[2])%2 != 0 {
		return 0, random, nil, label + ": secret of an odd number of hex digits"
	}
	if _, err := hex.Decode(secret, f[2]); err != nil {
		return 0, random, nil, label + ": secret is not hex"
	}
	switch {
	case kind == kindMaster && len(secret) != 48:
		return 0, random, nil, fmt.Sprintf("%s: master secret of %d bytes, want 48", label, len(secret))
	case kind != kindMaster && len(secret) != 32 && len(secret) != 48:
		return 0, random, nil, fmt.Sprintf("%s: secret of %d bytes, want 32 or 48", label, len(secret))
	}
	return kind, random, secret, ""
}

// laterGeneration reports a label of a traffic secret after KeyUpdates
// (OpenSSL writes CLIENT_TRAFFIC_SECRET_N): derived here from _0.
func laterGeneration(label string) bool {
	for _, p := range []string{"CLIENT_TRAFFIC_SECRET_", "SERVER_TRAFFIC_SECRET_"} {
		if g, ok := strings.CutPrefix(label, p); ok && g != "0" && g != "" {
			return true
		}
	}
	return false
}

// safeLabel quotes an unknown label only when it cannot be a secret:
// upper case letters, digits and '_', starting with a letter, short, and
// with no run of more than 6 hex digits.
func safeLabel(s string) string {
	if len(s) > 40 {
		return "(long)"
	}
	run := 0
	for i, c := range s {
		hexDigit := c >= '0' && c <= '9' || c >= 'A' && c <= 'F'
		switch {
		case i == 0 && (c < 'A' || c > 'Z'):
			return "(not a label)"
		case hexDigit:
			if run++; run > 6 {
				return "(not a label)"
			}
		case c >= 'G' && c <= 'Z', c == '_':
			run = 0
		default:
			return "(not a label)"
		}
	}
	return fmt.Sprintf("%q", s)
}

func (k *KeyLog) put(kind secretKind, random [32]byte, secret []byte) {
	k.mu.Lock()
	k.putLocked(kind, random, secret)
	k.mu.Unlock()
}

func (k *KeyLog) putLocked(kind secretKind, random [32]byte, secret []byte) {
	if k.m == nil {
		k.m = make(map[[32]byte]*secrets)
	}
	s := k.m[random]
	if s == nil {
		s = new(secrets)
		k.m[random] = s
	}
	if !bytes.Equal(s[kind], secret) {
		s[kind] = secret
		k.gen.Add(1)
	}
}

// lookup returns a copy of the secrets of a client random.
func (k *KeyLog) lookup(random [32]byte) (secrets, bool) {
	if k == nil {
		return secrets{}, false
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	s := k.m[random]
	if s == nil {
		return secrets{}, false
	}
	return *s, true
}

// Stats returns the counts of lines read so far.
func (k *KeyLog) Stats() KeyLogStats {
	if k == nil {
		return KeyLogStats{}
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	return KeyLogStats{Lines: k.lines, Randoms: len(k.m), Ignored: k.ignored, Malformed: k.malformed}
}

// Malformed returns messages "NAME:LINE: reason" for the first malformed
// lines (at most 20; Stats().Malformed has the count). They never hold
// secret bytes.
func (k *KeyLog) Malformed() []string {
	if k == nil {
		return nil
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	return append([]string(nil), k.msgs...)
}

// String describes the key log by counts only, never by its secrets.
func (k *KeyLog) String() string {
	s := k.Stats()
	return fmt.Sprintf("tlsdecrypt: key log of %d client randoms (%d lines, %d malformed)", s.Randoms, s.Lines, s.Malformed)
}

// linesFor returns the key log lines of a client random, in the order of
// kindLabels. They hold secrets: for evidence files only.
func (k *KeyLog) linesFor(random [32]byte) []string {
	s, ok := k.lookup(random)
	if !ok {
		return nil
	}
	return formatLines(random, s)
}

func formatLines(random [32]byte, s secrets) []string {
	var out []string
	r := hex.EncodeToString(random[:])
	for kind, v := range s {
		if v != nil {
			out = append(out, kindLabels[kind]+" "+r+" "+hex.EncodeToString(v))
		}
	}
	return out
}

// allLines returns every line of the key log, sorted; for tests.
func (k *KeyLog) allLines() []string {
	k.mu.RLock()
	var out []string
	for r, s := range k.m {
		out = append(out, formatLines(r, *s)...)
	}
	k.mu.RUnlock()
	sort.Strings(out)
	return out
}
