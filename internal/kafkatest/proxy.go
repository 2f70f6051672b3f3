package kafkatest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ProxyLeg is one client connection through the proxy (ClusterConfig.Proxy)
// and the proxy's connection to the broker that carries it.
type ProxyLeg struct {
	// Node is the broker's node ID.
	Node int32
	// Client is the real client's address as the proxy saw it.
	Client string
	// Leg is the proxy's end of its connection to the broker: the client
	// address a capture of the broker's port shows (Event.Conn and
	// Exchange.Conn name it too).
	Leg string
	// Broker is the broker's real host:port.
	Broker string
	// Opened is when the proxy accepted the client.
	Opened time.Time
	// Dropped are the correlation IDs of the answers the proxy dropped
	// (AnswerThenReset), and ClientReset when it then reset the client's
	// connection.
	Dropped     []int32
	ClientReset time.Time
}

// proxy is one broker's client-facing listener. For every client connection
// it opens a leg to the broker's real listener and copies bytes both ways,
// response frames one whole frame at a time, so that it can drop the one
// answer a broker doomed (AnswerThenReset) and reset the client instead. It
// mirrors how the broker ends a leg: a FIN from the broker becomes a FIN to
// the client, an RST an RST; likewise from the client to the broker.
type proxy struct {
	c      *Cluster
	node   int32
	broker string
	ln     net.Listener

	closeOnce sync.Once
	mu        sync.Mutex
	conns     map[*net.TCPConn]struct{}
	closed    bool
}

// dialTimeout bounds the proxy's dial of its broker.
const dialTimeout = 5 * time.Second

func newProxy(c *Cluster, node int32, broker string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("kafkatest: proxy listener: %w", err)
	}
	p := &proxy{c: c, node: node, broker: broker, ln: ln, conns: make(map[*net.TCPConn]struct{})}
	go p.serve()
	return p, nil
}

func (p *proxy) serve() {
	for {
		nc, err := p.ln.Accept()
		if err != nil {
			return
		}
		client, ok := nc.(*net.TCPConn)
		if !ok {
			nc.Close()
			continue
		}
		go p.handle(client)
	}
}

// close stops accepting and resets every connection still open.
func (p *proxy) close() {
	p.closeOnce.Do(func() {
		p.ln.Close()
		p.mu.Lock()
		p.closed = true
		conns := p.conns
		p.conns = nil
		p.mu.Unlock()
		for c := range conns {
			reset(c)
		}
	})
}

// track remembers open connections for close; false once the proxy closed.
func (p *proxy) track(cs ...*net.TCPConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *proxy) untrack(cs ...*net.TCPConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
	}
}

func (p *proxy) handle(client *net.TCPConn) {
	opened := time.Now()
	d := net.Dialer{Timeout: dialTimeout}
	nc, err := d.Dial("tcp", p.broker)
	if err != nil {
		reset(client)
		return
	}
	leg := nc.(*net.TCPConn)
	if !p.track(client, leg) {
		reset(client)
		reset(leg)
		return
	}
	defer p.untrack(client, leg)
	legAddr := leg.LocalAddr().String()
	p.c.addLeg(ProxyLeg{Node: p.node, Client: client.RemoteAddr().String(), Leg: legAddr, Broker: p.broker, Opened: opened})

	up := make(chan struct{})
	var dropping atomic.Bool
	go func() {
		defer close(up)
		pipeUp(client, leg, &dropping)
	}()
	p.down(leg, client, legAddr, &dropping)
	<-up
	client.Close()
	leg.Close()
}

// pipeUp copies the client's bytes to the broker: the client's FIN becomes
// the proxy's FIN to the broker, any other end an RST, but for the end
// down makes when it drops an answer (dropping): the broker ends that leg.
func pipeUp(client, leg *net.TCPConn, dropping *atomic.Bool) {
	_, err := io.Copy(leg, client)
	switch {
	case dropping.Load():
	case err == nil:
		_ = leg.CloseWrite()
	default:
		reset(leg)
		reset(client)
	}
}

