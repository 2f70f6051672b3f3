package fleet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kdupcap/kdupcap/internal/fifo"
)

// ConsumerOptions configure a Consumer.
type ConsumerOptions struct {
	Seeds        []string
	Topic, Group string
	Client       ClientOptions
	Merge        MergeOptions
	// MaxConns bounds the connections remembered (0: DefaultMaxConns).
	MaxConns int
	// Window is the detection window: offsets are committed only for
	// the records older than Window before the capture time detection
	// reached (Commit), so that the next owner of a partition reads again
	// every record a finding may still need. 0: never commit.
	Window time.Duration
}

// ConsumerStats count what a Consumer read.
type ConsumerStats struct {
	Records   int64 // records fetched
	Malformed int64 // records that did not decode (counted, skipped)
	// Errors are the first distinct decoding and fetch errors.
	Errors []string
	// Assigned counts the partitions assigned over the run, Revoked
	// those taken away (a rebalance), Commits the offset commits made.
	Assigned, Revoked, Commits int64
}

// Consumer reads attempt records as a member of a consumer group and
// hands them on merged by capture time (Merger). Poll and the other
// methods are called from one goroutine; the group's rebalance callbacks
// run only while Poll lets them (kgo.BlockRebalanceOnPoll).
type Consumer struct {
	cl     *kgo.Client
	topic  string
	window int64

	mu     sync.Mutex
	dec    *Decoder
	merger *Merger
	// parts: per partition owned, the offsets and capture times of the
	// records read, in offset order, back to the first not yet safe to
	// commit; next is the offset after the last read.
	parts map[int32]*partState
	stats ConsumerStats
	// lastRecord is the wall time a record last came.
	lastRecord time.Time
	cutoff     int64 // commit records older than this, Unix ns
	lastCommit time.Time
}

type partState struct {
	recs fifo.Queue[offsetAt]
	next int64
	// committed is the offset last committed.
	committed int64
}

type offsetAt struct {
	off int64
	at  int64
}

// maxConsumerErrs bounds ConsumerStats.Errors.
const maxConsumerErrs = 3

// commitEvery is how often (wall clock) a Consumer commits what is safe.
const commitEvery = time.Second

// NewConsumer joins group o.Group consuming o.Topic, from the earliest
// offset when the group has none committed.
func NewConsumer(o ConsumerOptions) (*Consumer, error) {
	if len(o.Seeds) == 0 || o.Topic == "" || o.Group == "" {
		return nil, errors.New("fleet: consumer: seeds, topic and group are required")
	}
	c := &Consumer{topic: o.Topic, window: int64(o.Window), dec: NewDecoder(o.MaxConns), merger: NewMerger(o.Merge),
		parts: make(map[int32]*partState), cutoff: math.MinInt64}
	conns := newConnSet(o.Client.TLS)
	opts := []kgo.Opt{
		kgo.SeedBrokers(o.Seeds...),
		kgo.ClientID("kdupcap-correlate"),
		kgo.ConsumeTopics(o.Topic),
		kgo.ConsumerGroup(o.Group),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.SessionTimeout(6 * time.Second),
		kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.RebalanceTimeout(10 * time.Second),
		kgo.OnPartitionsAssigned(c.assigned),
		kgo.OnPartitionsRevoked(c.revoked),
		kgo.OnPartitionsLost(c.lost),
	}
	opts = append(opts, o.Client.kgoOpts(conns)...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("fleet: consumer: %w", err)
	}
	c.cl = cl
	return c, nil
}

func (c *Consumer) noteErr(err error) {
	s := err.Error()
	for _, e := range c.stats.Errors {
		if e == s {
			return
		}
	}
	if len(c.stats.Errors) < maxConsumerErrs {
		c.stats.Errors = append(c.stats.Errors, s)
	}
}

func (c *Consumer) assigned(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range m[c.topic] {
		c.stats.Assigned++
		if _, ok := c.parts[p]; !ok {
			c.parts[p] = &partState{next: -1, committed: -1}
		}
	}
}

// revoked commits what is safe of the partitions taken away, then forgets
// their held records: their next owner reads them again.
func (c *Consumer) revoked(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
	c.mu.Lock()
	offs := c.safeOffsets(m[c.topic])
	c.mu.Unlock()
	if len(offs) > 0 {
		cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{c.topic: offs}, nil)
	}
	c.lost(ctx, cl, m)
}

