package decode

import (
	"encoding/binary"
	"hash/crc32"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/zeebo/xxh3"
)

func TestBatches(t *testing.T) {
	v2 := recordBatch(42, 3, 100, 5, "records")
	v2Offset := append([]byte(nil), v2...)
	binary.BigEndian.PutUint64(v2Offset, 9999) // brokers and clients may set baseOffset
	v2Other := recordBatch(42, 3, 100, 5, "recordz")
	legacy0 := legacySet(0, 0, 3, "m")
	legacy0Offset := legacySet(0, 500, 3, "m")
	legacy1 := legacySet(1, 0, 2, "m")
	badMagic := append([]byte(nil), v2...)
	badMagic[16] = 7
	badLength := append([]byte(nil), v2...)
	binary.BigEndian.PutUint32(badLength[8:], 10)

	tests := []struct {
		name    string
		records []byte
		magics  []int8
		counts  []int32
		err     string
	}{
		{"empty", nil, nil, nil, ""},
		{"one record batch", v2, []int8{2}, []int32{5}, ""},
		{"two record batches", append(append([]byte(nil), v2...), v2Other...), []int8{2, 2}, []int32{5, 5}, ""},
		{"legacy v0 set", legacy0, []int8{0}, []int32{3}, ""},
		{"legacy v1 set", legacy1, []int8{1}, []int32{2}, ""},
		{"legacy then record batch", append(append([]byte(nil), legacy1...), v2...), []int8{1, 2}, []int32{2, 5}, ""},
		{"unknown magic", badMagic, nil, nil, "record batch magic 7 at records byte 0"},
		{"bad length", badLength, nil, nil, "record batch length 10"},
		{"partial trailing batch", append(append([]byte(nil), v2...), recordBatch(1, 0, 0, 1, strings.Repeat("x", 100))[:70]...), []int8{2}, []int32{5}, "partial record batch: 70 of"},
		{"partial legacy message", legacy0[:len(legacy0)-1], nil, nil, "partial legacy message"},
	}
	d := New(nil, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := d.appendBatches(nil, tt.records, "t", [16]byte{}, 2)
			if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("error %v, want %q", err, tt.err)
			}
			if len(got) != len(tt.magics) {
				t.Fatalf("got %d batches, want %d", len(got), len(tt.magics))
			}
			total := 0
			for i, b := range got {
				if b.Magic != tt.magics[i] || b.NumRecords != tt.counts[i] || b.Topic != "t" || b.Partition != 2 {
					t.Errorf("batch %d: %+v", i, b)
				}
				total += b.Length
			}
			if err == nil && total != len(tt.records) {
				t.Errorf("lengths add to %d, want %d", total, len(tt.records))
			}
		})
	}

	hash := func(records []byte) uint64 {
		bs, err := d.appendBatches(nil, records, "t", [16]byte{}, 0)
		if err != nil || len(bs) != 1 {
			t.Fatalf("%d batches, %v", len(bs), err)
		}
		return bs[0].Hash
	}
	if hash(v2) != hash(v2Offset) {
		t.Error("record batch hash depends on baseOffset")
	}
	if hash(v2) == hash(v2Other) {
		t.Error("different records, same hash")
	}
	if hash(legacy0) != hash(legacy0Offset) {
		t.Error("legacy hash depends on offsets")
	}
	if hash(legacy0) == hash(legacySet(0, 0, 3, "n")) {
		t.Error("different legacy messages, same hash")
	}
	b, err := d.appendBatches(nil, v2, "", [16]byte{}, 0)
	if err != nil || len(b) != 1 {
		t.Fatalf("%d batches, %v", len(b), err)
	}
	// The header fields as recordBatch wrote them, and the fingerprint as
	// batch.go defines it: XXH3-64 of every byte the CRC covers
	// (attributes to the end).
	crc := crc32.Checksum(v2[21:], crc32.MakeTable(crc32.Castagnoli))
	fp := v2[21:]
	w := Batch{Magic: 2, CRC: crc, LastOffsetDelta: 4, FirstTimestamp: 1700000000000,
		MaxTimestamp: 1700000000005, ProducerID: 42, ProducerEpoch: 3, FirstSequence: 100, NumRecords: 5,
		Length: 61 + len("records"), Hash: xxh3.Hash(fp)}
	if !reflect.DeepEqual(b[0], w) {
		t.Errorf("header fields\n got %+v\nwant %+v", b[0], w)
	}
	// A legacy set's fingerprint hashes every message from its CRC on:
	// magic 1, a message is offset 8, size 4, then CRC 4, magic, attributes,
	// timestamp 8, key length 4 (null) and value length 4 and the value.
	msgLen := 12 + 4 + 1 + 1 + 8 + 4 + 4 + len("m")
	if len(legacy1) != 2*msgLen {
		t.Fatalf("legacy set of %d bytes, want 2 messages of %d", len(legacy1), msgLen)
	}
	lb, err := d.appendBatches(nil, legacy1, "", [16]byte{}, 0)
	if err != nil || len(lb) != 1 {
		t.Fatalf("legacy: %d batches, %v", len(lb), err)
	}
	wl := Batch{Magic: 1, CRC: binary.BigEndian.Uint32(legacy1[12:]), LastOffsetDelta: 1, FirstTimestamp: 1700000000000,
		MaxTimestamp: 1700000000001, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 2, Length: 2 * msgLen,
		Hash: xxhash.Sum64(slices.Concat(legacy1[12:msgLen], legacy1[msgLen+12:]))}
	if !reflect.DeepEqual(lb[0], wl) {
		t.Errorf("legacy header fields\n got %+v\nwant %+v", lb[0], wl)
	}

	// Every truncation walks without panic, keeps exactly the whole batches
	// before the cut and says why it stopped. A legacy set is one batch: a
	// cut inside it, or within the 17 bytes after it (too few to tell a
	// RecordBatch from one more legacy message), loses the set.
	all := slices.Concat(legacy1, v2, v2Other)
	l1, l2 := len(legacy1), len(legacy1)+len(v2)
	for n := range len(all) + 1 {
		var want []int // lengths of the batches kept
		switch {
		case n == msgLen:
			want = []int{msgLen} // one whole legacy message: a set of one
		case n == l1 || (n >= l1+17 && n < l2):
			want = []int{l1}
		case n >= l2 && n < len(all):
			want = []int{l1, len(v2)}
		case n == len(all):
			want = []int{l1, len(v2), len(v2Other)}
		}
		whole := n == 0 || n == msgLen || n == l1 || n == l2 || n == len(all)
		bs, err := d.appendBatches(nil, all[:n], "t", [16]byte{}, 0)
		if (err == nil) != whole {
			t.Errorf("cut at %d: error %v, want one: %v", n, err, !whole)
		}
		var got []int
		for _, b := range bs {
			got = append(got, b.Length)
		}
		if !slices.Equal(got, want) {
			t.Errorf("cut at %d: batches of %v bytes, want %v (%v)", n, got, want, err)
		}
	}
}
