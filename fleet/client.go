package fleet

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

// ClientOptions are how kdupcap's own Kafka clients connect: the
// publisher's, the consumer's, and --emit's (the CLI gives all three the
// same).
type ClientOptions struct {
	// TLS, if set, wraps every connection in TLS with this configuration
	// (its ServerName is set from the broker's host when empty).
	TLS *tls.Config
	// SASL, if set, authenticates every connection with this mechanism.
	SASL sasl.Mechanism
}

// ownConnLinger is how long a closed connection is still known as the
// client's own: its last packets (FIN, TIME_WAIT) may reach the capture
// after the close.
const ownConnLinger = 2 * time.Minute

// connSet records the TCP connections a client dials, by their two ends,
// so that a live capture leaves kdupcap's own traffic out. Bounded by the
// open connections and those closed within ownConnLinger; safe for
// concurrent use.
type connSet struct {
	dialer net.Dialer
	tls    *tls.Config

	mu    sync.Mutex
	conns map[[2]netip.AddrPort]time.Time // zero while open
}

func newConnSet(tlsCfg *tls.Config) *connSet {
	return &connSet{dialer: net.Dialer{Timeout: 10 * time.Second}, tls: tlsCfg, conns: make(map[[2]netip.AddrPort]time.Time)}
}

// kgoOpts are the options that make a kgo client of o dial through s.
func (o ClientOptions) kgoOpts(s *connSet) []kgo.Opt {
	opts := []kgo.Opt{kgo.Dialer(s.dial)}
	if o.SASL != nil {
		opts = append(opts, kgo.SASL(o.SASL))
	}
	return opts
}

// dial is a kgo.Dialer that records every connection before any byte is
// written on it, then does the TLS handshake if asked.
func (s *connSet) dial(ctx context.Context, network, host string) (net.Conn, error) {
	c, err := s.dialer.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	l, lok := c.LocalAddr().(*net.TCPAddr)
	r, rok := c.RemoteAddr().(*net.TCPAddr)
	if lok && rok {
		ends := [2]netip.AddrPort{unmap(l.AddrPort()), unmap(r.AddrPort())}
		s.mu.Lock()
		now := time.Now()
		for k, closed := range s.conns {
			if !closed.IsZero() && now.Sub(closed) > ownConnLinger {
				delete(s.conns, k)
			}
		}
		s.conns[ends] = time.Time{}
		s.mu.Unlock()
		c = &ownConn{Conn: c, set: s, ends: ends}
	}
	if s.tls == nil {
		return c, nil
	}
	cfg := s.tls.Clone()
	if cfg.ServerName == "" {
		h, _, err := net.SplitHostPort(host)
		if err != nil {
			h = host
		}
		cfg.ServerName = h
	}
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, errors.Join(errors.New("fleet: tls handshake with "+host), err)
	}
	return tc, nil
}

// has reports whether a and b are the ends, in either order, of a
// connection dialed here.
func (s *connSet) has(a, b netip.AddrPort) bool {
	a, b = unmap(a), unmap(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ab := s.conns[[2]netip.AddrPort{a, b}]
	_, ba := s.conns[[2]netip.AddrPort{b, a}]
	return ab || ba
}

type ownConn struct {
	net.Conn
	set  *connSet
	ends [2]netip.AddrPort
	once sync.Once
}

func (c *ownConn) Close() error {
	c.once.Do(func() {
		c.set.mu.Lock()
		if _, ok := c.set.conns[c.ends]; ok {
			c.set.conns[c.ends] = time.Now()
		}
		c.set.mu.Unlock()
	})
	return c.Conn.Close()
}

func unmap(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap().WithZone(""), a.Port())
}
