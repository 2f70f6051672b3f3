package kafkatest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kdupcap/kdupcap/internal/kwire"
)

// conn wraps one broker-side connection. Read parses the client's request
// frames as kfake reads them and remembers each by correlation ID; Write
// parses the broker's response frames and applies the fault chosen for the
// request, if any. kfake answers one request at a time per connection and
// writes each response frame whole, so a held Write holds the connection, as a
// real broker's muted channel does. A fault that ends the connection (end)
// takes it from kfake: kfake's reads and writes fail from then on and its
// Close does nothing, the wrapper closes the TCP connection itself.
type conn struct {
	net.Conn              // what kfake reads and writes: raw, or TLS over it
	raw      *net.TCPConn // the TCP connection itself
	c        *Cluster
	node     int32
	remote   string

	closeOnce sync.Once
	closed    chan struct{}
	ending    atomic.Bool // the wrapper ends the connection itself

	rmu    sync.Mutex // guards in, broken (the read side)
	in     []byte
	broken bool
	faults faultCounts

	pmu     sync.Mutex // guards pending
	pending map[int32]pending

	wmu sync.Mutex // guards out (the write side)
	out []byte
}

// closeDrain bounds how long CloseAfterAppend reads what the client still
// sends after the broker's FIN before it closes the connection.
const closeDrain = time.Second

// sentWait bounds how long AnswerThenReset waits for the answer to leave
// the socket before it resets the connection.
const sentWait = time.Second

// errEnded is what kfake's reads and writes get once the wrapper has ended
// the connection.
var errEnded = errors.New("kafkatest: connection ended by a fault")

// pending is a request awaiting its response.
type pending struct {
	req      kmsg.Request
	received time.Time
	fault    Fault
	faulted  bool
}

func newConn(raw *net.TCPConn, nc net.Conn, c *Cluster, node int32) *conn {
	return &conn{
		Conn:    nc,
		raw:     raw,
		c:       c,
		node:    node,
		remote:  raw.RemoteAddr().String(),
		closed:  make(chan struct{}),
		pending: make(map[int32]pending),
	}
}

func (w *conn) signalClosed() { w.closeOnce.Do(func() { close(w.closed) }) }

func (w *conn) Close() error {
	w.signalClosed()
	if w.ending.Load() {
		return nil // end closes it
	}
	return w.Conn.Close()
}

func (w *conn) Read(p []byte) (int, error) {
	if w.ending.Load() {
		return 0, errEnded
	}
	n, err := w.Conn.Read(p)
	if w.ending.Load() {
		return 0, errEnded // read after the fault: never handed to kfake
	}
	if n > 0 {
		w.observeRequests(p[:n], time.Now())
	}
	return n, err
}

// end ends the connection for a fault and takes it from kfake. reset sends
// RST (SO_LINGER 0, close); otherwise the broker sends FIN (shutdown
// SHUT_WR on the TCP connection, no TLS close_notify: a FIN whatever sits
// unread in the receive buffer), then reads and discards until the client
// closes its side or closeDrain passes, then closes: with nothing left
// unread, that close sends no RST.
func (w *conn) end(reset bool) {
	w.ending.Store(true)
	w.signalClosed()
	if reset {
		_ = w.raw.SetLinger(0)
		_ = w.raw.Close()
		return
	}
	_ = w.raw.CloseWrite()
	go func() {
		_ = w.raw.SetReadDeadline(time.Now().Add(closeDrain))
		_, _ = io.Copy(io.Discard, w.raw)
		_ = w.raw.Close()
	}()
}

// observeRequests buffers request bytes and records every complete frame.
func (w *conn) observeRequests(p []byte, now time.Time) {
	w.rmu.Lock()
	defer w.rmu.Unlock()
	if w.broken {
		return
	}
	w.in = append(w.in, p...)
	for {
		frame, ok, err := nextFrame(w.in)
		if err != nil {
			w.broken, w.in = true, nil
			return
		}
		if !ok {
			return
		}
		w.in = w.in[len(frame):]
		h, req, err := parseRequest(frame)
		if err != nil || req == nil {
			continue // not ours to judge: passed through, never faulted
		}
		pd := pending{req: req, received: now}
		if pr, ok := req.(*kmsg.ProduceRequest); ok && pr.Acks != 0 {
			pd.fault, pd.faulted = w.c.decide(pr, &w.faults)
		}
		w.pmu.Lock()
		w.pending[h.correlationID] = pd
		w.pmu.Unlock()
	}
}

