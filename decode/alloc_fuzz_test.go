package decode

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"net/netip"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Allocation per input byte (issue 13). The targets below feed fuzzer
// bytes to the frame, produce, fetch and record decoders and check that
// what a decode allocates (runtime.MemStats.TotalAlloc across it: every
// byte allocated, kept or not) is bounded by what it reads:
//
//	allocated <= allocPerByte*(n + decompressed) + fixed + codecs
//
// n is the bytes handed to the decoder, decompressed the bytes it
// decompressed meanwhile (Stats.DecompressedBytes; each batch at most
// Options.MaxDecompressedBytes, the run at most MaxDecompressedTotal,
// both small here so that the term is small too).
//
// allocPerByte: a decoder that keeps a copy of what it reads (a partial
// frame, grown geometrically: at most twice its size), a struct per
// element its bytes can hold (sized to the count, not grown by append),
// and what it makes of decompressed bytes as of wire bytes, allocates a
// few bytes per byte; 8 leaves room for that and no more. A count that
// claims more elements than its bytes can hold as real elements must be
// refused before anything is allocated for it.
//
// fixed is allocColdFixed for a fresh Decoder (built outside the
// measurement): what a Decoder makes once, on first use, whatever its
// input (the gzip, lz4 and zstd readers, the decompression buffer, the
// pooled buffers of kept batch bytes, interned names, error messages).
// Each input is then decoded a second time by the same Decoder (a new
// connection for frames), where fixed is allocWarmFixed: that second run
// checks the per-byte part on the small inputs a fuzzer makes, which the
// 1 MiB of the first would hide.
//
// codecs is what the codecs need beyond that, whatever the cap: a zstd
// frame may make the Decoder's zstd reader hold a window of up to
// maxZstdWindow, once (zstdAllowance), and scratch for each frame whose
// literals are corrupt (zstdFrameAllowance per zstd section read). LZ4 frames are read block by block
// into the capped output (lz4.go), with no allowance.
const (
	allocPerByte   = 8
	allocColdFixed = 1 << 20
	allocWarmFixed = 16 << 10
	zstdAllowance  = maxZstdWindow + 256<<10
	// zstdFrameAllowance is what klauspost/compress's zstd decoder
	// allocates afresh for each frame whose Huffman-coded literals do not
	// decode (about 9 KB of table scratch): a fixed cost per zstd section
	// read (codecs.zstdFrames), collected at once.
	zstdFrameAllowance = 16 << 10
	// allocCap and allocBudget are Options.MaxDecompressedBytes and
	// MaxDecompressedTotal in these targets.
	allocCap    = 64 << 10
	allocBudget = 4 << 20
)

// allocOptions are the Options of the targets: records read and printed,
// so that every batch may be decompressed, under small caps.
func allocOptions() Options {
	return Options{Records: 3, RecordPrints: true, MaxDecompressedBytes: allocCap, MaxDecompressedTotal: allocBudget}
}

// allocSink fingerprints the records of every batch it is handed, as
// detect may, and keeps nothing; it takes fetches and transactions too, so
// that the Decoder parses them.
type allocSink struct{}

func (allocSink) Produce(x *Exchange) {
	for i := range x.Batches {
		x.Batches[i].RecordPrints()
	}
}
func (allocSink) Fetch(*Fetch)                   {}
func (allocSink) InitProducerID(*InitProducerID) {}
func (allocSink) EndTxn(*EndTxn)                 {}

