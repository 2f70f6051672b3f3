package html

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/report"
)

// storeT0 is the capture time of the generated findings.
var storeT0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// storeReport is one report of a finding to a Store: finding id (its
// Finding.ID), with attempts attempts.
type storeReport struct{ id, attempts int }

// reportOf is generated finding id, reported with attempts attempts (a
// revision has more).
func reportOf(r storeReport) detect.Finding {
	f := testFinding(r.id, storeT0, 2)
	f.ID = uint64(r.id)
	for len(f.Attempts) < r.attempts {
		a := f.Attempts[len(f.Attempts)-1]
		a.CorrelationID++
		a.Time = a.Time.Add(300 * time.Millisecond)
		f.Attempts = append(f.Attempts, a)
	}
	f.Attempts = f.Attempts[:r.attempts]
	return f
}

// storePage writes the Store's page, with the summary of sum.
func storePage(t *testing.T, s *Store, sum report.Summary) string {
	t.Helper()
	var b bytes.Buffer
	w, err := s.Page(&b)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Producers(testProducers(2)); err != nil {
		t.Fatal(err)
	}
	if err := w.Summary(sum); err != nil {
		t.Fatal(err)
	}
	checkPage(t, b.Bytes())
	return b.String()
}

var findingRE = regexp.MustCompile(`<details class="finding" id="f(\d+)" data-verdict="[^"]*" data-attempts="(\d+)"`)

// drawn is the findings a page draws, by number: their attempts.
func drawn(t *testing.T, page string) map[int]int {
	t.Helper()
	out := map[int]int{}
	for _, m := range findingRE.FindAllStringSubmatch(page, -1) {
		num, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[2])
		if _, ok := out[num]; ok {
			t.Errorf("finding #%d drawn twice", num)
		}
		out[num] = n
	}
	return out
}

// TestStore: a revision replaces the earlier report of its finding, in
// the place of its first report; past the bounds the finding reported
// longest ago is forgotten and counted, and the page says so.
func TestStore(t *testing.T) {
	tests := []struct {
		name        string
		maxFindings int
		reports     []storeReport
		want        map[int]int // page number: attempts drawn
		evicted     int
	}{
		{"revision replaces", 0, []storeReport{{1, 2}, {2, 2}, {1, 3}, {1, 4}}, map[int]int{1: 4, 2: 2}, 0},
		{"revision does not reorder", 0, []storeReport{{5, 2}, {3, 2}, {5, 3}}, map[int]int{1: 3, 2: 2}, 0},
		// 2 is the one reported longest ago when 4 comes: 1 was revised.
		{"bound evicts least recently reported", 3, []storeReport{{1, 2}, {2, 2}, {3, 2}, {1, 3}, {4, 2}}, map[int]int{1: 3, 3: 2, 4: 2}, 1},
		// A finding revised after it was forgotten comes back as new.
		{"revised after eviction", 2, []storeReport{{1, 2}, {2, 2}, {3, 2}, {1, 3}}, map[int]int{3: 2, 4: 3}, 2},
		{"bound of one", 1, []storeReport{{1, 2}, {2, 2}, {2, 3}}, map[int]int{2: 3}, 1},
		// ID 0: a detector that reports each finding once.
		{"no ID", 0, []storeReport{{0, 2}, {0, 3}}, map[int]int{1: 2, 2: 3}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStore(StoreOptions{MaxFindings: tt.maxFindings})
			for _, r := range tt.reports {
				if err := s.Finding(reportOf(r)); err != nil {
					t.Fatal(err)
				}
			}
			if s.Len() != len(tt.want) || s.Evicted() != tt.evicted {
				t.Errorf("Len %d, Evicted %d; want %d, %d", s.Len(), s.Evicted(), len(tt.want), tt.evicted)
			}
			page := storePage(t, s, report.Summary{Files: []string{"live:lo"}})
			if got := drawn(t, page); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("drawn %v, want %v", got, tt.want)
			}
			if got := regexp.MustCompile(`<tr data-verdict="[^"]*" data-num="\d+">`).FindAllString(page, -1); len(got) != len(tt.want) {
				t.Errorf("%d table rows, want %d", len(got), len(tt.want))
			}
			note := strconv.Itoa(tt.evicted) + " findings reported earlier in the run are not on this page"
			if got := bytes.Contains([]byte(page), []byte(note)); got != (tt.evicted > 0) {
				t.Errorf("note %q on the page: %v, want %v", note, got, tt.evicted > 0)
			}
		})
	}
}

