package live

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/kdupcap/kdupcap/capture"
)

// Defaults and limits of Options.
const (
	DefaultSnapLen      = 262144
	MaxSnapLen          = 262144
	DefaultRingBytes    = 64 << 20
	DefaultBlockTimeout = 100 * time.Millisecond
	DefaultPollTimeout  = 100 * time.Millisecond

	// blockBytes is the size of one block of the TPACKET_V3 ring: a power
	// of two that holds a packet of MaxSnapLen bytes and its headers.
	blockBytes = 1 << 20
	// minBlocks: the kernel fills one block while the reader holds another.
	minBlocks = 2
	// statsEvery is how many packets Next returns between two readings of
	// the kernel's counters, which are 32 bits wide.
	statsEvery = 1 << 12
)

// Options says what to capture and how. Zero fields take the defaults.
type Options struct {
	// Interface is the name of the interface to capture on, or "any" for
	// all of them.
	Interface string
	// Ports are the Kafka ports the kernel filter keeps, as source or
	// destination port; empty keeps all TCP. At most MaxPorts.
	Ports []uint16
	// SnapLen is the most bytes kept of each frame, link-layer header
	// included (default and maximum 262144).
	SnapLen int
	// RingBytes is the size of the ring shared with the kernel, rounded up
	// to whole blocks of 1 MiB, at least two (default 64 MiB). When it is
	// full the kernel drops packets and counts them in Stats.Drops. The
	// kernel hands a block over when it is full or BlockTimeout after its
	// first packet: with light traffic a block holds few packets, so a
	// reader that stalls longer than blocks × BlockTimeout (6.4s by
	// default) loses packets though the ring's bytes are mostly unused.
	RingBytes int
	// BlockTimeout is how long the kernel fills a block before handing it
	// over though not full: the most a packet waits in the ring when
	// traffic is light (default 100ms, at least 1ms).
	BlockTimeout time.Duration
	// PollTimeout is how long Next waits for a packet before returning
	// ErrTimeout, so that the caller can do periodic work and see that it
	// must stop (default 100ms, at least 1ms).
	PollTimeout time.Duration
	// Promiscuous puts the interface in promiscuous mode while the Source
	// is open. Not possible on "any".
	Promiscuous bool

	// openRing replaces the opening of the socket, for tests; nil opens an
	// AF_PACKET socket.
	//lint:ignore U1000 only the Linux opener has a socket to replace
	openRing func(ringConfig) (ring, error)
}

// Stats counts what the kernel and the Source did with the packets. Every
// counter is cumulative since Open. Packets - Drops - Received - Discarded
// is what waits in the ring.
type Stats struct {
	// Packets passed the kernel filter, Drops included (tp_packets).
	Packets uint64
	// Drops were dropped by the kernel because the ring was full
	// (tp_drops). A drop is never silent: it is a hole in what follows.
	Drops uint64
	// QueueFreezes counts the times the ring was full and the kernel
	// stopped filling it until a block was handed back (tp_freeze_q_cnt).
	QueueFreezes uint64
	// Received is how many packets Next returned.
	Received uint64
	// Discarded counts the packets that reached the ring before the kernel
	// filter was attached: Next drops them, since they were not filtered.
	Discarded uint64
}

// ErrTimeout is returned by Next when no packet came within
// Options.PollTimeout. It is not a failure: call Next again.
var ErrTimeout = errors.New("live: no packet before the poll timeout")

// ErrClosed is returned by Next after Close.
var ErrClosed = errors.New("live: source closed")

// ErrUnsupported is wrapped by the errors of Open and DropPrivileges on
// systems other than Linux.
var ErrUnsupported = errors.New("live capture is only supported on Linux")

// PermissionError is the error of Open when the process may not open a
// packet socket. Its message is one line that says what is needed.
type PermissionError struct {
	Interface  string // as given in Options
	Executable string // the path to give setcap
	Err        error  // the system's error, EPERM or EACCES
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("live: opening %s needs root or CAP_NET_RAW (setcap cap_net_raw,cap_net_admin+ep %s): %v",
		e.Interface, e.Executable, e.Err)
}

