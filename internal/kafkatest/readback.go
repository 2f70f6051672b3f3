package kafkatest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Log is what the broker's log holds of one topic, read back after a run.
type Log struct {
	Topic      string
	TopicID    [16]byte
	Partitions []PartitionLog // by partition number
}

// PartitionLog is one partition's log from offset 0 to its high watermark.
type PartitionLog struct {
	Partition     int32
	HighWatermark int64
	Batches       []Batch
	Records       []Record
}

// Batch is one record batch as fetched: the broker rewrote its base offset,
// the rest is what the producer sent.
type Batch struct {
	BaseOffset    int64
	NumRecords    int32
	ProducerID    int64
	ProducerEpoch int16
	FirstSequence int32
	CRC           uint32
	// Attributes are the batch's: bits 0-2 the compression codec.
	Attributes int16
}

// Record is one record as fetched. Key, Value and Headers are its identity.
type Record struct {
	Offset          int64
	BatchBaseOffset int64
	// Timestamp is the record's time in Unix milliseconds: the batch's
	// first timestamp plus the record's delta.
	Timestamp int64
	Key       string
	Value     string
	// KeyNull says the key is null rather than empty.
	KeyNull bool
	Headers []Header
}

// Header is one record header.
type Header struct {
	Key   string
	Value string
}

// Copies is every copy the log holds of one record in one partition: the
// records with the same key, value and headers (the timestamp is not part
// of a record's identity: clients that rebuild a retry restamp it).
type Copies struct {
	Partition int32
	Value     string
	Records   []Record // ascending offsets
}

// Identity is the record's key, value and headers, encoded unambiguously: two
// records are copies of one another when their identities are equal.
func (r Record) Identity() string {
	var b strings.Builder
	field := func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	if r.KeyNull {
		b.WriteString("-")
	} else {
		field(r.Key)
	}
	field(r.Value)
	b.WriteString(strconv.Itoa(len(r.Headers)))
	for _, h := range r.Headers {
		field(h.Key)
		field(h.Value)
	}
	return b.String()
}

// Copies groups a partition's records by identity (key, value, headers), in
// order of first offset.
func (p PartitionLog) Copies() []Copies {
	idx := make(map[string]int)
	var out []Copies
	for _, r := range p.Records {
		id := r.Identity()
		i, ok := idx[id]
		if !ok {
			i = len(out)
			idx[id] = i
			out = append(out, Copies{Partition: p.Partition, Value: r.Value})
		}
		out[i].Records = append(out[i].Records, r)
	}
	return out
}

// BatchAt returns the batch with the given base offset.
func (p PartitionLog) BatchAt(base int64) (Batch, bool) {
	for _, b := range p.Batches {
		if b.BaseOffset == base {
			return b, true
		}
	}
	return Batch{}, false
}

// Copies returns the copies of every record of every partition.
func (l *Log) Copies() []Copies {
	var out []Copies
	for _, p := range l.Partitions {
		out = append(out, p.Copies()...)
	}
	return out
}

// Duplicates returns the records (by identity) the log holds more than once.
func (l *Log) Duplicates() []Copies {
	var out []Copies
	for _, c := range l.Copies() {
		if len(c.Records) > 1 {
			out = append(out, c)
		}
	}
	return out
}

// Partition returns one partition's log.
func (l *Log) Partition(p int32) (PartitionLog, bool) {
	for _, pl := range l.Partitions {
		if pl.Partition == p {
			return pl, true
		}
	}
	return PartitionLog{}, false
}

// maxFetches bounds the fetches ReadBack makes per partition.
const maxFetches = 10000

// ReadBack fetches every partition of topic from its current leader, found
// through the broker at addr (a partition whose leader moved meanwhile is
// read again from the new one), from offset 0 to the high watermark, with
// raw Fetch requests so that the batch structure is kept. Compressed batches are decompressed with kgo's
// DefaultDecompressor.
func ReadBack(ctx context.Context, addr, topic string) (*Log, error) {
	return readBack(ctx, addr, topic, nil, nil)
}

