package kafkatest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kdupcap/kdupcap/internal/testenv"
)

// TestNodePythonClients runs kafkajs, @platformatic/kafka and kafka-python
// against each fault, captured, and checks from the log read back that the
// client re-sent (a value held twice, or once and deduplicated when
// idempotent) and from the capture, parsed with kmsg, what each client's
// config doc says it sends: its client.id, its ApiVersions version and
// software name, its Metadata and Produce versions, the requests each new
// connection opens with, producer IDs, and whether a re-sent batch is the
// same bytes (same CRC) and on the same connection.
func TestNodePythonClients(t *testing.T) {
	const (
		apiVersions    = int16(kmsg.ApiVersions)
		metadata       = int16(kmsg.Metadata)
		produce        = int16(kmsg.Produce)
		initProducerID = int16(kmsg.InitProducerID)
	)
	timedOut := Fault{Action: TimedOutAfterAppend, Every: 2, Max: 1}
	closed := Fault{Action: CloseAfterAppend, Every: 2, Max: 1}
	delayed := Fault{Action: Delay, Every: 2, Max: 1, Delay: time.Second}
	jsWire := func(conns [][]int16, sameConn bool) clientWire {
		return clientWire{clientID: "kafkajs", apiVersions: 2, metadata: 6, produce: 7, conns: conns, sameConn: sameConn}
	}
	platWire := func(conns [][]int16, sameConn bool) clientWire {
		return clientWire{clientID: "platformatic-kafka", apiVersions: 3, software: "platformatic-kafka/1.35.0",
			metadata: 12, produce: 11, conns: conns, sameCRC: true, sameConn: sameConn}
	}
	pyBoot := []int16{apiVersions, metadata, metadata}
	pyWire := func(conns [][]int16, sameConn bool) clientWire {
		return clientWire{clientID: "kafka-python-producer-1", apiVersions: 0, metadata: 1, produce: 7,
			conns: append([][]int16{pyBoot}, conns...), sameCRC: true, sameConn: sameConn}
	}
	// Each check starts a program (@platformatic/kafka takes a second to
	// load): once per client, inside the parallel subtests.
	jsErr, platErr, pyErr := sync.OnceValue(KafkajsErr), sync.OnceValue(PlatformaticErr), sync.OnceValue(KafkaPythonErr)
	fast := 500 * time.Millisecond // the clients' own deadline, under delayed's hold
	cases := []struct {
		name       string
		unable     func() error
		produce    ProduceFunc
		fault      Fault
		idempotent bool
		// gaveUp: the client fails the write instead of re-sending.
		gaveUp string
		wire   clientWire
	}{
		{name: "kafkajs/timed_out", unable: jsErr, produce: KafkajsProduce(KafkaJS{}), fault: timedOut,
			wire: jsWire([][]int16{{apiVersions, metadata, produce}}, true)},
		{name: "kafkajs/closed", unable: jsErr, produce: KafkajsProduce(KafkaJS{}), fault: closed,
			wire: jsWire([][]int16{{apiVersions, metadata, produce}, {apiVersions, metadata, produce}}, false)},
		{name: "kafkajs/delayed", unable: jsErr, produce: KafkajsProduce(KafkaJS{RequestTimeout: fast}), fault: delayed,
			wire: jsWire([][]int16{{apiVersions, metadata, produce}}, true)},
		{name: "kafkajs/idempotent", unable: jsErr, produce: KafkajsProduce(KafkaJS{Idempotent: true}), fault: timedOut, idempotent: true,
			wire: jsWire([][]int16{{apiVersions, metadata, initProducerID, metadata, produce}}, true)},
		{name: "platformatic/timed_out", unable: platErr, produce: PlatformaticProduce(Platformatic{}), fault: timedOut,
			wire: platWire([][]int16{{apiVersions, metadata, produce}}, true)},
		{name: "platformatic/closed", unable: platErr, produce: PlatformaticProduce(Platformatic{}), fault: closed,
			wire: platWire([][]int16{{apiVersions, metadata, produce}, {produce}}, false)},
		{name: "platformatic/delayed", unable: platErr, produce: PlatformaticProduce(Platformatic{RequestTimeout: fast}), fault: delayed,
			gaveUp: "Request timed out"},
		{name: "platformatic/idempotent", unable: platErr, produce: PlatformaticProduce(Platformatic{Idempotent: true}), fault: timedOut, idempotent: true,
			wire: platWire([][]int16{{apiVersions, initProducerID, metadata, produce}}, true)},
		{name: "kafka-python/timed_out", unable: pyErr, produce: KafkaPythonPlainProduce(KafkaPythonPlain{}), fault: timedOut,
			wire: pyWire([][]int16{{produce}}, true)},
		{name: "kafka-python/closed", unable: pyErr, produce: KafkaPythonPlainProduce(KafkaPythonPlain{}), fault: closed,
			wire: pyWire([][]int16{{produce}, {metadata, produce}}, false)},
		{name: "kafka-python/delayed", unable: pyErr, produce: KafkaPythonPlainProduce(KafkaPythonPlain{RequestTimeout: fast}), fault: delayed,
			wire: pyWire([][]int16{{produce}, {metadata, produce}}, false)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			testenv.Capture(t)
			t.Parallel()
			if err := tc.unable(); err != nil {
				testenv.Unavailable(t, "%v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			pcap := filepath.Join(t.TempDir(), "run.pcap")
			s := Scenario{Name: "np", Topic: "orders", Records: 4, Produce: tc.produce, Faults: []Fault{tc.fault}}
			start := time.Now()
			res, err := Run(ctx, s, pcap)
			t.Logf("ran in %v", time.Since(start).Round(time.Millisecond))
			if tc.gaveUp != "" {
				if err == nil || !strings.Contains(err.Error(), tc.gaveUp) {
					t.Fatalf("Run: %v, want the client to give up with %q", err, tc.gaveUp)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Events) != 1 {
				t.Fatalf("faults applied: %+v, want one", res.Events)
			}
			dups := res.Log.Duplicates()
			if tc.idempotent {
				if len(dups) != 0 {
					t.Errorf("idempotent, yet the log holds %d values twice: %+v", len(dups), dups)
				}
			} else if len(dups) != 1 || len(dups[0].Records) != 2 {
				t.Fatalf("the log holds %+v more than once, want one value twice: the client re-sent", dups)
			}
			if fi, err := os.Stat(pcap); err != nil || fi.Size() == 0 {
				t.Fatalf("capture %s: %v (size %v)", pcap, err, fi)
			}
			reqs, err := readWire(pcap, res.Port)
			if err != nil {
				t.Fatal(err)
			}
			checkClientWire(t, reqs, tc.wire, tc.idempotent, res.Events[0])
		})
	}
}

// clientWire is what a client's capture must show.
type clientWire struct {
	clientID    string
	apiVersions int16
	software    string // "name/version" from ApiVersions v3+, "" if none
	metadata    int16
	produce     int16
	// conns are the keys each connection sends up to and including its
	// first produce request, connection by connection.
	conns [][]int16
	// sameCRC: the re-send is the same batch bytes; sameConn: on the
	// connection of the faulted request.
	sameCRC, sameConn bool
}

// checkClientWire checks the requests of a capture against w.
func checkClientWire(t *testing.T, reqs []wireRequest, w clientWire, idempotent bool, fault Event) {
	t.Helper()
	var conns [][]int16
	var connOf []int // client port of each entry of conns
	sawProduce := map[int]bool{}
	for _, r := range reqs {
		if r.clientID != w.clientID {
			t.Errorf("%s: client.id %q, want %q", r, r.clientID, w.clientID)
		}
		i := slices.Index(connOf, r.conn)
		if i < 0 {
			connOf, conns, i = append(connOf, r.conn), append(conns, nil), len(conns)
		}
		if !sawProduce[r.conn] {
			conns[i] = append(conns[i], r.key)
			sawProduce[r.conn] = r.key == int16(kmsg.Produce)
		}
		switch q := r.req.(type) {
		case *kmsg.ApiVersionsRequest:
			sw := ""
			if q.ClientSoftwareName != "" || q.ClientSoftwareVersion != "" {
				sw = q.ClientSoftwareName + "/" + q.ClientSoftwareVersion
			}
			if r.version != w.apiVersions || sw != w.software {
				t.Errorf("%s: software %q, want ApiVersions v%d software %q", r, sw, w.apiVersions, w.software)
			}
		case *kmsg.MetadataRequest:
			// kafka-python's bootstrap asks v0 first (all topics).
			if r.version != w.metadata && r.version != 0 {
				t.Errorf("%s, want Metadata v%d", r, w.metadata)
			}
		case *kmsg.ProduceRequest:
			if r.version != w.produce || q.Acks != -1 {
				t.Errorf("%s acks %d, want Produce v%d acks -1", r, q.Acks, w.produce)
			}
		}
	}
	if fmt.Sprint(conns) != fmt.Sprint(w.conns) {
		t.Errorf("requests each connection opens with: %v, want %v", conns, w.conns)
	}

	// The faulted request and its re-send: the first two batches of the
	// faulted request's value.
	var sent []wireBatch
	for _, b := range wireBatches(t, reqs) {
		if (b.producerID >= 0) != idempotent {
			t.Errorf("%s: producer ID %d, idempotent %t", b.req, b.producerID, idempotent)
		}
		if b.req.conn == wirePort(fault.Conn) && b.req.corr == fault.CorrelationID {
			sent = append(sent, b)
		} else if len(sent) > 0 && slices.Equal(b.values, sent[0].values) {
			sent = append(sent, b)
		}
	}
	if len(sent) < 2 {
		t.Fatalf("the faulted request %s/%d was not re-sent in the capture: %+v", fault.Conn, fault.CorrelationID, sent)
	}
	orig, again := sent[0], sent[1]
	t.Logf("re-send of %v: %s -> %s, crc %08x -> %08x, first timestamp %d -> %d, sequence %d -> %d",
		orig.values, orig.req, again.req, orig.crc, again.crc, orig.firstTimestamp, again.firstTimestamp, orig.sequence, again.sequence)
	if (orig.crc == again.crc) != w.sameCRC {
		t.Errorf("re-send crc %08x, first %08x: same bytes %t, want %t", again.crc, orig.crc, orig.crc == again.crc, w.sameCRC)
	}
	if (orig.req.conn == again.req.conn) != w.sameConn {
		t.Errorf("re-send on %s, first on %s: want same connection %t", again.req, orig.req, w.sameConn)
	}
	if idempotent && (again.producerID != orig.producerID || again.sequence != orig.sequence) {
		t.Errorf("idempotent re-send carries producer %d sequence %d, first %d/%d", again.producerID, again.sequence, orig.producerID, orig.sequence)
	}
}

func wirePort(addr string) int {
	var port int
	if i := strings.LastIndexByte(addr, ':'); i >= 0 {
		fmt.Sscan(addr[i+1:], &port)
	}
	return port
}

// wireRequest is one request a capture holds.
type wireRequest struct {
	conn         int // the client's port
	key, version int16
	corr         int32
	clientID     string
	req          kmsg.Request
}

func (r wireRequest) String() string {
	return fmt.Sprintf("%s v%d corr %d on :%d", kmsg.NameForKey(r.key), r.version, r.corr, r.conn)
}

// wireBatch is one record batch of a produce request.
type wireBatch struct {
	req            wireRequest
	crc            uint32
	firstTimestamp int64
	producerID     int64
	sequence       int32
	values         []string
}

func wireBatches(t *testing.T, reqs []wireRequest) []wireBatch {
	t.Helper()
	var out []wireBatch
	for _, r := range reqs {
		q, ok := r.req.(*kmsg.ProduceRequest)
		if !ok {
			continue
		}
		for _, tp := range q.Topics {
			for _, p := range tp.Partitions {
				for b := p.Records; len(b) >= 12; {
					n := 12 + int(int32(binary.BigEndian.Uint32(b[8:])))
					if n < 12 || n > len(b) {
						t.Fatalf("%s: batch of %d bytes in %d", r, n, len(b))
					}
					var rb kmsg.RecordBatch
					if err := rb.ReadFrom(b[:n]); err != nil {
						t.Fatalf("%s: %v", r, err)
					}
					b = b[n:]
					recs, err := records(rb.Records, int(rb.NumRecords))
					if err != nil {
						t.Fatalf("%s: %v", r, err)
					}
					wb := wireBatch{req: r, crc: uint32(rb.CRC), firstTimestamp: rb.FirstTimestamp, producerID: rb.ProducerID, sequence: rb.FirstSequence}
					for _, rec := range recs {
						wb.values = append(wb.values, string(rec.Value))
					}
					out = append(out, wb)
				}
			}
		}
	}
	return out
}

// readWire returns the requests sent to port in the pcap at path, in the
// order their connections opened, then in order: loopback, in-order TCP,
// exact retransmissions dropped.
func readWire(path string, port int) ([]wireRequest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	type flow struct {
		next    uint32
		started bool
		data    []byte
	}
	flows := map[int]*flow{}
	var order []int
	for {
		data, _, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		pkt := gopacket.NewPacket(data, r.LinkType(), gopacket.NoCopy)
		tcp, _ := pkt.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if tcp == nil || int(tcp.DstPort) != port {
			continue
		}
		src := int(tcp.SrcPort)
		fl := flows[src]
		if fl == nil {
			fl = &flow{}
			flows[src] = fl
			order = append(order, src)
		}
		if tcp.SYN {
			fl.next, fl.started = tcp.Seq+1, true
			continue
		}
		if !fl.started || len(tcp.Payload) == 0 || tcp.Seq != fl.next {
			if fl.started && len(tcp.Payload) > 0 && int32(tcp.Seq-fl.next) > 0 {
				return nil, fmt.Errorf("read %s: gap in :%d at seq %d", path, src, tcp.Seq)
			}
			continue
		}
		fl.data = append(fl.data, tcp.Payload...)
		fl.next += uint32(len(tcp.Payload))
	}
	var out []wireRequest
	for _, src := range order {
		reqs, err := wireParseRequests(flows[src].data, src)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		out = append(out, reqs...)
	}
	return out, nil
}

// wireParseRequests parses the request frames of one connection with kmsg.
func wireParseRequests(b []byte, conn int) ([]wireRequest, error) {
	var out []wireRequest
	for len(b) >= 4 {
		n := int(int32(binary.BigEndian.Uint32(b)))
		if n < 10 || n > len(b)-4 {
			return out, fmt.Errorf(":%d: frame of %d bytes with %d left", conn, n, len(b)-4)
		}
		fr := b[4 : 4+n]
		b = b[4+n:]
		r := wireRequest{conn: conn,
			key:     int16(binary.BigEndian.Uint16(fr)),
			version: int16(binary.BigEndian.Uint16(fr[2:])),
			corr:    int32(binary.BigEndian.Uint32(fr[4:])),
		}
		idLen := int(int16(binary.BigEndian.Uint16(fr[8:])))
		body := fr[10:]
		if idLen > 0 {
			if idLen > len(body) {
				return out, fmt.Errorf("%s: client.id of %d bytes", r, idLen)
			}
			r.clientID, body = string(body[:idLen]), body[idLen:]
		}
		r.req = kmsg.RequestForKey(r.key)
		if r.req == nil {
			return out, fmt.Errorf("%s: unknown key", r)
		}
		r.req.SetVersion(r.version)
		if r.req.IsFlexible() {
			var err error
			if body, err = wireSkipTags(body); err != nil {
				return out, fmt.Errorf("%s: header tags: %w", r, err)
			}
		}
		if err := r.req.ReadFrom(body); err != nil {
			return out, fmt.Errorf("%s: %w", r, err)
		}
		out = append(out, r)
	}
	if len(b) != 0 {
		return out, fmt.Errorf(":%d: %d bytes after the last frame", conn, len(b))
	}
	return out, nil
}

// wireSkipTags skips a flexible header's tagged fields.
func wireSkipTags(b []byte) ([]byte, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, errors.New("bad tag count")
	}
	b = b[n:]
	for range count {
		if _, n = binary.Uvarint(b); n <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return nil, errors.New("bad tag size")
		}
		b = b[n+int(size):]
	}
	return b, nil
}