// allocBytes returns the bytes f allocates. TotalAlloc counts every byte
// allocated, collected since or not, and ReadMemStats flushes the
// per-P caches first, so no GC is needed before (bomb_test.go's allocated
// runs one, which costs milliseconds per fuzz input).
func allocBytes(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// checkAlloc runs decode, which hands n input bytes to d, twice (cold and
// warm, see above) and fails t when a run allocates beyond its bound or
// breaks the caps on decompression.
func checkAlloc(t *testing.T, d *Decoder, n int, decode func()) {
	t.Helper()
	for _, run := range []string{"cold", "warm"} {
		before, frames := d.Stats().DecompressedBytes, d.pr.codecs.zstdFrames
		got := allocBytes(decode)
		dec := d.Stats().DecompressedBytes - before
		fixed := uint64(allocWarmFixed) + zstdFrameAllowance*uint64(d.pr.codecs.zstdFrames-frames)
		if run == "cold" {
			fixed = allocColdFixed
			if d.pr.codecs.zstd != nil {
				fixed += zstdAllowance
			}
		}
		if bound := allocPerByte*(uint64(n)+uint64(dec)) + fixed; got > bound {
			t.Fatalf("%s run: %d bytes allocated for %d input bytes and %d decompressed (%.1f per byte), bound %d",
				run, got, n, dec, float64(got)/float64(max(n, 1)), bound)
		}
		if c := cap(d.pr.codecs.buf); c > allocCap {
			t.Fatalf("%s run: decompression buffer of %d bytes, cap %d", run, c, allocCap)
		}
	}
	if st := d.Stats(); st.DecompressedBytes > allocBudget {
		t.Fatalf("%d bytes decompressed, budget %d", st.DecompressedBytes, allocBudget)
	}
}

// captureConns returns the client and broker bytes of every TCP
// connection of the repository's captures (testdata/*.pcap; the side that
// sends first is the client: Kafka clients speak first).
func captureConns(tb testing.TB) [][2][]byte {
	names, err := filepath.Glob(filepath.Join("..", "testdata", "*.pcap"))
	if err != nil || len(names) == 0 {
		tb.Fatalf("no captures: %v", err)
	}
	type key [2]netip.AddrPort
	var out [][2][]byte
	for _, name := range names {
		index := map[key]int{}
		for _, s := range readSeed(tb, filepath.Base(name)) {
			k, side := key{s.src, s.dst}, 0
			i, ok := index[k]
			if !ok {
				if i, ok = index[key{s.dst, s.src}]; ok {
					side = 1
				}
			}
			if !ok {
				i = len(out)
				index[k] = i
				out = append(out, [2][]byte{})
			}
			out[i][side] = append(out[i][side], s.payload...)
		}
	}
	return out
}

// splitFrames splits a stream into its frames (the bytes after each size
// field), up to the first that is cut short.
func splitFrames(stream []byte) [][]byte {
	var out [][]byte
	for len(stream) >= 4 {
		n := int(binary.BigEndian.Uint32(stream))
		if n < 0 || n > len(stream)-4 {
			break
		}
		out = append(out, stream[4:4+n])
		stream = stream[4+n:]
	}
	return out
}

// produceBodies returns the body of every ProduceRequest of a connection
// with the body of its response (nil when none), and their version.
func produceBodies(fromClient, fromBroker []byte) (versions []int16, reqs, resps [][]byte) {
	d := New(nil, Options{})
	answers := map[int32][]byte{}
	for _, fr := range splitFrames(fromBroker) {
		if len(fr) >= 4 {
			answers[int32(binary.BigEndian.Uint32(fr))] = fr[4:]
		}
	}
	for _, fr := range splitFrames(fromClient) {
		h, err := d.parseRequestHeader(fr, true)
		if err != nil || h.key != keyProduce {
			continue
		}
		resp := answers[h.corr]
		if h.flexible && len(resp) > 0 {
			resp = resp[1:] // empty response header tags
		}
		versions, reqs, resps = append(versions, h.version), append(reqs, fr[h.size:]), append(resps, resp)
	}
	return versions, reqs, resps
}

// produceBody is the body of r, as a frame holds it after the header.
func produceBody(r *kmsg.ProduceRequest) []byte {
	_, reqs, _ := produceBodies(requestFrame(r, 1, "c"), nil)
	return reqs[0]
}

// legacyWrapper is a magic 1 message whose value is inner, with codec in
// its attributes and its CRC right.
func legacyWrapper(codec int8, inner []byte) []byte {
	body := []byte{0, 0, 0, 0, 1, byte(codec)}
	body = kbin.AppendInt64(body, 1700000000000)
	body = kbin.AppendNullableBytes(body, nil)
	body = kbin.AppendNullableBytes(body, inner)
	binary.BigEndian.PutUint32(body, crc32.ChecksumIEEE(body[4:]))
	out := kbin.AppendInt64(nil, 0)
	out = kbin.AppendInt32(out, int32(len(body)))
	return append(out, body...)
}

// headerRecords returns n records of a records section, each with 16
// headers of two bytes (empty key, null value) and no key or value: as
// many headers as a Record keeps, for the fewest bytes.
func headerRecords(n int) []byte {
	var out []byte
	for i := range n {
		rec := []byte{0, 0, byte(2 * i), 1, 1} // attributes, timestamp and offset deltas, null key and value
		rec = binary.AppendVarint(rec, MaxRecordHeaders)
		for range MaxRecordHeaders {
			rec = append(rec, 0, 1)
		}
		out = binary.AppendVarint(out, int64(len(rec)))
		out = append(out, rec...)
	}
	return out
}

// lz4Frame compresses src as an LZ4 frame of the given block size.
func lz4Frame(tb testing.TB, src []byte, opts ...lz4.Option) []byte {
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	if err := w.Apply(opts...); err != nil {
		tb.Fatal(err)
	}
	w.Write(src)
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// zstdWindow compresses src as a zstd frame declaring a window of w bytes.
func zstdWindow(tb testing.TB, src []byte, w int) []byte {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(w))
	if err != nil {
		tb.Fatal(err)
	}
	defer e.Close()
	return e.EncodeAll(src, nil)
}

// countedProduce is a ProduceRequest body of version v (3 or 9) naming one
// topic of n partitions, each the least a partition can be (null records):
// a partitions count as large as the bytes left can hold.
func countedProduce(v int16, n int) []byte {
	var b []byte
	if v >= 9 {
		b = append(b, 0, 0, 1, 0, 0, 0x75, 0x30, 2) // null transactional id, acks, timeout, one topic
		b = kbin.AppendCompactString(b, "t")
		b = binary.AppendUvarint(b, uint64(n)+1)
		for range n {
			b = append(b, 0, 0, 0, 0, 0, 0) // partition, null records, tags
		}
		return append(b, 0, 0) // topic and request tags
	}
	b = append(b, 0xff, 0xff, 0, 1, 0, 0, 0x75, 0x30)
	b = kbin.AppendInt32(b, 1)
	b = kbin.AppendString(b, "t")
	b = kbin.AppendInt32(b, int32(n))
	for range n {
		b = append(b, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff)
	}
	return b
}

// countedFetch is a FetchResponse body of version v naming one topic of n
// partitions, each holding records (null when nil): with null records, a
// partitions count as large as the bytes left can hold.
func countedFetch(v int16, n int, records []byte) []byte {
	flexible := v >= 12
	var b []byte
	count := func(n int) {
		if flexible {
			b = binary.AppendUvarint(b, uint64(n+1))
		} else {
			b = kbin.AppendInt32(b, int32(n))
		}
	}
	if v >= 1 {
		b = append(b, 0, 0, 0, 0) // throttle_time_ms
	}
	if v >= 7 {
		b = append(b, 0, 0, 0, 0, 0, 0) // error_code, session_id
	}
	count(1)
	switch {
	case v >= 13:
		b = append(b, make([]byte, 16)...)
	case flexible:
		b = kbin.AppendCompactString(b, "t")
	default:
		b = kbin.AppendString(b, "t")
	}
	count(n)
	for range n {
		b = append(b, make([]byte, 14)...) // partition, error_code, high_watermark
		if v >= 4 {
			b = append(b, make([]byte, 8)...) // last_stable_offset
			if v >= 5 {
				b = append(b, make([]byte, 8)...) // log_start_offset
			}
			count(0) // aborted_transactions
		}
		if v >= 11 {
			b = append(b, 0, 0, 0, 0) // preferred_read_replica
		}
		switch {
		case flexible && records == nil:
			b = append(b, 0, 0) // null records, tags
		case flexible:
			b = kbin.AppendCompactBytes(b, records)
			b = append(b, 0)
		default:
			b = kbin.AppendNullableBytes(b, records)
		}
	}
	if flexible {
		b = append(b, 0, 0) // topic and response tags
	}
	return b
}

// emptyBatches returns n RecordBatches of no records, as a broker serves
// them: the smallest batches there are.
func emptyBatches(n int) []byte {
	return bytes.Repeat(fetchBatch(0, -1, -1, 0, ""), n)
}

// FuzzFrameAlloc feeds arbitrary bytes to a connection, the client's then
// the broker's, each cut in two at a fuzzer-chosen point: decoding them
// allocates within the bound above, on a port-decided or a sniffed
// connection.
func FuzzFrameAlloc(f *testing.F) {
	for _, c := range captureConns(f) {
		f.Add(c[0], c[1], uint16(100), false)
		f.Add(c[0], c[1], uint16(7), true)
	}
	for v := int16(0); v <= 13; v++ {
		c, b := streams(versionScript(v, 5))
		f.Add(c, b, uint16(v*11), v%2 == 0)
	}
	txn := "tx"
	freq := kmsg.NewPtrFetchRequest()
	freq.Version = 11
	ipreq := kmsg.NewPtrInitProducerIDRequest()
	ipreq.Version, ipreq.TransactionalID = 4, &txn
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 12
	c, b := streams([]msg{
		{fromClient: true, frame: requestFrame(freq, 1, "replica")},
		{frame: respFrame(1, true, fetchBody(11))},
		{fromClient: true, frame: requestFrame(ipreq, 2, "p")},
		{fromClient: true, frame: requestFrame(meta, 3, "p")},
		{frame: responseFrame(metadataResponse("alpha", "beta"), 3)},
		handshake(1, 4, "PLAIN"), handshakeAnswer(1, 4, 0),
		authenticate(2, 5, "\x00user\x00secret"), authenticateAnswer(2, 5, 0, "", 0),
		saslProduce(6), saslAnswer(6),
	})
	f.Add(c, b, uint16(40), false)
	// Compressed batches, read and printed.
	plain := testRecords(4)
	var batches []byte
	for codec := int16(0); codec <= 4; codec++ {
		batches = append(batches, compressedBatch(codec, 4, compressed(f, codec, plain))...)
	}
	f.Add(requestFrame(produceRequest(9, 1, part{"t", 0, batches}), 1, "c"), []byte(nil), uint16(0), false)
	// Frame sizes a decoder must not allocate, and counts near the bytes
	// left.
	f.Add(sizeFrame(math.MaxInt32, 0, 0, 0, 9), sizeFrame(-1, 0, 0, 0, 1), uint16(2), false)
	f.Add(sizeFrame(DefaultMaxFrameBytes, 0, 0, 0, 9, 0, 0, 0, 1), []byte(nil), uint16(100), true)
	f.Add(produceFrame(9, countedProduce(9, 40)), []byte(nil), uint16(3), false)
	f.Add(requestFrame(freq, 1, "c"), respFrame(1, true, countedFetch(11, 24, nil)), uint16(30), false)
	f.Add(requestFrame(freq, 1, "c"), respFrame(1, true, countedFetch(11, 1, emptyBatches(8))), uint16(30), false)
	// A sniffed Metadata v0 request of 300 empty topic names.
	mb := append([]byte{0, 3, 0, 0, 0, 0, 0, 1, 0, 1, 'c'}, kbin.AppendInt32(nil, 300)...)
	f.Add(append(kbin.AppendInt32(nil, int32(len(mb)+600)), append(mb, make([]byte, 600)...)...), []byte(nil), uint16(0), true)
	f.Fuzz(func(t *testing.T, fromClient, fromBroker []byte, cut uint16, sniff bool) {
		opts := allocOptions()
		if sniff {
			opts.Sniff, opts.Ports = true, []uint16{1}
		}
		d := New(allocSink{}, opts)
		split := cutAt(int(cut))
		checkAlloc(t, d, len(fromClient)+len(fromBroker), func() {
			c := d.NewStream(client, broker, t0)
			for _, side := range []struct {
				fromClient bool
				b          []byte
			}{{true, fromClient}, {false, fromBroker}} {
				for _, p := range split(side.b) {
					if !c.Data(side.fromClient, p, t0) {
						break
					}
				}
			}
			c.Close(t0)
		})
		if n := d.BufferedFrameBytes(); n != 0 {
			t.Fatalf("%d bytes of partial frames held after the close", n)
		}
	})
}

// respFrame frames body as the response of correlation ID corr, with the
// empty tagged fields of a flexible response header.
func respFrame(corr int32, flexible bool, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(make([]byte, 4), uint32(corr))
	if flexible {
		b = append(b, 0)
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// FuzzProduceAlloc takes bytes as the body of a ProduceRequest of a
// fuzzer-chosen version and of its response, delivered on one connection:
// parsing both allocates within the bound above.
func FuzzProduceAlloc(f *testing.F) {
	for v := int16(0); v <= 13; v++ {
		c, b := streams(versionScript(v, 1))
		vs, reqs, resps := produceBodies(c, b)
		f.Add(uint8(vs[0]), reqs[0], resps[0])
	}
	for _, c := range captureConns(f) {
		vs, reqs, resps := produceBodies(c[0], c[1])
		for i := range vs {
			f.Add(uint8(vs[i]), reqs[i], resps[i])
		}
	}
	// Counts near the bytes left, negative, and beyond.
	for _, v := range []int16{3, 9} {
		f.Add(uint8(v), countedProduce(v, 48), []byte(nil))
	}
	f.Add(uint8(9), []byte{0, 0, 1, 0, 0, 0x75, 0x30, 0xff, 0xff, 0xff, 0xff, 0x0f}, []byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add(uint8(3), []byte{0xff, 0xff, 0, 1, 0, 0, 0x75, 0x30, 0xff, 0xff, 0xff, 0xfe}, []byte{0x7f, 0xff, 0xff, 0xff})
	resp := binary.AppendUvarint(nil, 2)
	resp = kbin.AppendCompactString(resp, "t")
	resp = binary.AppendUvarint(resp, 33)
	for range 32 {
		resp = append(resp, make([]byte, 30)...) // partition, error code, offsets
		resp = append(resp, 1, 0, 0)             // no record errors, null message, tags
	}
	resp = append(resp, 0, 0, 0, 0, 0, 0)
	f.Add(uint8(9), produceBody(produceRequest(9, 1, part{"t", 0, recordBatch(-1, -1, -1, 1, "r")})), resp)
	// The first response of a connection, probed before it is decoded:
	// 200 topics claimed in 400 bytes.
	f.Add(uint8(9), produceBody(produceRequest(9, 1, part{"t", 0, recordBatch(-1, -1, -1, 1, "r")})),
		append(binary.AppendUvarint(nil, 201), make([]byte, 400)...))
	many := append(legacySet(1, 0, 2, "x"), recordBatch(-1, -1, -1, 0, "")...)
	many = append(many, legacySet(0, 0, 1, "y")...)
	many = append(many, recordBatch(-1, -1, -1, 0, "")...)
	f.Add(uint8(9), produceBody(produceRequest(9, 1, part{"t", 0, many})), []byte(nil))
	f.Fuzz(func(t *testing.T, version uint8, request, response []byte) {
		v := int16(version % 14)
		fromClient := produceFrame(v, request)
		fromBroker := respFrame(1, v >= 9, response)
		d := New(allocSink{}, allocOptions())
		checkAlloc(t, d, len(request)+len(response), func() {
			c := d.NewStream(client, broker, t0)
			c.Data(true, fromClient, t0)
			c.Data(false, fromBroker, t0)
			c.Close(t0)
		})
	})
}

// FuzzFetchAlloc walks arbitrary FetchResponse bodies of every version:
// the walk allocates within the bound above.
func FuzzFetchAlloc(f *testing.F) {
	for v := int16(0); v <= 18; v++ {
		f.Add(uint8(v), fetchBody(v))
	}
	for _, v := range []int16{0, 4, 12, 13} {
		f.Add(uint8(v), countedFetch(v, 100, nil))
		f.Add(uint8(v), countedFetch(v, 1, emptyBatches(8)))
	}
	f.Add(uint8(1), []byte{0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff})
	f.Add(uint8(1), []byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Add(uint8(12), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, version uint8, body []byte) {
		v := int16(version % 19)
		d := New(nil, allocOptions())
		checkAlloc(t, d, len(body), func() {
			d.parseFetchResponse(&Fetch{Version: v}, body)
		})
	})
}

// Ways FuzzRecordsAlloc hands its bytes to the record decoder.
const (
	asBatchSection = iota // the records section of a RecordBatch of the codec
	asLegacyValue         // the value of a magic 1 wrapper message of the codec
	asRecords             // a partition's records: batches and message sets
	recordModes
)

// FuzzRecordsAlloc decodes arbitrary bytes as a compressed (or plain)
// records section, legacy wrapper value or partition's records, reading
// records and printing every batch: that allocates within the bound above,
// decompression included, never beyond the cap per batch.
func FuzzRecordsAlloc(f *testing.F) {
	plain := testRecords(4)
	zeros := make([]byte, 1<<20)
	for codec := int16(0); codec <= 4; codec++ {
		f.Add(uint8(asBatchSection), uint8(codec), compressed(f, codec, plain))
		f.Add(uint8(asBatchSection), uint8(codec), compressed(f, codec, headerRecords(3)))
		if codec != 2 && codec != 0 { // a raw snappy block of 1 MiB is 48 KiB: snappyZeros below
			f.Add(uint8(asBatchSection), uint8(codec), compressed(f, codec, zeros))
			f.Add(uint8(asLegacyValue), uint8(codec), compressed(f, codec, legacySet(1, 0, 3, "v")))
		}
	}
	f.Add(uint8(asBatchSection), uint8(2), xerialFrame(plain, 16))
	f.Add(uint8(asBatchSection), uint8(2), snappyZeros(1))
	f.Add(uint8(asBatchSection), uint8(2), xerialZeros(1))
	f.Add(uint8(asLegacyValue), uint8(2), xerialFrame(legacySet(0, 0, 3, "v"), 32))
	f.Add(uint8(asBatchSection), uint8(3), lz4Frame(f, plain, lz4.BlockSizeOption(lz4.Block64Kb)))
	f.Add(uint8(asBatchSection), uint8(4), zstdWindow(f, zeros, maxZstdWindow))
	// A wrapper within a wrapper: decoded once, never recursively.
	inner := legacyWrapper(1, compressed(f, 1, legacySet(1, 0, 2, "deep")))
	f.Add(uint8(asLegacyValue), uint8(1), compressed(f, 1, inner))
	f.Add(uint8(asRecords), uint8(0), legacyWrapper(1, compressed(f, 1, append(inner, legacySet(1, 0, 1, "x")...))))
	// Many small batches and message sets in one partition.
	var many []byte
	for i := range 4 {
		many = append(many, compressedBatch(int16(i%5), 3, compressed(f, int16(i%5), headerRecords(3)))...)
		many = append(many, legacySet(int8(i%2), 0, 1, "")...)
	}
	f.Add(uint8(asRecords), uint8(0), many)
	f.Add(uint8(asRecords), uint8(0), bytes.Repeat(compressedBatch(0, 3, headerRecords(3)), 2))
	// Negative counts and lengths: records count -1, record length -1,
	// headers count -1.
	f.Add(uint8(asBatchSection), uint8(0), []byte{1, 0, 0, 0, 1, 1, 1})
	f.Add(uint8(asBatchSection), uint8(0), []byte{8, 0, 0, 0, 1, 1, 1})
	f.Fuzz(func(t *testing.T, mode, codec uint8, section []byte) {
		var raw []byte
		switch mode % recordModes {
		case asBatchSection:
			raw = compressedBatch(int16(codec%8), 1000, section)
		case asLegacyValue:
			raw = legacyWrapper(int8(codec%8), section)
		default:
			raw = section
		}
		d := New(nil, allocOptions())
		checkAlloc(t, d, len(raw), func() {
			bs, _ := d.appendBatches(nil, raw, "t", [16]byte{}, 0)
			for i := range bs {
				bs[i].RecordPrints()
			}
			d.releaseRaw(&Exchange{Batches: bs})
		})
	})
}