// TestStoreSamePage: with nothing forgotten, the Store's page is the page
// of a Writer handed the latest report of each finding, in the order
// first reported: each finding once, the same numbers.
func TestStoreSamePage(t *testing.T) {
	var reports []storeReport
	latest := map[int]int{}
	var order []int
	for i := range 300 {
		id := 1 + i%100
		r := storeReport{id, 2 + i/100} // three reports of each
		reports = append(reports, r)
		if _, ok := latest[id]; !ok {
			order = append(order, id)
		}
		latest[id] = r.attempts
	}
	s := NewStore(StoreOptions{})
	byVerdict := map[string]int64{}
	for _, r := range reports {
		if err := s.Finding(reportOf(r)); err != nil {
			t.Fatal(err)
		}
	}
	var want bytes.Buffer
	w := New(&want, Options{})
	for _, id := range order {
		f := reportOf(storeReport{id, latest[id]})
		byVerdict[string(f.Verdict)]++
		if err := w.Finding(f); err != nil {
			t.Fatal(err)
		}
	}
	sum := report.Summary{Files: []string{"live:lo"}, Findings: int64(len(order)), ByVerdict: byVerdict}
	if err := w.Producers(testProducers(2)); err != nil {
		t.Fatal(err)
	}
	if err := w.Summary(sum); err != nil {
		t.Fatal(err)
	}
	got := storePage(t, s, sum)
	if got != want.String() {
		t.Errorf("the Store's page (%d bytes) differs from the page of the latest reports (%d bytes)", len(got), want.Len())
	}
	if n := len(drawn(t, got)); n != len(order) {
		t.Errorf("%d findings drawn, want %d", n, len(order))
	}
}

// TestStoreBytes: MaxBytes bounds the findings kept by their size.
func TestStoreBytes(t *testing.T) {
	one := sizeOf(ptr(keepOf(ptr(reportOf(storeReport{1, 3})))))
	s := NewStore(StoreOptions{MaxBytes: 3*one + one/2})
	for id := 1; id <= 10; id++ {
		if err := s.Finding(reportOf(storeReport{id, 3})); err != nil {
			t.Fatal(err)
		}
	}
	if s.Len() != 3 || s.Evicted() != 7 {
		t.Errorf("Len %d, Evicted %d; want 3, 7", s.Len(), s.Evicted())
	}
	if got := drawn(t, storePage(t, s, report.Summary{})); fmt.Sprint(got) != fmt.Sprint(map[int]int{8: 3, 9: 3, 10: 3}) {
		t.Errorf("drawn %v, want the last three", got)
	}
}

func ptr[T any](v T) *T { return &v }

