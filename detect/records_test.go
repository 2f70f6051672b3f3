package detect

import (
	"reflect"
	"testing"

	"github.com/kdupcap/kdupcap/decode"
)

func TestFindingRecords(t *testing.T) {
	recs := []decode.Record{
		{OffsetDelta: 0, TimestampMillis: 1700000000000, Key: []byte("k"), KeyLen: 1, Value: []byte("v0"), ValueLen: 2,
			Headers: []decode.RecordHeader{{Key: "h", Value: []byte{1}, ValueLen: 1}}},
		{OffsetDelta: 1, TimestampMillis: 1700000000001, KeyLen: -1, Value: []byte("v1"), ValueLen: 2},
	}
	withRecords := plain(0x1234)
	withRecords.Records = recs
	tests := []struct {
		name    string
		resends []*decode.Exchange
		offset0 int64 // the first record's Offset
	}{
		// Answered once at 500 after a timeout: one copy, offsets known.
		{"one appended offset", []*decode.Exchange{ex(conn1, 1, 0, noAnswer, 0, 0, withRecords),
			ex(conn1, 2, 5000, 5001, 0, 500, plain(0x1234))}, 500},
		// Appended twice: each copy has its own offsets, so none is shown.
		{"two appended offsets", []*decode.Exchange{ex(conn1, 1, 0, 6000, 0, 500, withRecords),
			ex(conn1, 2, 5000, 5001, 0, 510, plain(0x1234))}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(Options{})
			for _, x := range tt.resends {
				d.Produce(x)
			}
			got := d.Flush()
			if len(got) != 1 {
				t.Fatalf("got %d findings", len(got))
			}
			want := []Record{
				{Offset: tt.offset0, OffsetDelta: 0, TimestampMillis: 1700000000000, Key: []byte("k"), KeyLen: 1, Value: []byte("v0"), ValueLen: 2,
					Headers: []RecordHeader{{Key: "h", Value: []byte{1}, ValueLen: 1}}, Known: true},
				{Offset: -1, OffsetDelta: 1, TimestampMillis: 1700000000001, KeyLen: -1, Value: []byte("v1"), ValueLen: 2, Known: true},
			}
			if tt.offset0 >= 0 {
				want[1].Offset = tt.offset0 + 1
			}
			if !reflect.DeepEqual(got[0].Records, want) {
				t.Errorf("records\n got %+v\nwant %+v", got[0].Records, want)
			}
		})
	}
}

func TestFindingNoRecords(t *testing.T) {
	d := New(Options{})
	d.Produce(ex(conn1, 1, 0, noAnswer, 0, 0, plain(1)))
	d.Produce(ex(conn1, 2, 5000, 5001, 0, 500, plain(1)))
	got := d.Flush()
	if len(got) != 1 || got[0].Records != nil {
		t.Fatalf("findings %+v", got)
	}
}