// down copies the broker's response frames to the client, dropping a doomed
// answer (then resetting the client); bytes that are not Kafka framing (TLS)
// pass through as they come. The broker's FIN becomes a FIN to the client,
// any other end an RST.
func (p *proxy) down(leg, client *net.TCPConn, legAddr string, dropping *atomic.Bool) {
	var pend []byte
	buf := make([]byte, 32<<10)
	framed := true
	for {
		n, err := leg.Read(buf)
		if n > 0 {
			out := buf[:n]
			if framed {
				pend = append(pend, buf[:n]...)
				var drop bool
				out, drop, framed = p.frames(&pend, legAddr)
				if drop {
					if len(out) > 0 {
						_, _ = client.Write(out)
					}
					dropping.Store(true)
					reset(client)
					p.c.noteReset(legAddr, time.Now())
					// The broker resets the leg itself: wait for its RST,
					// so that the capture shows the broker's, not ours.
					_ = leg.SetReadDeadline(time.Now().Add(sentWait))
					_, _ = io.Copy(io.Discard, leg)
					reset(leg)
					return
				}
			}
			if len(out) > 0 {
				if _, werr := client.Write(out); werr != nil {
					reset(leg)
					return
				}
			}
		}
		if err != nil {
			if len(pend) > 0 { // a partial frame: pass it on as it is
				_, _ = client.Write(pend)
			}
			if errors.Is(err, io.EOF) {
				_ = client.CloseWrite()
				return
			}
			if p.c.undoom(legAddr, true) { // reset before its answer was read
				dropping.Store(true)
				p.c.noteReset(legAddr, time.Now())
			}
			reset(client)
			return
		}
	}
}

// frames takes the whole response frames off *pend and returns the bytes
// to forward; drop says a doomed answer was among them (what follows it is
// not forwarded), framed false that *pend is not Kafka framing (all of it
// is returned, to pass through from now on).
func (p *proxy) frames(pend *[]byte, legAddr string) (out []byte, drop, framed bool) {
	b := *pend
	for {
		frame, ok, err := nextFrame(b)
		if err != nil {
			out = append(out, b...)
			*pend = nil
			return out, false, false
		}
		if !ok {
			*pend = append((*pend)[:0], b...)
			return out, false, true
		}
		b = b[len(frame):]
		if len(frame) >= 8 && p.c.dropAnswer(legAddr, int32(binary.BigEndian.Uint32(frame[4:]))) {
			*pend = nil
			return out, true, true
		}
		out = append(out, frame...)
	}
}

// reset closes c with SO_LINGER 0: an RST.
func reset(c *net.TCPConn) {
	_ = c.SetLinger(0)
	_ = c.Close()
}

func (c *Cluster) addLeg(l ProxyLeg) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.legIdx[l.Leg] = len(c.legs)
	c.legs = append(c.legs, l)
}

// doom tells the proxy to drop the answer corr on leg.
func (c *Cluster) doom(leg string, corr int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.doomed[leg] = corr
}

// undoom forgets leg's doomed answer and says whether there was one; lost
// records it as dropped (the answer never reached the client).
func (c *Cluster) undoom(leg string, lost bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	corr, ok := c.doomed[leg]
	delete(c.doomed, leg)
	if i, known := c.legIdx[leg]; ok && lost && known {
		c.legs[i].Dropped = append(c.legs[i].Dropped, corr)
	}
	return ok
}

// dropAnswer says whether the answer corr on leg is doomed, and records
// the drop.
func (c *Cluster) dropAnswer(leg string, corr int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.doomed[leg]; !ok || d != corr {
		return false
	}
	delete(c.doomed, leg)
	if i, ok := c.legIdx[leg]; ok {
		c.legs[i].Dropped = append(c.legs[i].Dropped, corr)
	}
	return true
}

func (c *Cluster) noteReset(leg string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i, ok := c.legIdx[leg]; ok {
		c.legs[i].ClientReset = at
	}
}