// Unwrap returns the system's error, so errors.Is(err, os.ErrPermission)
// holds.
func (e *PermissionError) Unwrap() error { return e.Err }

// ring is the packet socket and its ring as Source uses them.
type ring interface {
	// ZeroCopyReadPacketData returns the next packet, whose data is valid
	// until the next call, or ErrTimeout.
	ZeroCopyReadPacketData() ([]byte, gopacket.CaptureInfo, error)
	// socketStats returns the kernel's counters, cumulative, as 32-bit
	// numbers that wrap.
	socketStats() (packets, drops, freezes uint32, err error)
	Close()
}

// ringConfig is how to open a ring.
//
//lint:ignore U1000 only the Linux opener has a socket to replace
type ringConfig struct {
	iface        string // "" binds to all interfaces
	cooked       bool   // SOCK_DGRAM: packets from the IP header on
	blockBytes   int
	blocks       int
	blockTimeout time.Duration
	pollTimeout  time.Duration
	filter       filterSpec
	promiscuous  bool
}

// Source reads packets from a live interface, through a kernel filter and
// a TPACKET_V3 ring. Next and Close are for one goroutine at a time; Stats
// may be called from any goroutine at any time.
type Source struct {
	iface string
	link  layers.LinkType

	mu        sync.Mutex // held by Next and Close
	ring      ring       // nil once closed; written under mu and statsMu
	notBefore time.Time  // packets stamped before it were not filtered; zero once past

	received  atomic.Uint64
	discarded atomic.Uint64

	statsMu sync.Mutex
	kernel  Stats // Packets, Drops, QueueFreezes
	last    [3]uint32
}

// Open opens a packet socket on opts.Interface with its kernel filter and
// ring. Without the privilege it returns a *PermissionError.
func Open(opts Options) (*Source, error) {
	if opts.Interface == "" {
		return nil, errors.New("live: no interface given (a name, or \"any\")")
	}
	switch {
	case opts.SnapLen == 0:
		opts.SnapLen = DefaultSnapLen
	case opts.SnapLen < 0 || opts.SnapLen > MaxSnapLen:
		return nil, fmt.Errorf("live: snap length %d out of range 1..%d", opts.SnapLen, MaxSnapLen)
	}
	switch {
	case opts.RingBytes == 0:
		opts.RingBytes = DefaultRingBytes
	case opts.RingBytes < 0:
		return nil, fmt.Errorf("live: ring size %d is negative", opts.RingBytes)
	}
	var err error
	if opts.BlockTimeout, err = timeout("block", opts.BlockTimeout, DefaultBlockTimeout); err != nil {
		return nil, err
	}
	if opts.PollTimeout, err = timeout("poll", opts.PollTimeout, DefaultPollTimeout); err != nil {
		return nil, err
	}
	if len(opts.Ports) > MaxPorts {
		return nil, fmt.Errorf("live: %d ports for the kernel filter, at most %d", len(opts.Ports), MaxPorts)
	}
	if opts.Promiscuous && opts.Interface == "any" {
		return nil, errors.New("live: promiscuous mode is not possible on \"any\"")
	}
	return open(opts)
}

func timeout(what string, d, def time.Duration) (time.Duration, error) {
	switch {
	case d == 0:
		return def, nil
	case d < time.Millisecond:
		return 0, fmt.Errorf("live: %s timeout %v below 1ms", what, d)
	}
	return d, nil
}

// ringBlocks is how many blocks make a ring of about n bytes.
func ringBlocks(n int) int {
	return max(minBlocks, (n+blockBytes-1)/blockBytes)
}

