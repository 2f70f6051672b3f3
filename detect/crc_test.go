package detect_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"net/netip"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crcBatch is a RecordBatch of a producer that is not idempotent whose
// records are records; its CRC-32C is set right.
func crcBatch(records []byte) []byte {
	b := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: 0, FirstTimestamp: 1700000000000, MaxTimestamp: 1700000000000,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: records}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], castagnoli))
	return raw
}

// forgeAt rewrites the 4 bytes of raw at off (off >= 21) so that the CRC-32C
// of raw[21:] becomes target, the way an attacker forges a CRC: a CRC is
// linear, so the register after off+4 can be steered to any value. The
// reflected CRC-32C register r takes 4 bytes x as r = g(r ^ le32(x)), where
// g shifts 32 zero bits through; g is inverted bit by bit.
func forgeAt(raw []byte, off int, target uint32) {
	const poly = 0x82f63b78 // CRC-32C, reflected
	// want is the register the bytes after off+4 must start from to end at
	// target: undo them from the end.
	tail := raw[off+4:]
	want := ^target
	for i := len(tail) - 1; i >= 0; i-- {
		for range 8 {
			if want&0x80000000 != 0 {
				want = (want^poly)<<1 | 1
			} else {
				want <<= 1
			}
		}
		want ^= uint32(tail[i])
	}
	// Undo g on want, then cancel the register before off.
	for range 32 {
		if want&0x80000000 != 0 {
			want = (want^poly)<<1 | 1
		} else {
			want <<= 1
		}
	}
	before := ^crc32.Checksum(raw[21:off], castagnoli)
	binary.LittleEndian.PutUint32(raw[off:], want^before)
	binary.BigEndian.PutUint32(raw[17:], target)
}

// runCRC decodes two attempts of one batch: the first with the bytes of
// first, answered REQUEST_TIMED_OUT after the append; the second with those
// of second, answered with no error. It returns the findings and decode's
// counts.
func runCRC(t *testing.T, first, second []byte) ([]detect.Finding, decode.Stats) {
	t.Helper()
	det := detect.New(detect.Options{})
	d := decode.New(det, decode.Options{})
	c := d.NewStream(netip.MustParseAddrPort("10.0.0.1:55000"), netip.MustParseAddrPort("10.0.0.4:9092"), time.Unix(1700000000, 0))
	at := time.Unix(1700000000, 0)
	for i, raw := range [][]byte{first, second} {
		corr := int32(10 + i)
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 9, -1, 5000
		req.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: raw}}}}
		c.Data(true, kmsg.NewRequestFormatter(kmsg.FormatterClientID("c")).AppendRequest(nil, req, corr), at)
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 9
		p := kmsg.NewProduceResponseTopicPartition()
		p.BaseOffset = 112
		if i == 0 {
			p.ErrorCode = 7 // REQUEST_TIMED_OUT, after the leader appended it
		} else {
			p.BaseOffset = 113
		}
		resp.Topics = []kmsg.ProduceResponseTopic{{Topic: "t", Partitions: []kmsg.ProduceResponseTopicPartition{p}}}
		frame := append([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0}, resp.AppendTo(nil)...)
		binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
		binary.BigEndian.PutUint32(frame[4:], uint32(corr))
		at = at.Add(time.Second)
		c.Data(false, frame, at)
		at = at.Add(100 * time.Millisecond)
	}
	d.EndOfInput()
	c.Close(at)
	return det.Flush(), d.Stats()
}

// TestCRCFingerprint: two attempts match only when every byte under the
// CRC is the same and the CRC is right. Forged or wrong CRCs, on batches
// of one length, header and ends of records (all an O(1) fingerprint
// would look at), never make a finding.
func TestCRCFingerprint(t *testing.T) {
	records := func(middle byte) []byte {
		r := bytes.Repeat([]byte("e"), 200)
		for i := 40; i < 160; i++ {
			r[i] = middle
		}
		return r
	}
	a := crcBatch(records('a'))

	// The same bytes twice: the finding the cases below must not make.
	fs, st := runCRC(t, a, bytes.Clone(a))
	if len(fs) != 1 || fs[0].Verdict != detect.Duplicated || st.CorruptBatches != 0 {
		t.Fatalf("same bytes: %d findings %+v, %d corrupt; want one duplicated, none corrupt", len(fs), fs, st.CorruptBatches)
	}

	// Other bytes in the middle, 4 of them chosen so that the CRC-32C is
	// a's: valid, equal CRCs.
	forged := crcBatch(records('b'))
	forgeAt(forged, 61+100, binary.BigEndian.Uint32(a[17:]))
	if crc32.Checksum(forged[21:], castagnoli) != binary.BigEndian.Uint32(a[17:]) || bytes.Equal(forged, a) {
		t.Fatal("forging the CRC failed")
	}
	if fs, st := runCRC(t, a, forged); len(fs) != 0 || st.CorruptBatches != 0 {
		t.Errorf("forged equal CRC: %d findings %+v, %d corrupt; want none", len(fs), fs, st.CorruptBatches)
	}

	// Two batches of other bytes that carry the same wrong CRC: corrupt,
	// counted, never matched; nor is one corrupt batch sent twice.
	bad1, bad2 := crcBatch(records('c')), crcBatch(records('d'))
	copy(bad1[17:21], a[17:21])
	copy(bad2[17:21], a[17:21])
	if fs, st := runCRC(t, bad1, bad2); len(fs) != 0 || st.CorruptBatches != 2 || st.Batches != 2 {
		t.Errorf("same wrong CRC: %d findings %+v, %d of %d batches corrupt; want none, 2 of 2", len(fs), fs, st.CorruptBatches, st.Batches)
	}
	if fs, st := runCRC(t, bad1, bytes.Clone(bad1)); len(fs) != 0 || st.CorruptBatches != 2 {
		t.Errorf("one corrupt batch twice: %d findings, %d corrupt; want none, 2", len(fs), st.CorruptBatches)
	}
}
