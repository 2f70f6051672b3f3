package detect

import (
	"testing"

	"github.com/kdupcap/kdupcap/decode"
)

// FuzzRecordMatch feeds exchanges of batches that share records in every
// arrangement (5 bytes each: which records, which connection, what answer,
// when, how many in the batch) and checks that record-level findings are
// well formed: every record has two copies or more, each naming an attempt
// of the finding, at the offset its answer shows; and that Flush leaves
// nothing behind.
func FuzzRecordMatch(f *testing.F) {
	f.Add([]byte{0, 0, 1<<3 | 1, 0, 3, 0, 0, 5 << 3, 9, 3})
	f.Add([]byte{1, 0, 7, 0, 1, 1, 1, 2 << 3, 3, 4})
	f.Add([]byte{2, 0, 0, 0, 2, 2, 0, 0, 9, 2, 3, 2, 7, 12, 5})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, all := range []bool{false, true} {
			d := New(Options{AllRecords: all, MaxRecords: 16})
			for i := 0; i+5 <= len(data) && i < 5*64; i += 5 {
				which, connSel, answer, when, n := data[i], data[i+1], data[i+2], data[i+3], int(data[i+4]%6)+1
				hashes := make([]uint64, n)
				for k := range hashes {
					hashes[k] = uint64(which&7) + uint64(k) // overlapping record sets
				}
				b := recs(uint32(i), hashes...)
				c := conn1
				if connSel&1 == 1 {
					c = conn2
				}
				sent := float64(i)*10 + float64(when%8)
				codes := []int16{0, 7, 20, 6}
				var x *decode.Exchange
				if answer&7 == 7 {
					x = noResp(ex(c, int32(i), sent, noAnswer, 0, 0, b), decode.NoResponseClosed)
				} else {
					x = ex(c, int32(i), sent, sent+float64(answer>>4)*7, codes[answer&3], int64(answer>>3)-2, b)
				}
				d.Produce(x)
			}
			for _, f := range d.Flush() {
				if f.Kind == KindBatch {
					continue
				}
				if len(f.Records) == 0 || len(f.Records)+f.RecordsOmitted != int(f.NumRecords) {
					t.Fatalf("records %d + %d omitted, count %d", len(f.Records), f.RecordsOmitted, f.NumRecords)
				}
				for _, r := range f.Records {
					if len(r.Copies) < 2 {
						t.Fatalf("record with %d copies: %+v", len(r.Copies), f)
					}
					for _, cp := range r.Copies {
						if cp.Attempt < 0 || cp.Attempt >= len(f.Attempts) {
							t.Fatalf("copy of attempt %d of %d", cp.Attempt, len(f.Attempts))
						}
						resp := f.Attempts[cp.Attempt].Response
						if cp.Offset >= 0 && (resp == nil || cp.Offset != resp.BaseOffset+int64(cp.OffsetDelta)) {
							t.Fatalf("copy at %d, answer %+v delta %d", cp.Offset, resp, cp.OffsetDelta)
						}
					}
				}
			}
			if rs := d.recs; rs != nil && (len(rs.entries) != 0 || len(rs.freeC) != int(rs.carriers.n) || len(rs.freeD) != len(rs.dups)) {
				t.Fatalf("after Flush: %d prints, %d/%d carriers and %d/%d duplicates free",
					len(rs.entries), len(rs.freeC), rs.carriers.n, len(rs.freeD), len(rs.dups))
			}
		}
	})
}