// TestStoreKeeps: the Store keeps a copy of what the page shows of a
// finding's records, and of a record-level finding the copies that count
// its records held twice; the caller's finding is not changed.
func TestStoreKeeps(t *testing.T) {
	big := bytes.Repeat([]byte("v"), 1000)
	tests := []struct {
		name        string
		kind        detect.Kind
		records     int
		wantRecords int
	}{
		{"batch", detect.KindBatch, 50, maxRecordsShown},
		{"batch few", "", 3, 3},
		{"record-level", detect.KindRecordResend, 50, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := testFinding(0, storeT0, 0) // duplicated
			f.ID, f.Kind, f.NumRecords = 1, tt.kind, int32(tt.records)
			for i := range tt.records {
				r := detect.Record{Offset: -1, OffsetDelta: int32(i), Key: nil, KeyLen: -1, Value: big, ValueLen: len(big), Known: true,
					Headers: []detect.RecordHeader{{Key: "h"}}}
				if tt.kind == detect.KindRecordResend {
					// each record its own offsets: they count its copies
					r.Copies = []detect.RecordCopy{{Attempt: 0, Offset: int64(i)}, {Attempt: 1, Offset: int64(100 + i)}, {Attempt: 2, Offset: int64(200 + i*(i%2))}}
				}
				f.Records = append(f.Records, r)
			}
			before := fmt.Sprint(f)
			k := keepOf(&f)
			if fmt.Sprint(f) != before {
				t.Fatal("keepOf changed its argument")
			}
			if len(k.Records) != tt.wantRecords {
				t.Fatalf("%d records kept, want %d", len(k.Records), tt.wantRecords)
			}
			for i, r := range k.Records {
				if i < maxRecordsShown && (len(r.Value) != min(len(big), recordBytesShown) || r.ValueLen != len(big) || r.Key != nil || r.KeyLen != -1 || r.Headers != nil) {
					t.Errorf("record %d kept: value %d bytes of %d, key %v (%d), headers %v", i, len(r.Value), r.ValueLen, r.Key, r.KeyLen, r.Headers)
				}
				if len(r.Copies) > 0 && &r.Copies[0] == &f.Records[i].Copies[0] {
					t.Errorf("record %d: copies shared with the caller's", i)
				}
			}
			if len(k.Records) > 0 && &k.Records[0] == &f.Records[0] {
				t.Error("records shared with the caller's")
			}
			// The page's numbers are those of the whole finding.
			hw, hk := report.NewHeadline(), report.NewHeadline()
			hw.Finding(&f)
			hk.Finding(&k)
			if hw.Held() != hk.Held() {
				t.Errorf("held %+v kept, %+v of the finding", hk.Held(), hw.Held())
			}
			var pf, pk bytes.Buffer
			for _, x := range []struct {
				b *bytes.Buffer
				f detect.Finding
			}{{&pf, f}, {&pk, k}} {
				w := New(x.b, Options{})
				if err := w.Finding(x.f); err != nil {
					t.Fatal(err)
				}
				if err := w.Summary(report.Summary{}); err != nil {
					t.Fatal(err)
				}
			}
			if pf.String() != pk.String() {
				t.Error("the page of the finding kept differs from the page of the finding")
			}
		})
	}
}

// TestStoreBounded: a Store handed many more findings than it keeps, each
// reported twice, keeps its bound and writes a page under 5 MB.
func TestStoreBounded(t *testing.T) {
	const n = 12000
	s := NewStore(StoreOptions{})
	for i := range n {
		for _, a := range []int{2, 3} {
			f := reportOf(storeReport{i + 1, a})
			if err := s.Finding(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	if s.Len() != DefaultStoreFindings || s.Evicted() != n-DefaultStoreFindings {
		t.Errorf("Len %d, Evicted %d; want %d, %d", s.Len(), s.Evicted(), DefaultStoreFindings, n-DefaultStoreFindings)
	}
	start := time.Now()
	page := storePage(t, s, report.Summary{})
	t.Logf("page of %d findings kept: %d bytes in %v; %d bytes kept (estimate)", s.Len(), len(page), time.Since(start), s.size)
	if len(page) > 5<<20 {
		t.Errorf("page of %d bytes", len(page))
	}
	nums := slices.Sorted(func(yield func(int) bool) {
		for k := range drawn(t, page) {
			if !yield(k) {
				return
			}
		}
	})
	if len(nums) == 0 || nums[0] != n-DefaultStoreFindings+1 {
		t.Errorf("first finding drawn #%v, want #%d (the first kept)", nums[:min(len(nums), 1)], n-DefaultStoreFindings+1)
	}
}

// BenchmarkStorePage: a page of a full Store, as /report takes it:
// "prepare" is what the live run's goroutine does (Page, Producers),
// "page" that and the drawing (Summary), which /report does on its own.
func BenchmarkStorePage(b *testing.B) {
	s := NewStore(StoreOptions{})
	for i := range DefaultStoreFindings {
		if err := s.Finding(reportOf(storeReport{i + 1, 3})); err != nil {
			b.Fatal(err)
		}
	}
	ps := testProducers(50)
	for _, draw := range []bool{false, true} {
		name := "prepare"
		if draw {
			name = "page"
		}
		b.Run(name, func(b *testing.B) {
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				w, err := s.Page(&buf)
				if err != nil {
					b.Fatal(err)
				}
				if err := w.Producers(ps); err != nil {
					b.Fatal(err)
				}
				if draw {
					if err := w.Summary(report.Summary{}); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
