package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Bulk configures BulkCapture: real kgo producers writing a large capture
// of ordinary traffic to a kfake broker, with a few produce requests
// answered REQUEST_TIMED_OUT after the append so that the capture holds
// re-sends of known ground truth. Zero fields take DefaultBulk's values.
type Bulk struct {
	// Bytes is the size the capture file grows to (the producers stop once
	// it is reached; the last requests in flight add a little).
	Bytes int64
	// Producers are the kgo clients writing at once, each on its own
	// connection; the odd ones are idempotent.
	Producers int
	// Partitions of the one topic; records are keyed, so every request
	// carries batches of several partitions.
	Partitions int32
	// RecordBytes is the mean size of a record's value (JSON-like text).
	RecordBytes int
	// Every faults every Every-th produce request of a connection
	// (Fault.Every), until Faults requests were faulted over the run.
	Every, Faults int
	// Rate is the bytes per second the producers write, together: records
	// come as an application's would, many requests of a few hundred KB,
	// rather than all at once in a few of megabytes.
	Rate int64
	// Burst is the records a producer buffers before it sends them and
	// waits for their answers (kgo.ManualFlushing, then Flush), as a batch
	// job or a request handler flushing its output does: a request then
	// carries one burst, about Burst*RecordBytes bytes in one batch per
	// partition, however loaded the machine is. With kgo's own batching
	// (lingering 0, one request in flight) the records pile up while a
	// request is out, so the requests grew with the machine's load (0.1 to
	// 5 MB on one machine from one run to the next), and two captures did
	// not compare.
	Burst int
	// Seed draws the keys and values.
	Seed uint64
	// Log, if set, is told how the run goes.
	Log io.Writer
}

// DefaultBulk is what a zero field of Bulk takes.
var DefaultBulk = Bulk{Bytes: 100 << 20, Producers: 4, Partitions: 6, RecordBytes: 700, Every: 5, Faults: 12, Rate: 128 << 20, Burst: 1000, Seed: 1}

// bulkBufferKiB is the kernel buffer of a BulkCapture's tcpdump: room for
// what the producers send while tcpdump waits for the CPU.
const bulkBufferKiB = 256 << 10

// bulkTopic is the topic of a BulkCapture.
const bulkTopic = "bulk"

// BulkResend is one batch a BulkCapture's producer sent twice on one
// connection, derived from the broker's exchanges and checked against the
// log read back: what kdupcap must find.
type BulkResend struct {
	Client, Broker, Topic string
	Partition             int32
	// CorrelationIDs are the attempts', in send order: the faulted request
	// and its retry.
	CorrelationIDs []int32
	Idempotent     bool
	// Verdict is "duplicated" (the log holds the batch twice) or
	// "deduplicated" (the broker kept one copy, an idempotent producer).
	Verdict string
	// AppendedOffsets are the batch's distinct base offsets in the log,
	// ascending.
	AppendedOffsets []int64
}

// BulkResult is what a BulkCapture made.
type BulkResult struct {
	Pcap    string
	Port    int // the broker's
	Resends []BulkResend
	// ProduceRequests are the produce requests the broker answered;
	// Records the records the log holds.
	ProduceRequests, Records int64
	Stats                    CaptureStats
}

// BulkCapture captures b.Producers kgo producers writing to a fresh kfake
// broker until pcap holds b.Bytes, reads the log back, and returns the
// re-sends the faults caused, each checked against the log: a non-idempotent
// producer's re-sent batch is in the log twice with the same CRC and
// records, an idempotent one's once; no other record is in the log twice.
// It needs tcpdump and root (CanCapture).
func BulkCapture(ctx context.Context, pcap string, b Bulk) (*BulkResult, error) {
	b = b.withDefaults()
	logf := func(format string, args ...any) {
		if b.Log != nil {
			fmt.Fprintf(b.Log, "kafkatest: "+format+"\n", args...)
		}
	}
	faults := []Fault{{Action: TimedOutAfterAppend, Every: b.Every, Max: b.Faults}}
	c, err := NewCluster(faults, kfake.SeedTopics(b.Partitions, bulkTopic))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second) // the kernel clears the buffer first
	capt, err := startCapture(sctx, pcap, bulkBufferKiB, c.Port())
	cancel()
	if err != nil {
		return nil, err
	}
	if err := capt.raisePriority(); err != nil {
		capt.Stop(5 * time.Second)
		return nil, err
	}
	start := time.Now()
	perr := bulkProduce(ctx, c.Addr(), b)
	st, serr := capt.Stop(30 * time.Second)
	if err := errors.Join(perr, serr); err != nil {
		return nil, err
	}
	logf("captured %d packets in %v", st.Captured, time.Since(start).Round(time.Millisecond))
	res := &BulkResult{Pcap: pcap, Port: c.Port(), Stats: st}
	xs := c.Exchanges()
	res.ProduceRequests = int64(len(xs))
	log, err := ReadBack(ctx, c.Addr(), bulkTopic)
	if err != nil {
		return nil, err
	}
	for _, p := range log.Partitions {
		res.Records += int64(len(p.Records))
	}
	res.Resends, err = bulkResends(xs, log, "127.0.0.1:"+strconv.Itoa(c.Port()))
	if err != nil {
		return nil, err
	}
	logf("%d produce requests, %d records in the log, %d re-sends", res.ProduceRequests, res.Records, len(res.Resends))
	return res, nil
}

