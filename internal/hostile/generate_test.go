package hostile

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The generator's own tests: its bytes are what they claim to be. The
// child-process tests of kdupcap are in hostile_test.go.

func TestForgeCRC(t *testing.T) {
	for _, size := range []int{64, 1000, 5000} {
		g := newGen(io.Discard, ethernet, &Truth{Kind: ForgedCRC})
		a, at := g.oneRecordBatch(size, 7)
		b := append([]byte(nil), a...)
		b[at+size/4] ^= 0xff
		want := binary.BigEndian.Uint32(a[17:])
		if err := forgeCRC(b, crcFrom, at+size/2, want); err != nil {
			t.Fatalf("value %d bytes: %v", size, err)
		}
		if bytes.Equal(a, b) {
			t.Fatalf("value %d bytes: forged batch equals the original", size)
		}
		if got := crc32.Checksum(b[crcFrom:], castagnoli); got != want {
			t.Fatalf("value %d bytes: crc %#x, want %#x", size, got, want)
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatalf("value %d bytes: forged batch does not parse: %v", size, err)
		}
	}
}

// TestProduceFrameSplice: a request streamed around its records is the
// request kmsg encodes with them in memory, for every version written.
func TestProduceFrameSplice(t *testing.T) {
	name := "splice"
	records := bytes.Repeat([]byte("0123456789abcdef"), 1000)
	for v := int16(2); v <= 9; v++ {
		h := produceHead{version: v, clientID: &name, corr: 42, acks: -1, timeoutMs: 1000, topic: "t", partition: 3}
		want := produceBytes(nil, h, records)
		src, err := produceFrame(h, &bytesSrc{b: records})
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if got := readAll(src); !bytes.Equal(got, want) {
			t.Fatalf("v%d: spliced frame differs from kmsg's (%d vs %d bytes)", v, len(got), len(want))
		}
		req := kmsg.NewPtrProduceRequest()
		req.Version = v
		// size 4, key 2, version 2, corr 4, client id 2+len; v9+ header tags 1.
		body := want[4+2+2+4+2+len(name):]
		if v >= 9 {
			body = body[1:]
		}
		if err := req.ReadFrom(body); err != nil {
			t.Fatalf("v%d: kmsg cannot read the frame back: %v", v, err)
		}
		if got := req.Topics[0].Partitions[0].Records; !bytes.Equal(got, records) {
			t.Fatalf("v%d: records read back differ", v)
		}
	}
}

// TestValidV7: the hand encoder of BadCounts writes kmsg's bytes when its
// fields are valid.
func TestValidV7(t *testing.T) {
	name := "bad-counts"
	batch := []byte("not a batch, only bytes")
	h := produceHead{version: 7, clientID: &name, corr: 9, acks: -1, timeoutMs: 30000, topic: "t", partition: 5}
	if got, want := validV7(name, 9, "t", 5, batch), produceBytes(nil, h, batch); !bytes.Equal(got, want) {
		t.Fatalf("hand-encoded v7:\n% x\nkmsg:\n% x", got, want)
	}
}

func TestStreamedBatch(t *testing.T) {
	mk := countedRecords(5000, 100, 1<<40, []byte("pattern"))
	var g gen
	g.scratch = make([]byte, 1000)
	h := notIdempotent(5000, 1234)
	b := readAll(h.stream(mk, g.scratch))
	if int64(len(b)) != batchHeaderLen+recordsSize(5000, 100) {
		t.Fatalf("batch of %d bytes, want %d", len(b), batchHeaderLen+recordsSize(5000, 100))
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	if got := crc32.Checksum(b[crcFrom:], castagnoli); got != uint32(rb.CRC) {
		t.Fatalf("crc %#x, header says %#x", got, uint32(rb.CRC))
	}
	recs := rb.Records
	seen := map[string]bool{}
	for i := range 5000 {
		var r kmsg.Record
		n, k := binary.Varint(recs)
		if k <= 0 {
			t.Fatalf("record %d: bad length", i)
		}
		r.Length = int32(n)
		if err := r.ReadFrom(recs); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if r.OffsetDelta != int32(i) || len(r.Value) != 100 || seen[string(r.Value)] {
			t.Fatalf("record %d: delta %d, %d bytes, repeated %v", i, r.OffsetDelta, len(r.Value), seen[string(r.Value)])
		}
		seen[string(r.Value)] = true
		recs = recs[k+int(n):]
	}
	if len(recs) != 0 {
		t.Fatalf("%d bytes after the records", len(recs))
	}
}

func TestCodecs(t *testing.T) {
	for _, n := range []int64{1, 64, 65, 100_000, 1<<20 + 5} {
		raw := readAll(snappyZeros(n))
		out, err := snappy.Decode(nil, raw)
		if err != nil || int64(len(out)) != n || bytes.ContainsFunc(out, func(r rune) bool { return r != 0 }) {
			t.Fatalf("snappy of %d zeros: %d bytes, %v", n, len(out), err)
		}
		x := readAll(xerialZeros(n))
		var total int64
		for b := x[16:]; len(b) > 0; {
			k := binary.BigEndian.Uint32(b)
			out, err := snappy.Decode(nil, b[4:4+k])
			if err != nil {
				t.Fatalf("xerial of %d zeros: %v", n, err)
			}
			total += int64(len(out))
			b = b[4+k:]
		}
		if total != n {
			t.Fatalf("xerial of %d zeros expands to %d", n, total)
		}
		dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxWindow(1<<20), zstd.WithDecoderMaxMemory(1<<30))
		if err != nil {
			t.Fatal(err)
		}
		z, err := dec.DecodeAll(zstdZeros(nil, []byte("head"), n), nil)
		dec.Close()
		if err != nil || int64(len(z)) != n+4 || string(z[:4]) != "head" {
			t.Fatalf("zstd of %d zeros: %d bytes, %v", n, len(z), err)
		}
	}
	if n := len(zstdZeros(nil, nil, zstdRLEBytes)); n > 600 {
		t.Fatalf("16 MiB of zeros is %d bytes of zstd, want about 522", n)
	}
}