// readBack is ReadBack authenticating as auth and over tl, when not nil.
func readBack(ctx context.Context, addr, topic string, auth *SASL, tl *TLS) (*Log, error) {
	opts, err := auth.kgoOpts()
	if err != nil {
		return nil, err
	}
	opts = append(opts, tl.kgoOpts()...)
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(addr))...)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: read back %s: %w", topic, err)
	}
	defer cl.Close()

	mtopic, err := topicMetadata(ctx, cl, topic)
	if err != nil {
		return nil, err
	}
	log := &Log{Topic: topic, TopicID: mtopic.TopicID}
	dec := kgo.DefaultDecompressor()
	for _, mp := range mtopic.Partitions {
		pl, err := readLeader(ctx, cl, log, mp.Partition, mp.Leader, dec)
		if err != nil {
			return nil, err
		}
		log.Partitions = append(log.Partitions, pl)
	}
	slices.SortFunc(log.Partitions, func(a, b PartitionLog) int { return int(a.Partition - b.Partition) })
	return log, nil
}

// leaderTries bounds how often ReadBack looks a partition's leader up again
// after NOT_LEADER_OR_FOLLOWER (a leader moved under it).
const leaderTries = 5

// readLeader reads one partition from its current leader, from leader on:
// when the broker answers that it is not the leader, it asks Metadata again
// and reads the whole partition from the new one.
func readLeader(ctx context.Context, cl *kgo.Client, log *Log, partition, leader int32, dec kgo.Decompressor) (PartitionLog, error) {
	for try := 1; ; try++ {
		pl, err := readPartition(ctx, cl.Broker(int(leader)), log, partition, dec)
		if err == nil || !errors.Is(err, kerr.NotLeaderForPartition) || try == leaderTries {
			return pl, err
		}
		mtopic, merr := topicMetadata(ctx, cl, log.Topic)
		if merr != nil {
			return pl, errors.Join(err, merr)
		}
		found := false
		for _, mp := range mtopic.Partitions {
			if mp.Partition == partition {
				leader, found = mp.Leader, true
			}
		}
		if !found {
			return pl, fmt.Errorf("kafkatest: read back %s/%d: partition gone from metadata: %w", log.Topic, partition, err)
		}
	}
}

// topicMetadata asks the cluster for topic's metadata (which also tells cl
// every broker's address).
func topicMetadata(ctx context.Context, cl *kgo.Client, topic string) (kmsg.MetadataResponseTopic, error) {
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.MetadataResponseTopic{}, fmt.Errorf("kafkatest: read back %s: metadata: %w", topic, err)
	}
	if len(mresp.Topics) != 1 {
		return kmsg.MetadataResponseTopic{}, fmt.Errorf("kafkatest: read back %s: metadata names %d topics", topic, len(mresp.Topics))
	}
	mtopic := mresp.Topics[0]
	if err := kerr.ErrorForCode(mtopic.ErrorCode); err != nil {
		return kmsg.MetadataResponseTopic{}, fmt.Errorf("kafkatest: read back %s: metadata: %w", topic, err)
	}
	return mtopic, nil
}

func readPartition(ctx context.Context, br *kgo.Broker, log *Log, partition int32, dec kgo.Decompressor) (PartitionLog, error) {
	pl := PartitionLog{Partition: partition}
	var offset int64
	for range maxFetches {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 0
		req.MinBytes = 1
		req.MaxBytes = 16 << 20
		req.SessionEpoch = -1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = log.Topic, log.TopicID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = partition, offset, 16<<20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp, err := req.RequestWith(ctx, br)
		if err != nil {
			return pl, fmt.Errorf("kafkatest: read back %s/%d at offset %d: %w", log.Topic, partition, offset, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return pl, fmt.Errorf("kafkatest: read back %s/%d at offset %d: fetch answered %d topics", log.Topic, partition, offset, len(resp.Topics))
		}
		rp := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
			return pl, fmt.Errorf("kafkatest: read back %s/%d at offset %d: %w", log.Topic, partition, offset, err)
		}
		pl.HighWatermark = rp.HighWatermark
		if offset >= rp.HighWatermark {
			return pl, nil
		}
		next, err := pl.addBatches(rp.RecordBatches, offset, dec)
		if err != nil {
			return pl, fmt.Errorf("kafkatest: read back %s/%d: %w", log.Topic, partition, err)
		}
		if next <= offset {
			return pl, fmt.Errorf("kafkatest: read back %s/%d: no progress at offset %d below high watermark %d", log.Topic, partition, offset, rp.HighWatermark)
		}
		offset = next
	}
	return pl, fmt.Errorf("kafkatest: read back %s/%d: more than %d fetches", log.Topic, partition, maxFetches)
}