func (b Bulk) withDefaults() Bulk {
	d := DefaultBulk
	orDefault(&b.Bytes, d.Bytes)
	orDefault(&b.Producers, d.Producers)
	orDefault(&b.Partitions, d.Partitions)
	orDefault(&b.RecordBytes, d.RecordBytes)
	orDefault(&b.Every, d.Every)
	orDefault(&b.Faults, d.Faults)
	orDefault(&b.Rate, d.Rate)
	orDefault(&b.Burst, d.Burst)
	if b.Seed == 0 {
		b.Seed = d.Seed
	}
	return b
}

// orDefault sets *v to d when it is not positive.
func orDefault[T int | int32 | int64 | float64](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// bulkClientID names a bulk producer; bulkIdempotent says whether it is
// idempotent.
func bulkClientID(i int) string { return "kgo-bulk-" + strconv.Itoa(i) }
func bulkIdempotent(i int) bool { return i%2 == 1 }

// bulkProduce runs the producers until they produced about b.Bytes of
// capture (the file itself lags: tcpdump writes what the kernel buffered
// for it), each flushing a burst of b.Burst records at a time. One request
// in flight per producer, so that the retry of a faulted request is the
// next request of its connection carrying the partition.
func bulkProduce(ctx context.Context, addr string, b Bulk) error {
	var (
		done atomic.Bool
		sent atomic.Int64 // bytes produced, with their share of the capture's overhead
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
		done.Store(true)
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i := range b.Producers {
		opts := append(baseOpts(addr, bulkTopic, bulkClientID(i), bulkIdempotent(i)),
			kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
			kgo.MaxProduceRequestsInflightPerBroker(1),
			kgo.ManualFlushing(),
			kgo.MaxBufferedRecords(b.Burst+1), // a burst whole: manual flushing refuses a record over the bound
			kgo.ProduceRequestTimeout(300*time.Millisecond),
			kgo.RequestTimeoutOverhead(20*time.Second),
			kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }))
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return fmt.Errorf("kafkatest: bulk producer: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			rng := rand.New(rand.NewPCG(b.Seed, uint64(i)))
			var val []byte
			pace := newPacer(b.Rate / int64(b.Producers))
			for n := 0; !done.Load(); n++ {
				val = bulkValue(val[:0], rng, i, n, b.RecordBytes)
				key := "user-" + strconv.Itoa(rng.IntN(10000))
				size := int64(len(key) + len(val) + bulkRecordOverhead)
				if sent.Add(size) >= b.Bytes {
					done.Store(true)
				}
				pace.wait(size)
				r := &kgo.Record{Key: []byte(key), Value: slices.Clone(val)}
				cl.Produce(pctx, r, func(_ *kgo.Record, err error) {
					if err != nil && !done.Load() {
						fail(fmt.Errorf("kafkatest: bulk produce: %w", err))
					}
				})
				if (n+1)%b.Burst == 0 {
					if err := cl.Flush(ctx); err != nil {
						fail(fmt.Errorf("kafkatest: bulk flush: %w", err))
					}
				}
			}
			if err := cl.Flush(ctx); err != nil {
				fail(fmt.Errorf("kafkatest: bulk flush: %w", err))
			}
		}()
	}
	stop := context.AfterFunc(ctx, func() { fail(ctx.Err()) })
	defer stop()
	wg.Wait()
	return errors.Join(errs...)
}

// pacer holds a producer to a rate, sleeping now and then.
type pacer struct {
	rate  int64 // bytes per second
	start time.Time
	bytes int64
}

func newPacer(rate int64) *pacer { return &pacer{rate: max(rate, 1), start: time.Now()} }

// wait counts n more bytes and sleeps, every 64 KiB, while they are ahead
// of the rate.
func (p *pacer) wait(n int64) {
	before := p.bytes
	p.bytes += n
	if p.bytes>>16 == before>>16 {
		return
	}
	due := p.start.Add(time.Duration(float64(p.bytes) / float64(p.rate) * float64(time.Second)))
	if d := time.Until(due); d > 0 {
		time.Sleep(d)
	}
}

// bulkRecordOverhead is what a record adds to the capture beyond its key
// and value, about: its own header in the batch, its share of the batch's,
// the frames' and the packets' headers and of the acknowledgements.
const bulkRecordOverhead = 12

// bulkWords are the words a bulk value is made of.
var bulkWords = strings.Fields(`order payment shipped pending customer invoice account
	refund cart checkout item quantity price total currency status created updated
	warehouse region europe america asia express standard gift coupon discount
	session device mobile desktop browser click view search result page`)