// tinyScale is the scale the generator's own tests write every kind at.
func tinyScale(k Kind) float64 {
	switch k {
	case HugeSnaplen:
		return 1.0 / 256 // 8 MiB
	case HugePacketKind, NgHugeBlock:
		return 1.0 / 32
	case GzipFileBomb, ZstdFileBomb:
		return 1.0 / 512
	case OpenFrames:
		return 0.001
	}
	return 0.01
}

// TestWriteDeterministic: every kind writes at a small scale, twice to the
// same bytes; the truth's byte count is the file's.
func TestWriteDeterministic(t *testing.T) {
	for _, k := range Kinds() {
		t.Run(k.String(), func(t *testing.T) {
			t.Parallel()
			var sums [2][32]byte
			for i := range sums {
				h := sha256.New()
				cw := &countWriter{w: h}
				truth, err := Write(cw, k, tinyScale(k))
				if err != nil {
					t.Fatal(err)
				}
				if truth.Bytes != cw.n {
					t.Fatalf("truth says %d bytes, %d written", truth.Bytes, cw.n)
				}
				copy(sums[i][:], h.Sum(nil))
			}
			if sums[0] != sums[1] {
				t.Fatal("two writes differ")
			}
		})
	}
}

// TestPacketsParse: every packet of every uncompressed kind is read by
// pcapgo and decodes as Ethernet (or SLL2)/IPv4/TCP with valid checksums
// where the packet fits IPv4; the count is the truth's.
func TestPacketsParse(t *testing.T) {
	for _, k := range Kinds() {
		if k == GzipFileBomb || k == ZstdFileBomb {
			continue
		}
		t.Run(k.String(), func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			truth, err := Write(&buf, k, tinyScale(k))
			if err != nil {
				t.Fatal(err)
			}
			type reader interface {
				ReadPacketData() ([]byte, gopacket.CaptureInfo, error)
			}
			var r reader
			var link layers.LinkType
			if k == NgHugeBlock {
				ng, err := pcapgo.NewNgReader(&buf, pcapgo.DefaultNgReaderOptions)
				if err != nil {
					t.Fatal(err)
				}
				r, link = ng, ng.LinkType()
			} else {
				p, err := pcapgo.NewReader(&buf)
				if err != nil {
					t.Fatal(err)
				}
				p.SetSnaplen(1 << 31)
				r, link = p, p.LinkType()
			}
			var n int64
			for {
				data, ci, err := r.ReadPacketData()
				if errors.Is(err, io.EOF) || (err != nil && truth.Truncated) {
					break
				}
				if err != nil {
					t.Fatalf("packet %d: %v", n+1, err)
				}
				n++
				if ci.CaptureLength != ci.Length || len(data) > 65535+20 {
					continue // cut by the snap length, or no IPv4 length can say it
				}
				pkt := gopacket.NewPacket(data, link, gopacket.Default)
				ip, _ := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
				tcp, _ := pkt.Layer(layers.LayerTypeTCP).(*layers.TCP)
				if ip == nil || tcp == nil {
					t.Fatalf("packet %d: no IPv4/TCP: %v", n, pkt)
				}
				if err := tcp.SetNetworkLayerForChecksum(ip); err != nil {
					t.Fatal(err)
				}
				// Summed over the segment with its checksum, a valid one gives 0.
				if got, err := tcp.ComputeChecksum(); err != nil || got != 0 {
					t.Fatalf("packet %d: tcp checksum %#x wrong (%#x, %v)", n, tcp.Checksum, got, err)
				}
				hdr := bytes.Clone(ip.Contents)
				binary.BigEndian.PutUint16(hdr[10:], 0)
				if got := ^fold(sum(0, hdr)); got != ip.Checksum {
					t.Fatalf("packet %d: ip checksum %#x, want %#x", n, ip.Checksum, got)
				}
			}
			if n != truth.Packets {
				t.Fatalf("%d packets read, truth says %d", n, truth.Packets)
			}
		})
	}
}
