package kafkatest

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync"
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
// real broker's muted channel does.
type conn struct {
	net.Conn
	c      *Cluster
	remote string

	closeOnce sync.Once
	closed    chan struct{}

	rmu    sync.Mutex // guards in, broken (the read side)
	in     []byte
	broken bool
	faults faultCounts

	pmu     sync.Mutex // guards pending
	pending map[int32]pending

	wmu sync.Mutex // guards out (the write side)
	out []byte
}

// pending is a request awaiting its response.
type pending struct {
	req      kmsg.Request
	received time.Time
	fault    Fault
	faulted  bool
}

func newConn(nc net.Conn, c *Cluster) *conn {
	return &conn{
		Conn:    nc,
		c:       c,
		remote:  nc.RemoteAddr().String(),
		closed:  make(chan struct{}),
		pending: make(map[int32]pending),
	}
}

func (w *conn) Close() error {
	w.closeOnce.Do(func() { close(w.closed) })
	return w.Conn.Close()
}

func (w *conn) Read(p []byte) (int, error) {
	n, err := w.Conn.Read(p)
	if n > 0 {
		w.observeRequests(p[:n], time.Now())
	}
	return n, err
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
	if !isProduce || !pd.faulted {
		_, err := w.Conn.Write(frame)
		return err
	}
	ev := Event{
		Action:        pd.fault.Action,
		Conn:          w.remote,
		CorrelationID: corr,
		Version:       preq.Version,
		TimeoutMillis: preq.TimeoutMillis,
		Partitions:    w.c.partitions(preq),
		Received:      pd.received,
	}
	switch pd.fault.Action {
	case TimedOutAfterAppend:
		out, err := timedOut(frame, preq, corr)
		if err != nil {
			_, werr := w.Conn.Write(frame) // cannot rewrite: answer as is, unfaulted
			return werr
		}
		deadline := pd.received.Add(time.Duration(preq.TimeoutMillis) * time.Millisecond)
		if err := w.hold(time.Until(deadline)); err != nil {
			w.c.record(ev) // closed while held: never answered
			return err
		}
		frame = out
	case Delay:
		if err := w.hold(pd.fault.Delay); err != nil {
			w.c.record(ev)
			return err
		}
	case CloseAfterAppend:
		ev.Answered = time.Now()
		w.c.record(ev)
		w.Close()
		return fmt.Errorf("kafkatest: connection %s closed after the append of correlation ID %d", w.remote, corr)
	}
	_, err := w.Conn.Write(frame)
	ev.Answered = time.Now()
	w.c.record(ev)
	return err
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