// addBatches appends the whole v2 batches of a fetch at or past from and
// returns the offset after the last one (from if none was whole); dec
// decompresses compressed batches.
func (pl *PartitionLog) addBatches(b []byte, from int64, dec kgo.Decompressor) (int64, error) {
	next := from
	for len(b) >= 17 {
		length := int32(binary.BigEndian.Uint32(b[8:]))
		if length < 0 || int64(length) > int64(len(b)-12) {
			break // a partial batch at the end of the fetch
		}
		raw := b[:12+int(length)]
		b = b[len(raw):]
		if magic := raw[16]; magic != 2 {
			return next, fmt.Errorf("batch of magic %d unsupported", magic)
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(raw); err != nil {
			return next, fmt.Errorf("batch at offset %d: %w", int64(binary.BigEndian.Uint64(raw)), err)
		}
		end := rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
		if end <= from {
			continue // fetched from inside an earlier batch
		}
		pl.Batches = append(pl.Batches, Batch{
			BaseOffset:    rb.FirstOffset,
			NumRecords:    rb.NumRecords,
			ProducerID:    rb.ProducerID,
			ProducerEpoch: rb.ProducerEpoch,
			FirstSequence: rb.FirstSequence,
			CRC:           uint32(rb.CRC),
			Attributes:    rb.Attributes,
		})
		next = end
		if rb.Attributes&0x20 != 0 {
			continue // control batch: no data records
		}
		data := rb.Records
		if codec := rb.Attributes & 0x07; codec != 0 {
			if codec > 4 {
				return next, fmt.Errorf("batch at offset %d: unknown codec %d", rb.FirstOffset, codec)
			}
			var err error
			data, err = dec.Decompress(rb.Records, kgo.CompressionCodecType(codec))
			if err != nil {
				return next, fmt.Errorf("batch at offset %d: decompress codec %d: %w", rb.FirstOffset, codec, err)
			}
		}
		recs, err := records(data, int(rb.NumRecords))
		if err != nil {
			return next, fmt.Errorf("batch at offset %d: %w", rb.FirstOffset, err)
		}
		for _, r := range recs {
			rec := Record{
				Offset:          rb.FirstOffset + int64(r.OffsetDelta),
				BatchBaseOffset: rb.FirstOffset,
				Timestamp:       rb.FirstTimestamp + r.TimestampDelta64,
				Key:             string(r.Key),
				KeyNull:         r.Key == nil,
				Value:           string(r.Value),
			}
			for _, h := range r.Headers {
				rec.Headers = append(rec.Headers, Header{Key: h.Key, Value: string(h.Value)})
			}
			pl.Records = append(pl.Records, rec)
		}
	}
	return next, nil
}

// records splits the uncompressed records of a batch.
func records(b []byte, n int) ([]kmsg.Record, error) {
	out := make([]kmsg.Record, 0, min(n, len(b)))
	for i := range n {
		length, size := binary.Varint(b)
		if size <= 0 || length < 0 || length > int64(len(b)-size) {
			return nil, fmt.Errorf("record %d of %d truncated", i, n)
		}
		var r kmsg.Record
		if err := r.ReadFrom(b[:size+int(length)]); err != nil {
			return nil, fmt.Errorf("record %d of %d: %w", i, n, err)
		}
		out = append(out, r)
		b = b[size+int(length):]
	}
	return out, nil
}

// Codec is the batch's compression codec, from its attributes.
func (b Batch) Codec() Codec { return Codec(b.Attributes & 0x07) }
