package decode

import (
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
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
	b, _ := d.appendBatches(nil, v2, "", [16]byte{}, 0)
	w := Batch{Magic: 2, CRC: binary.BigEndian.Uint32(v2[17:]), LastOffsetDelta: 4, FirstTimestamp: 1700000000000,
		MaxTimestamp: 1700000000005, ProducerID: 42, ProducerEpoch: 3, FirstSequence: 100, NumRecords: 5, Length: len(v2), Hash: b[0].Hash}
	if !reflect.DeepEqual(b[0], w) {
		t.Errorf("header fields\n got %+v\nwant %+v", b[0], w)
	}
	// Every truncation walks without panic and keeps only whole batches.
	all := append(append(append([]byte(nil), legacy1...), v2...), v2Other...)
	for n := range len(all) {
		bs, _ := d.appendBatches(nil, all[:n], "t", [16]byte{}, 0)
		for _, b := range bs {
			if b.Length <= 0 {
				t.Fatalf("cut at %d: batch %+v", n, b)
			}
		}
	}
}