func (w *conn) Write(p []byte) (int, error) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.ending.Load() {
		return 0, errEnded
	}
	w.out = append(w.out, p...)
	for {
		frame, ok, err := nextFrame(w.out)
		if err != nil { // not Kafka framing: pass everything through
			out := w.out
			w.out = nil
			if _, err := w.Conn.Write(out); err != nil {
				return 0, err
			}
			return len(p), nil
		}
		if !ok {
			return len(p), nil
		}
		w.out = w.out[len(frame):]
		if err := w.respond(frame); err != nil {
			return 0, err
		}
	}
}

// respond writes one response frame, applying the request's fault.
func (w *conn) respond(frame []byte) error {
	if len(frame) < 8 { // no correlation ID: nothing to match, pass it on
		_, err := w.Conn.Write(frame)
		return err
	}
	corr := int32(binary.BigEndian.Uint32(frame[4:]))
	w.pmu.Lock()
	pd, ok := w.pending[corr]
	delete(w.pending, corr)
	w.pmu.Unlock()
	if !ok {
		_, err := w.Conn.Write(frame)
		return err
	}
	if mreq, isMeta := pd.req.(*kmsg.MetadataRequest); isMeta {
		w.learn(frame, mreq)
	}
	if areq, isAV := pd.req.(*kmsg.ApiVersionsRequest); isAV && w.c.legacyVersions() {
		if out, err := legacyVersions(frame, areq, corr); err == nil {
			frame = out
		}
	}
	preq, isProduce := pd.req.(*kmsg.ProduceRequest)
	if !isProduce {
		_, err := w.Conn.Write(frame)
		return err
	}
	x := w.exchange(frame, preq, corr, pd.received)
	if !pd.faulted {
		_, err := w.Conn.Write(frame)
		if err == nil {
			x.Answered = time.Now()
		}
		w.c.recordExchange(x)
		return err
	}
	x.Fault = pd.fault.Action
	ev := Event{
		Action:        pd.fault.Action,
		Node:          w.node,
		Conn:          w.remote,
		CorrelationID: corr,
		Version:       preq.Version,
		TimeoutMillis: preq.TimeoutMillis,
		Partitions:    x.Partitions,
		BaseOffsets:   x.BaseOffsets,
		Received:      pd.received,
	}
	done := func(err error) error {
		x.Answered = ev.Answered
		w.c.recordExchange(x)
		w.c.record(ev)
		return err
	}
	switch pd.fault.Action {
	case TimedOutAfterAppend:
		out, err := timedOut(frame, preq, corr)
		if err != nil {
			_, werr := w.Conn.Write(frame) // cannot rewrite: answer as is, unfaulted
			x.Fault = 0
			if werr == nil {
				x.Answered = time.Now()
			}
			w.c.recordExchange(x)
			return werr
		}
		deadline := pd.received.Add(time.Duration(preq.TimeoutMillis) * time.Millisecond)
		if err := w.hold(time.Until(deadline)); err != nil {
			ev.Ended = time.Now()
			return done(err) // closed while held: never answered
		}
		frame = out
	case Delay:
		if err := w.hold(pd.fault.Delay); err != nil {
			ev.Ended = time.Now()
			return done(err)
		}
	case CloseAfterAppend, ResetAfterAppend:
		// Recorded first, so that whoever sees the connection end sees
		// the event too.
		ev.Ended = time.Now()
		ev.Answered = ev.Ended
		w.c.recordExchange(x)
		w.c.record(ev)
		w.end(pd.fault.Action == ResetAfterAppend)
		return fmt.Errorf("kafkatest: connection %s ended (%s) after the append of correlation ID %d", w.remote, pd.fault.Action, corr)
	case AnswerThenReset:
		w.c.doom(w.remote, corr) // before the write: the proxy must drop this frame
		if _, err := w.Conn.Write(frame); err != nil {
			w.c.undoom(w.remote, false)
			return done(err)
		}
		ev.Answered = time.Now()
		waitSent(w.raw, sentWait) // the answer on the wire before the RST
		ev.Ended = time.Now()
		done(nil)
		w.end(true)
		return fmt.Errorf("kafkatest: connection %s reset after answering correlation ID %d", w.remote, corr)
	}
	_, err := w.Conn.Write(frame)
	ev.Answered = time.Now()
	return done(err)
}

