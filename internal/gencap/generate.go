package gencap

import (
	"bufio"
	"container/heap"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/gopacket/gopacket/pcapgo"
)

// Capture file constants.
const (
	snapLen          = 262144
	pcapHeaderBytes  = 24
	recordHeaderSize = 16
)

// startMicros is the time of the first packet: 2026-01-01T00:00:00Z.
var startMicros = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()

// generator holds the state of one Generate call.
type generator struct {
	cfg     Config
	rng     *rand.Rand
	builder *batchBuilder
	man     *Manifest

	bw  *bufio.Writer
	pw  *pcapgo.Writer
	ser *serializer

	segs         segHeap
	order        uint64
	pendingBytes int64 // file bytes of scheduled segments
	written      int64 // file bytes written
	lastMicros   int64

	conns          connHeap
	connsCreated   int
	brokers        []*endpoint
	parts          []*partition
	byBroker       [][]*partition
	leaders        []int
	nextProducerID int64

	maxRecords  int   // Config.MaxRecords or its default
	batchesSeen int64 // batches built, for ResendEvery
	resendsOwed int64
	// verdictTurn counts resends of non-idempotent [0] and idempotent [1]
	// producers; unconfirmedTurn counts unconfirmed resends.
	verdictTurn     [2]int
	unconfirmedTurn int
	dataSegs        int64 // data segments written, for RetransmitEvery

	// TLS mode (tls.go): the key log's writer (nil: not kept), the
	// pcapng writer when Config.Secrets, and the first error of a step
	// that cannot return one.
	keys io.Writer
	ng   *ngWriter
	err  error
}

// Generate writes a pcap of Kafka produce traffic to w and returns its
// manifest. The same cfg always gives the same bytes, but for cfg.TLS: the
// same manifest and file length, other ciphertext (tls.go). Generate
// buffers its writes; it does not close w. With cfg.TLS the key log is
// lost unless cfg.Secrets puts it in the file: GenerateKeyLog keeps it.
func Generate(w io.Writer, cfg Config) (*Manifest, error) {
	return GenerateKeyLog(w, nil, cfg)
}

// GenerateKeyLog is Generate that also writes, with cfg.TLS, the NSS key
// log of every connection to keys (nil: not written), a connection's
// lines as it opens.
func GenerateKeyLog(w, keys io.Writer, cfg Config) (*Manifest, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	comp, err := newCompressor()
	if err != nil {
		return nil, err
	}
	maxRecords, maxValue := cfg.batchShape()
	seed := uint64(cfg.Seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := &generator{
		cfg:     cfg,
		rng:     rng,
		builder: &batchBuilder{rng: rng, comp: comp, maxValue: maxValue},
		man: &Manifest{
			Config:  cfg,
			Resends: []Resend{},
			Totals: Totals{
				ProduceRequestsByVersion: map[int16]int64{},
				Verdicts:                 map[string]int64{},
			},
		},
		maxRecords: maxRecords,
		bw:         bufio.NewWriterSize(w, 1<<20),
		ser:        newSerializer(),
		keys:       keys,
	}
	if err := g.writeFileHeader(); err != nil {
		return nil, err
	}
	g.newTopology()
	if err := g.run(); err != nil {
		return nil, err
	}
	if err := g.bw.Flush(); err != nil {
		return nil, fmt.Errorf("gencap: flush at byte %d: %w", g.written, err)
	}
	g.man.Totals.Bytes = g.written
	return g.man, nil
}

func (g *generator) loopback() bool { return g.cfg.MTU == 65535 }

// run steps connections in time order until the target size is reached,
// then closes each connection when its exchange in flight is done.
func (g *generator) run() error {
	for i := 0; i < g.cfg.Conns; i++ {
		heap.Push(&g.conns, g.newConn(g.newProducer(i), startMicros+int64(i)*int64(500+g.rng.IntN(1500))))
	}
	finishing := false
	for g.conns.Len() > 0 {
		c := heap.Pop(&g.conns).(*conn)
		if err := g.flushUntil(c.next); err != nil {
			return err
		}
		if !finishing && g.written+g.pendingBytes >= g.cfg.TargetBytes {
			finishing = true
		}
		if finishing {
			if c.opened {
				g.closeConn(c, c.next)
			}
			continue
		}
		if err := g.step(c); err != nil {
			return err
		}
		if g.err != nil {
			return g.err
		}
	}
	return g.flushUntil(math.MaxInt64)
}

// step runs the next exchange of c and schedules c (or its replacement).
func (g *generator) step(c *conn) error {
	switch {
	case !c.opened:
		g.openConn(c)
	case c.closing:
		t := g.closeConn(c, c.next)
		c = g.newConn(c.p, t+int64(1000+g.rng.IntN(4000)))
	case g.resendsOwed > 0 && c.p.acks == -1:
		g.resendsOwed--
		if err := g.resendStep(c); err != nil {
			return err
		}
	default:
		if err := g.produceStep(c); err != nil {
			return err
		}
	}
	heap.Push(&g.conns, c)
	return nil
}

// schedule queues a segment.
func (g *generator) schedule(s *segment) {
	s.order = g.order
	g.order++
	g.pendingBytes += g.fileBytes(s)
	g.man.Totals.Packets++
	heap.Push(&g.segs, s)
}

// flushUntil writes every scheduled segment due at or before t. Segments
// are only ever scheduled at or after the step time of the connection that
// makes them, so none can later be scheduled before t.
func (g *generator) flushUntil(t int64) error {
	for g.segs.Len() > 0 && g.segs[0].tsMicros <= t {
		s := heap.Pop(&g.segs).(*segment)
		g.pendingBytes -= g.fileBytes(s)
		if s.keyLog != nil { // not a packet: a pcapng secrets block
			if err := g.ng.secrets(s.keyLog); err != nil {
				return fmt.Errorf("gencap: write secrets at byte %d: %w", g.written, err)
			}
			g.written += ngSecretsBytes(len(s.keyLog))
			continue
		}
		data, err := g.ser.serialize(s)
		if err != nil {
			return err
		}
		ts := max(s.tsMicros, g.lastMicros+1) // strictly increasing
		g.lastMicros = ts
		if err := g.writePacket(ts, data); err != nil {
			return fmt.Errorf("gencap: write packet at byte %d: %w", g.written, err)
		}
		g.written += g.packetBytes(len(data))
	}
	return nil
}