// newSource wraps an open ring whose filter was attached just before
// filtered.
func newSource(r ring, iface string, link layers.LinkType, filtered time.Time) *Source {
	return &Source{ring: r, iface: iface, link: link, notBefore: filtered}
}

// LinkType is the link type of every packet Next returns: Ethernet on an
// Ethernet or loopback interface, Raw (IPv4 or IPv6 from its header on)
// on "any" and on interfaces without an Ethernet header (tunnels).
func (s *Source) LinkType() layers.LinkType { return s.link }

// Next returns the next packet that passed the kernel filter. Its Data is
// in the ring shared with the kernel: it is valid only until the next call
// to Next or Close, and Next hands its block back to the kernel once all
// its packets were read. CI.Timestamp is the kernel's receive time;
// CI.InterfaceIndex is the interface's index; CI.AncillaryData is nil (a
// VLAN tag the kernel stripped is not put back).
//
// When no packet comes within Options.PollTimeout, Next returns ErrTimeout:
// the caller does its periodic work, checks whether it must stop, and
// calls Next again. After Close, Next returns ErrClosed. Other errors (the
// interface went down) are wrapped and name the interface.
func (s *Source) Next() (capture.Packet, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ring == nil {
		return capture.Packet{}, ErrClosed
	}
	for {
		data, ci, err := s.ring.ZeroCopyReadPacketData()
		if err != nil {
			if errors.Is(err, ErrTimeout) {
				s.refresh()
				return capture.Packet{}, ErrTimeout
			}
			return capture.Packet{}, fmt.Errorf("live: reading %s: %w", s.iface, err)
		}
		if !s.notBefore.IsZero() {
			// The ring is filled in order: once a packet came after the
			// filter was attached, all the following ones did too.
			if ci.Timestamp.Before(s.notBefore) {
				s.discarded.Add(1)
				continue
			}
			s.notBefore = time.Time{}
		}
		if s.received.Add(1)%statsEvery == 0 {
			s.refresh()
		}
		ci.AncillaryData = nil
		return capture.Packet{Data: data, CI: ci, LinkType: s.link}, nil
	}
}

// Stats returns the counters so far, reading the kernel's.
func (s *Source) Stats() Stats {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	s.refreshLocked()
	st := s.kernel
	st.Received = s.received.Load()
	st.Discarded = s.discarded.Load()
	return st
}

func (s *Source) refresh() {
	s.statsMu.Lock()
	s.refreshLocked()
	s.statsMu.Unlock()
}

// refreshLocked adds what the kernel counted since the last reading. The
// counters are 32 bits wide and wrap: the difference is taken modulo 2^32,
// which is right as long as fewer than 2^32 packets pass between two
// readings (Next reads them every statsEvery packets and on every timeout).
func (s *Source) refreshLocked() {
	if s.ring == nil {
		return
	}
	p, d, f, err := s.ring.socketStats()
	if err != nil {
		return // keep the last reading; the socket is going away
	}
	s.kernel.Packets += uint64(p - s.last[0])
	s.kernel.Drops += uint64(d - s.last[1])
	s.kernel.QueueFreezes += uint64(f - s.last[2])
	s.last = [3]uint32{p, d, f}
}

// Close releases the socket and its ring. If Next is running on another
// goroutine, Close waits for it to return (at most Options.PollTimeout).
// The Data of the last packet is invalid after Close. Stats stays
// readable. Calling Close again does nothing.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	if s.ring == nil {
		return nil
	}
	s.refreshLocked()
	s.ring.Close()
	s.ring = nil
	return nil
}

// DropPrivileges makes the process run as the named user (a name, or a
// numeric user ID), with that user's group and supplementary groups, for
// good: call it after Open, as tcpdump -Z does; the open socket keeps
// working. It fails if the process cannot change its IDs, or could get
// root back afterwards.
func DropPrivileges(user string) error {
	if err := dropPrivileges(user); err != nil {
		return fmt.Errorf("live: dropping privileges to %q: %w", user, err)
	}
	return nil
}
