package tlsdecrypt

import (
	"cmp"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kdupcap/kdupcap/capture"
)

// Options bound what a Decrypter keeps. Zero values take the defaults.
type Options struct {
	// MaxBufferPerConn bounds the encrypted bytes a connection keeps while
	// its keys are not in the KeyLog yet (default 1 MiB); beyond it the
	// connection is given up as NoKey.
	MaxBufferPerConn int
	// MaxBufferTotal bounds the same bytes over all connections (default
	// 64 MiB).
	MaxBufferTotal int64
	// MaxConns bounds the ConnStates kept for Conns (default 1000); later
	// TLS connections are counted in Stats only.
	MaxConns int
	// MaxGapRecords bounds the records presumed lost in a TCP gap: after a
	// gap the next record is tried with the next MaxGapRecords sequence
	// numbers (default 64).
	MaxGapRecords int
	// MaxKeyConns bounds the connections KeyLines remembers (default
	// 65536, oldest forgotten first).
	MaxKeyConns int
	// Ports are the broker ports: they tell client from broker in a
	// connection with no handshake captured (MidStream).
	Ports []uint16
	// KeepClosed keeps a connection that closed while waiting for its
	// keys (within the buffering bounds) until they come (Wake) or Flush,
	// instead of giving it up as NoKey at once: a live capture's key log
	// is written a little after each handshake, and a short connection
	// may end first.
	KeepClosed bool
}

func (o Options) withDefaults() Options {
	if o.MaxBufferPerConn <= 0 {
		o.MaxBufferPerConn = 1 << 20
	}
	if o.MaxBufferTotal <= 0 {
		o.MaxBufferTotal = 64 << 20
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 1000
	}
	if o.MaxGapRecords <= 0 {
		o.MaxGapRecords = 64
	}
	if o.MaxKeyConns <= 0 {
		o.MaxKeyConns = 1 << 16
	}
	return o
}

// Status is what became of a TLS connection.
type Status uint8

const (
	// Handshake: TLS, but no protected record needed a key yet.
	Handshake Status = iota
	// Decrypted: keys found; every protected record so far authenticated.
	Decrypted
	// NoKey: the KeyLog has no secret for the connection's client random
	// (or had none before the buffering bound was hit).
	NoKey
	// MidStream: the capture has no handshake of the connection; it can
	// only be decrypted from its handshake.
	MidStream
	// BadMAC: a record failed authentication (a wrong key, or damaged
	// bytes); that direction was not decoded further.
	BadMAC
	// Undecryptable: an unsupported version or cipher suite, a handshake
	// lost in a gap, or records not found again after a gap.
	Undecryptable
)