// exchange describes a produce request and kfake's answer to it.
func (w *conn) exchange(frame []byte, req *kmsg.ProduceRequest, corr int32, received time.Time) Exchange {
	x := Exchange{
		Node:          w.node,
		Conn:          w.remote,
		CorrelationID: corr,
		Version:       req.Version,
		Partitions:    w.c.partitions(req),
		Received:      received,
	}
	body, err := responseBody(frame, req)
	if err != nil {
		return x
	}
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	if err := resp.ReadFrom(body); err != nil {
		return x
	}
	type answer struct {
		code int16
		base int64
	}
	got := make(map[string]answer)
	for _, t := range resp.Topics {
		name := w.c.topicName(t.Topic, t.TopicID)
		for _, p := range t.Partitions {
			a := answer{code: p.ErrorCode, base: p.BaseOffset}
			if a.code != 0 {
				a.base = -1
			}
			got[name+"/"+strconv.Itoa(int(p.Partition))] = a
		}
	}
	x.Codes = make([]int16, len(x.Partitions))
	x.BaseOffsets = make([]int64, len(x.Partitions))
	for i, name := range x.Partitions {
		a, ok := got[name]
		if !ok {
			a = answer{code: -1, base: -1}
		}
		x.Codes[i], x.BaseOffsets[i] = a.code, a.base
	}
	return x
}

// hold waits d, or until the connection closes.
func (w *conn) hold(d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-w.closed:
		return net.ErrClosed
	}
}

// learn maps topic IDs to names from a Metadata response.
func (w *conn) learn(frame []byte, req *kmsg.MetadataRequest) {
	body, err := responseBody(frame, req)
	if err != nil {
		return
	}
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	if err := resp.ReadFrom(body); err != nil {
		return
	}
	w.c.learnTopics(resp)
}

// timedOut re-encodes a produce response with REQUEST_TIMED_OUT on every
// partition that succeeded, keeping the base offset the broker appended at, as
// Kafka's expired DelayedProduce answers.
func timedOut(frame []byte, req *kmsg.ProduceRequest, corr int32) ([]byte, error) {
	body, err := responseBody(frame, req)
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("kafkatest: parse produce response v%d corr %d: %w", req.Version, corr, err)
	}
	msg := kerr.RequestTimedOut.Message
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			p := &resp.Topics[i].Partitions[j]
			if p.ErrorCode != 0 {
				continue
			}
			p.ErrorCode = kerr.RequestTimedOut.Code
			p.LogAppendTime = -1
			if req.Version >= 8 {
				p.ErrorMessage = &msg
			}
		}
	}
	return kwire.AppendResponse(nil, corr, resp), nil
}

// legacyVersions re-encodes an ApiVersions response so that it advertises
// Produce and Fetch from version 0, as Kafka brokers before 4.0 (KIP-896)
// did, and SaslHandshake from version 0, as every Kafka broker does
// (librdkafka before 2.x's end enables SASL only when v0 is offered, then
// sends v1). The requests themselves still need kfake's versions.
func legacyVersions(frame []byte, req *kmsg.ApiVersionsRequest, corr int32) ([]byte, error) {
	body, err := responseBody(frame, req)
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("kafkatest: parse api versions response v%d corr %d: %w", req.Version, corr, err)
	}
	if resp.ErrorCode != 0 {
		return nil, fmt.Errorf("kafkatest: api versions response corr %d has error %d", corr, resp.ErrorCode)
	}
	for i := range resp.ApiKeys {
		if k := &resp.ApiKeys[i]; k.ApiKey == int16(kmsg.Produce) || k.ApiKey == int16(kmsg.Fetch) || k.ApiKey == int16(kmsg.SASLHandshake) {
			k.MinVersion = 0
		}
	}
	return kwire.AppendResponse(nil, corr, resp), nil
}