// bulkValue appends to dst a JSON-like record value of about size bytes,
// distinct by producer and number.
func bulkValue(dst []byte, rng *rand.Rand, producer, n, size int) []byte {
	dst = append(dst, `{"producer":`...)
	dst = strconv.AppendInt(dst, int64(producer), 10)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	dst = append(dst, `,"ts":`...)
	dst = strconv.AppendInt(dst, 1700000000000+int64(n)*37+int64(rng.IntN(1000)), 10)
	dst = append(dst, `,"amount":`...)
	dst = strconv.AppendFloat(dst, float64(rng.IntN(1000000))/100, 'f', 2, 64)
	dst = append(dst, `,"words":"`...)
	want := size/2 + rng.IntN(size+1)
	for len(dst) < want {
		dst = append(dst, bulkWords[rng.IntN(len(bulkWords))]...)
		dst = append(dst, ' ')
	}
	return append(dst, `"}`...)
}

// bulkResends derives the re-sends from the broker's exchanges and the log:
// every batch a connection sent more than once, known by the log's batch at
// the offset each answer gave (an idempotent producer's re-send is answered
// with the offset of the copy kept; a non-idempotent one's is appended
// again, the same CRC and records at a new offset). Every answer must have
// appended or deduplicated its batches, and the log must hold twice only
// the records of the duplicated batches.
func bulkResends(xs []Exchange, log *Log, broker string) ([]BulkResend, error) {
	type batchKey struct {
		conn      string
		partition int32
		crc       uint32
		records   int32
		producer  int64
		sequence  int32
	}
	type firstSend struct {
		corr   int32
		offset int64
		resend int // index in out, -1 until sent again
	}
	var (
		out   []BulkResend
		sends = map[batchKey]*firstSend{}
	)
	for _, x := range xs {
		for pi, name := range x.Partitions {
			part, err := bulkPartition(name)
			if err != nil {
				return nil, err
			}
			if x.Codes[pi] != 0 {
				return nil, fmt.Errorf("kafkatest: produce request %d on %s: %s answered %d", x.CorrelationID, x.Conn, name, x.Codes[pi])
			}
			pl, ok := log.Partition(part)
			if !ok {
				return nil, fmt.Errorf("kafkatest: no partition %d in the log", part)
			}
			off := x.BaseOffsets[pi]
			bt, ok := pl.BatchAt(off)
			if !ok {
				return nil, fmt.Errorf("kafkatest: produce request %d on %s: no batch at %s offset %d", x.CorrelationID, x.Conn, name, off)
			}
			k := batchKey{x.Conn, part, bt.CRC, bt.NumRecords, bt.ProducerID, bt.FirstSequence}
			f := sends[k]
			if f == nil {
				sends[k] = &firstSend{corr: x.CorrelationID, offset: off, resend: -1}
				continue
			}
			if f.resend < 0 {
				f.resend = len(out)
				out = append(out, BulkResend{Client: x.Conn, Broker: broker, Topic: bulkTopic, Partition: part,
					CorrelationIDs: []int32{f.corr}, Idempotent: bt.ProducerID >= 0, AppendedOffsets: []int64{f.offset}})
			}
			r := &out[f.resend]
			r.CorrelationIDs = append(r.CorrelationIDs, x.CorrelationID)
			if !slices.Contains(r.AppendedOffsets, off) {
				r.AppendedOffsets = append(r.AppendedOffsets, off)
			}
		}
	}
	dup := map[int32]map[int64]bool{} // partition -> base offsets of duplicated batches
	for i := range out {
		r := &out[i]
		slices.Sort(r.AppendedOffsets)
		r.Verdict = "deduplicated"
		if len(r.AppendedOffsets) > 1 {
			r.Verdict = "duplicated"
			if dup[r.Partition] == nil {
				dup[r.Partition] = map[int64]bool{}
			}
			for _, o := range r.AppendedOffsets {
				dup[r.Partition][o] = true
			}
		}
	}
	for _, c := range log.Duplicates() {
		for _, rec := range c.Records {
			if !dup[c.Partition][rec.BatchBaseOffset] {
				return nil, fmt.Errorf("kafkatest: the log holds a record of %d/%d twice that no re-send explains", c.Partition, rec.BatchBaseOffset)
			}
		}
	}
	if len(out) == 0 {
		faulted := 0
		for _, x := range xs {
			if x.Fault != 0 {
				faulted++
			}
		}
		return nil, fmt.Errorf("kafkatest: the bulk capture holds no re-send (%d produce requests, %d faulted): make it larger", len(xs), faulted)
	}
	return out, nil
}

// bulkPartition is the partition of "topic/partition".
func bulkPartition(name string) (int32, error) {
	_, p, ok := strings.Cut(name, "/")
	n, err := strconv.ParseInt(p, 10, 32)
	if !ok || err != nil {
		return 0, fmt.Errorf("kafkatest: partition %q", name)
	}
	return int32(n), nil
}