var statusNames = [...]string{"handshake", "decrypted", "no key", "started mid-stream", "bad MAC", "undecryptable"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// ConnState describes one TLS connection. It never holds secrets.
type ConnState struct {
	Client, Broker netip.AddrPort // client: the side of the ClientHello (guessed by port when MidStream)
	Start          time.Time      // time of the first bytes
	Version        uint16         // negotiated, e.g. tls.VersionTLS13; 0 if unknown
	CipherSuite    uint16         // negotiated; 0 if unknown
	SNI            string         // server name of the ClientHello, printable ASCII
	Resumed        bool           // an abbreviated (TLS 1.2) or PSK (TLS 1.3) handshake
	HelloRetry     bool           // a HelloRetryRequest was seen
	EncryptThenMAC bool           // TLS 1.2 CBC with encrypt-then-MAC (RFC 7366)
	Status         Status
	Reason         string // why Undecryptable
	BadMACs        int    // records that failed authentication (at most one per direction)
	Records        int64  // application_data records decrypted
	Bytes          int64  // application plaintext bytes handed on
	LostBytes      int64  // bytes of the connection not decrypted
	KeyUpdates     int    // TLS 1.3 KeyUpdates followed
	CloseNotify    bool   // a close_notify alert was seen
	Closed         bool   // Close was called
}

// VersionName is "TLS 1.3", "TLS 1.2", ... or "" when unknown.
func (c ConnState) VersionName() string {
	if c.Version == 0 {
		return ""
	}
	return tls.VersionName(c.Version)
}

// SuiteName is the IANA name of the cipher suite, or "" when unknown.
func (c ConnState) SuiteName() string {
	if c.CipherSuite == 0 {
		return ""
	}
	return suiteName(c.CipherSuite)
}

// Stats are the aggregate counts of a Decrypter, over all TLS
// connections (listed in Conns or not).
type Stats struct {
	Conns         int // TLS connections seen
	ByStatus      [Undecryptable + 1]int
	BadMACs       int   // records that failed authentication
	Records       int64 // application_data records decrypted
	Bytes         int64 // application plaintext bytes handed on
	LostBytes     int64 // TLS bytes not decrypted
	BufferLimits  int   // connections given up because a buffering bound was hit
	ConnsUnlisted int   // TLS connections beyond Options.MaxConns
}

// Decrypted, NoKey, MidStream, BadMAC and Undecryptable count connections
// by their current status.
func (s Stats) Decrypted() int     { return s.ByStatus[Decrypted] }
func (s Stats) NoKey() int         { return s.ByStatus[NoKey] }
func (s Stats) MidStream() int     { return s.ByStatus[MidStream] }
func (s Stats) BadMAC() int        { return s.ByStatus[BadMAC] }
func (s Stats) Undecryptable() int { return s.ByStatus[Undecryptable] }

// Decrypter finds TLS connections among the TCP connections of a capture
// and hands the application data of those it has keys for, decrypted, to
// the streams of the next stage; other connections pass through untouched.
// It is safe for concurrent use: connections of sharded Assemblers may use
// one Decrypter.
type Decrypter struct {
	keys     *KeyLog
	opts     Options
	buffered atomic.Int64

	mu       sync.Mutex
	conns    []ConnState
	stats    Stats
	sessions boundedMap // TLS 1.2 session ID -> master secret
	tickets  boundedMap // TLS 1.2 session ticket -> master secret
	keyConns map[[2]netip.AddrPort]keyRef
	keyOrder [][2]netip.AddrPort
	keyNext  int
	// waiting are the connections holding records until their keys come,
	// by the order they began to wait (Wake).
	waiting    map[*conn]uint64
	waitNext   uint64
	keptClosed int // connections kept by Options.KeepClosed
}

// keyRef names the secrets that decrypt one connection.
type keyRef struct {
	random [32]byte
	master []byte    // set when the master secret came from an earlier session
	start  time.Time // the connection's first packet
}

// New returns a Decrypter taking secrets from keys (nil: no keys; TLS
// connections are still recognised and counted).
func New(keys *KeyLog, opts Options) *Decrypter {
	opts = opts.withDefaults()
	return &Decrypter{
		keys:     keys,
		opts:     opts,
		sessions: boundedMap{max: 4096},
		tickets:  boundedMap{max: 4096},
		keyConns: make(map[[2]netip.AddrPort]keyRef),
	}
}

// Wrap returns a NewStreamFunc that creates next's stream for every
// connection (nil when next returns nil) behind a first-bytes check: a
// connection that starts with a ClientHello is decrypted, one whose first
// bytes are TLS records without a handshake is consumed as MidStream, and
// any other is handed to next's stream unchanged and uncopied.
func (d *Decrypter) Wrap(next capture.NewStreamFunc) capture.NewStreamFunc {
	return func(a, b netip.AddrPort, ts time.Time) capture.Stream {
		inner := next(a, b, ts)
		if inner == nil {
			return nil
		}
		return &conn{d: d, inner: inner, start: ts, addrA: a.Addr(), addrB: b.Addr(), portA: a.Port(), portB: b.Port()}
	}
}

// wait files c among the connections waiting for keys, or takes it out.
func (d *Decrypter) wait(c *conn, on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !on {
		delete(d.waiting, c)
		return
	}
	if d.waiting == nil {
		d.waiting = make(map[*conn]uint64)
	}
	d.waitNext++
	d.waiting[c] = d.waitNext
}

// Wake looks the keys up again for every connection waiting for them and
// hands on, decrypted, the records each held, in the order they began to
// wait: a live run calls it when its key log grew, so that a connection
// that went quiet after its handshake (a client's metadata connection) is
// decoded without waiting for a next packet that may never come. Call it
// from the goroutine that feeds the connections.
func (d *Decrypter) Wake() {
	d.mu.Lock()
	ws := make([]*conn, 0, len(d.waiting))
	for c := range d.waiting {
		ws = append(ws, c)
	}
	slices.SortFunc(ws, func(a, b *conn) int { return cmp.Compare(d.waiting[a], d.waiting[b]) })
	d.mu.Unlock()
	for _, c := range ws {
		if c.waiting && c.d.keys.Gen() != c.lastGen {
			c.retryKeys()
		}
	}
}

// maxKeptClosed bounds the connections Options.KeepClosed keeps at once;
// beyond it a connection closing while waiting is given up at once.
const maxKeptClosed = 4096

// keepClosed adds n to the connections kept closed, and reports, for
// n > 0, whether there was room.
func (d *Decrypter) keepClosed(n int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n > 0 && d.keptClosed >= maxKeptClosed {
		return false
	}
	d.keptClosed += n
	return true
}

// Flush ends every connection kept by Options.KeepClosed: those whose
// keys never came are NoKey, their inner streams closed. Call it before
// the end of the run's input is handled, from the goroutine that feeds
// the connections.
func (d *Decrypter) Flush() {
	d.mu.Lock()
	ws := make([]*conn, 0, len(d.waiting))
	for c := range d.waiting {
		if c.closing {
			ws = append(ws, c)
		}
	}
	slices.SortFunc(ws, func(a, b *conn) int { return cmp.Compare(d.waiting[a], d.waiting[b]) })
	d.mu.Unlock()
	for _, c := range ws {
		c.endClosing(true)
	}
}

// Conns returns the states of the first Options.MaxConns TLS connections,
// in the order they were recognised.
func (d *Decrypter) Conns() []ConnState {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]ConnState(nil), d.conns...)
}