func (c *Consumer) lost(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range m[c.topic] {
		c.stats.Revoked++
		delete(c.parts, p)
		c.merger.Drop(p)
	}
}

// Poll fetches what came within wait (or until ctx is done) and returns
// the records the merge lets go, appended to out, in capture-time order;
// when no record came for the merge's lateness of wall time, it lets all
// go. It commits what is safe every second.
func (c *Consumer) Poll(ctx context.Context, wait time.Duration, out []Event) ([]Event, error) {
	pctx, cancel := context.WithTimeout(ctx, wait)
	fs := c.cl.PollFetches(pctx)
	cancel()
	defer c.cl.AllowRebalance()
	if fs.IsClientClosed() {
		return out, errors.New("fleet: consumer: client closed")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fs.EachError(func(_ string, _ int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			c.noteErr(err)
		}
	})
	now := time.Now()
	fs.EachRecord(func(r *kgo.Record) {
		c.stats.Records++
		c.lastRecord = now
		ps, ok := c.parts[r.Partition]
		if !ok {
			ps = &partState{committed: -1}
			c.parts[r.Partition] = ps
		}
		ps.next = r.Offset + 1
		ev, err := c.dec.Decode(r.Value)
		if err != nil {
			c.stats.Malformed++
			c.noteErr(fmt.Errorf("partition %d offset %d: %w", r.Partition, r.Offset, err))
			return
		}
		ps.recs.Push(offsetAt{off: r.Offset, at: ev.At.UnixNano()})
		c.merger.Add(ev, r.Partition)
	})
	idle := !c.lastRecord.IsZero() && now.Sub(c.lastRecord) >= time.Duration(c.merger.lateness)
	out = c.merger.Release(out, idle)
	if c.window > 0 && now.Sub(c.lastCommit) >= commitEvery {
		c.lastCommit = now
		if offs := c.safeOffsets(nil); len(offs) > 0 {
			c.stats.Commits++
			c.cl.CommitOffsets(ctx, map[string]map[int32]kgo.EpochOffset{c.topic: offs}, nil)
		}
	}
	return out, nil
}

// Flush lets every held record go, appended to out.
func (c *Consumer) Flush(out []Event) []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.merger.Release(out, true)
}

// Advance tells the Consumer how far detection got in capture time: the
// records older than Window before it may be committed.
func (c *Consumer) Advance(t time.Time) {
	if c.window <= 0 || t.IsZero() {
		return
	}
	c.mu.Lock()
	c.cutoff = max(c.cutoff, t.UnixNano()-c.window)
	c.mu.Unlock()
}

// safeOffsets returns, for the partitions given (nil: all owned), the
// offset to commit where it moved: that of the first record not older
// than the cutoff, or the next to read when all are. c.mu is held.
func (c *Consumer) safeOffsets(parts []int32) map[int32]kgo.EpochOffset {
	out := map[int32]kgo.EpochOffset{}
	consider := func(p int32, ps *partState) {
		for {
			f, ok := ps.recs.Front()
			if !ok || f.at >= c.cutoff {
				break
			}
			ps.recs.Pop()
		}
		off := ps.next
		if f, ok := ps.recs.Front(); ok {
			off = f.off
		}
		if off >= 0 && off > ps.committed {
			ps.committed = off
			out[p] = kgo.EpochOffset{Epoch: -1, Offset: off}
		}
	}
	if parts == nil {
		for p, ps := range c.parts {
			consider(p, ps)
		}
	} else {
		for _, p := range parts {
			if ps, ok := c.parts[p]; ok {
				consider(p, ps)
			}
		}
	}
	return out
}

// HostOf returns the host of the connection numbered id (Decoder.HostOf).
func (c *Consumer) HostOf(id uint64) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dec.HostOf(id)
}

// Hosts returns what the merge saw of each host.
func (c *Consumer) Hosts() []HostStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.merger.Hosts()
}

// Stats returns the counts so far.
func (c *Consumer) Stats() ConsumerStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Errors = append([]string(nil), s.Errors...)
	return s
}

// Close commits what is safe, leaves the group (its partitions go to the
// other members) and closes the client.
func (c *Consumer) Close(ctx context.Context) {
	c.mu.Lock()
	offs := c.safeOffsets(nil)
	c.mu.Unlock()
	if len(offs) > 0 {
		c.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{c.topic: offs}, nil)
	}
	c.cl.AllowRebalance()
	_ = c.cl.LeaveGroupContext(ctx)
	c.cl.Close()
}
