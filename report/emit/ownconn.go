package emit

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"
)

// ownConnLinger is how long a closed connection of the emitter is still
// known as its own: its last packets (FIN, retransmissions, TIME_WAIT) may
// reach the capture after the close. Linux holds TIME_WAIT for 60s.
const ownConnLinger = 2 * time.Minute

// connSet records the TCP connections a kgo client dials, by their two
// ends, so that a capture can leave them out. It is safe for concurrent
// use. Its size is bounded by the open connections and those closed within
// ownConnLinger.
type connSet struct {
	dialer net.Dialer
	now    func() time.Time
	// tls, if set, wraps every connection in TLS (NewKafkaTLS).
	tls *tls.Config

	mu    sync.Mutex
	conns map[connEnds]time.Time // zero while open, else when it was closed
}

// connEnds are a connection's local and remote ends.
type connEnds struct{ local, remote netip.AddrPort }

func newConnSet() *connSet {
	return &connSet{
		dialer: net.Dialer{Timeout: 10 * time.Second},
		now:    time.Now,
		conns:  make(map[connEnds]time.Time),
	}
}

// dial is a kgo.Dialer that records every connection it opens before it
// hands it to the client, so before any byte is written on it.
func (s *connSet) dial(ctx context.Context, network, host string) (net.Conn, error) {
	c, err := s.dialer.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	ends, ok := endsOf(c)
	if !ok {
		return c, nil
	}
	s.mu.Lock()
	now := s.now()
	for k, closed := range s.conns {
		if !closed.IsZero() && now.Sub(closed) > ownConnLinger {
			delete(s.conns, k)
		}
	}
	s.conns[ends] = time.Time{}
	s.mu.Unlock()
	own := &ownConn{Conn: c, set: s, ends: ends}
	if s.tls == nil {
		return own, nil
	}
	cfg := s.tls.Clone()
	if cfg.ServerName == "" {
		if h, _, err := net.SplitHostPort(host); err == nil {
			cfg.ServerName = h
		}
	}
	tc := tls.Client(own, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		own.Close()
		return nil, fmt.Errorf("report: kafka: tls handshake with %s: %w", host, err)
	}
	return tc, nil
}

// has reports whether a and b are the two ends, in either order, of a
// connection dialed here.
func (s *connSet) has(a, b netip.AddrPort) bool {
	a, b = unmap(a), unmap(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ab := s.conns[connEnds{a, b}]
	_, ba := s.conns[connEnds{b, a}]
	return ab || ba
}

func (s *connSet) closed(ends connEnds) {
	s.mu.Lock()
	if _, ok := s.conns[ends]; ok {
		s.conns[ends] = s.now()
	}
	s.mu.Unlock()
}

// ownConn marks its ends closed when the client closes it.
type ownConn struct {
	net.Conn
	set  *connSet
	ends connEnds
	once sync.Once
}

func (c *ownConn) Close() error {
	c.once.Do(func() { c.set.closed(c.ends) })
	return c.Conn.Close()
}

func endsOf(c net.Conn) (connEnds, bool) {
	l, lok := c.LocalAddr().(*net.TCPAddr)
	r, rok := c.RemoteAddr().(*net.TCPAddr)
	if !lok || !rok {
		return connEnds{}, false
	}
	return connEnds{unmap(l.AddrPort()), unmap(r.AddrPort())}, true
}

// unmap turns an IPv4-mapped IPv6 address into IPv4 and drops the zone,
// as a capture shows addresses.
func unmap(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap().WithZone(""), a.Port())
}