// Stats returns the aggregate counts so far.
func (d *Decrypter) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// KeyLines returns the NSS key log lines that decrypt the connection
// between client and broker (either order), for an evidence file's
// Decryption Secrets Block; nil when it was not decrypted. The lines hold
// secrets: write them only where the key log itself may go.
func (d *Decrypter) KeyLines(client, broker netip.AddrPort) []string {
	ref, ok := d.keyRefOf(client, broker)
	if !ok {
		return nil
	}
	if ref.master != nil {
		return []string{"CLIENT_RANDOM " + hex.EncodeToString(ref.random[:]) + " " + hex.EncodeToString(ref.master)}
	}
	return d.keys.linesFor(ref.random)
}

// DecryptedSince reports whether the connection between client and broker
// (either order) was decrypted, and when its first packet came. A file
// that is to be decrypted again must hold every record of the connection
// from that packet on: the handshake gives the keys, and each record's
// nonce (TLS 1.3) or MAC (TLS 1.2) counts the records before it, so that
// a stretch of records left out cannot be stepped over beyond
// Options.MaxGapRecords.
func (d *Decrypter) DecryptedSince(client, broker netip.AddrPort) (time.Time, bool) {
	ref, ok := d.keyRefOf(client, broker)
	return ref.start, ok
}

// keyRefOf is what rememberKeys kept of the connection between client and
// broker (either order); false when it was not decrypted, or its keys
// proved wrong (forgetKeys).
func (d *Decrypter) keyRefOf(client, broker netip.AddrPort) (keyRef, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ref, ok := d.keyConns[[2]netip.AddrPort{client, broker}]
	if !ok {
		ref, ok = d.keyConns[[2]netip.AddrPort{broker, client}]
	}
	if !ok || ref.random == ([32]byte{}) && ref.master == nil {
		return keyRef{}, false
	}
	return ref, true
}

// register lists a new TLS connection and counts it.
func (d *Decrypter) register(c *conn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stats.Conns++
	d.stats.ByStatus[c.pub.Status]++
	if len(d.conns) < d.opts.MaxConns {
		c.listIdx = len(d.conns)
		d.conns = append(d.conns, c.pub)
	} else {
		d.stats.ConnsUnlisted++
	}
}

// update replaces a connection's published state, adjusting the counts.
func (d *Decrypter) update(c *conn, st ConnState) {
	old := c.pub
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stats.ByStatus[old.Status]--
	d.stats.ByStatus[st.Status]++
	d.stats.BadMACs += st.BadMACs - old.BadMACs
	d.stats.Records += st.Records - old.Records
	d.stats.Bytes += st.Bytes - old.Bytes
	d.stats.LostBytes += st.LostBytes - old.LostBytes
	if c.listIdx >= 0 {
		d.conns[c.listIdx] = st
	}
	c.pub = st
}

func (d *Decrypter) countBufferLimit() {
	d.mu.Lock()
	d.stats.BufferLimits++
	d.mu.Unlock()
}

// rememberKeys records the secrets of a decrypted connection for KeyLines.
func (d *Decrypter) rememberKeys(client, broker netip.AddrPort, ref keyRef) {
	k := [2]netip.AddrPort{client, broker}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.keyConns[k]; !ok {
		if len(d.keyOrder) < d.opts.MaxKeyConns {
			d.keyOrder = append(d.keyOrder, k)
		} else {
			delete(d.keyConns, d.keyOrder[d.keyNext])
			d.keyOrder[d.keyNext] = k
			d.keyNext = (d.keyNext + 1) % len(d.keyOrder)
		}
	}
	d.keyConns[k] = ref
}

// forgetKeys drops the KeyLines of a connection whose keys proved wrong.
// Its slot in keyOrder stays, emptied: deleting the entry would leave the
// slot behind, and a later entry for the same ends would be filed twice.
func (d *Decrypter) forgetKeys(client, broker netip.AddrPort) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := [2]netip.AddrPort{client, broker}
	if _, ok := d.keyConns[k]; ok {
		d.keyConns[k] = keyRef{}
	}
}

func (d *Decrypter) rememberSession(id, ticket, master []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(id) > 0 {
		d.sessions.put(string(id), master)
	}
	if len(ticket) > 0 {
		d.tickets.put(string(ticket), master)
	}
}

func (d *Decrypter) resumedMaster(id, ticket []byte) []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	if m := d.tickets.m[string(ticket)]; len(ticket) > 0 && m != nil {
		return m
	}
	if len(id) > 0 {
		return d.sessions.m[string(id)]
	}
	return nil
}

// boundedMap forgets an arbitrary entry when full: enough for caches of
// sessions that are mostly resumed soon after they are made.
type boundedMap struct {
	m   map[string][]byte
	max int
}

func (b *boundedMap) put(k string, v []byte) {
	if b.m == nil {
		b.m = make(map[string][]byte)
	}
	if _, ok := b.m[k]; !ok && len(b.m) >= b.max {
		for old := range b.m {
			delete(b.m, old)
			break
		}
	}
	b.m[k] = v
}
