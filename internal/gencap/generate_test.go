package gencap

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// small is a configuration that makes a capture in well under a second and
// still holds every kind of resend.
func small(mtu int, seed int64) Config {
	return Config{TargetBytes: 2 << 20, MTU: mtu, Seed: seed, Conns: 12, Brokers: 3, ResendEvery: 10, RetransmitEvery: 7}
}

func generate(t testing.TB, cfg Config) ([]byte, *Manifest) {
	t.Helper()
	var buf bytes.Buffer
	m, err := Generate(&buf, cfg)
	if err != nil {
		t.Fatalf("Generate(%+v): %v", cfg, err)
	}
	return buf.Bytes(), m
}

func TestGenerateDeterministic(t *testing.T) {
	for _, mtu := range []int{65535, 1500} {
		t.Run(fmt.Sprint(mtu), func(t *testing.T) {
			a, ma := generate(t, small(mtu, 7))
			b, mb := generate(t, small(mtu, 7))
			if sha256.Sum256(a) != sha256.Sum256(b) {
				t.Fatalf("two runs of the same config differ (%d and %d bytes)", len(a), len(b))
			}
			var ja, jb bytes.Buffer
			if err := ma.WriteJSON(&ja); err != nil {
				t.Fatal(err)
			}
			if err := mb.WriteJSON(&jb); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ja.Bytes(), jb.Bytes()) {
				t.Fatal("two runs of the same config give different manifests")
			}
			c, _ := generate(t, small(mtu, 8))
			if bytes.Equal(a, c) {
				t.Fatal("seeds 7 and 8 give the same file")
			}
		})
	}
}

func TestGenerateConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"negative size", Config{TargetBytes: -1}},
		{"mtu 9000", Config{MTU: 9000}},
		{"negative conns", Config{Conns: -2}},
		{"too many brokers", Config{Brokers: 251}},
		{"51 records", Config{MaxRecords: 51}},
		{"negative records", Config{MaxRecords: -1}},
		{"values of 99 bytes", Config{MaxValueBytes: 99}},
		{"values of 1001 bytes", Config{MaxValueBytes: 1001}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if _, err := Generate(&buf, tt.cfg); err == nil {
				t.Fatal("no error")
			}
			if buf.Len() != 0 {
				t.Fatalf("%d bytes written before the error", buf.Len())
			}
		})
	}
}

func TestGenerateReadsBack(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"loopback", small(65535, 1)},
		{"ethernet", small(1500, 2)},
		{"no resends or retransmissions", Config{TargetBytes: 1 << 20, MTU: 1500, Seed: 3, Conns: 5, ResendEvery: -1, RetransmitEvery: -1}},
		{"one connection", Config{TargetBytes: 1 << 20, Seed: 4, Conns: 1, Brokers: 1, ResendEvery: 5}},
		{"acks all, one small record a batch, every batch resent", Config{TargetBytes: 1 << 20, Seed: 5, ResendEvery: 1, RetransmitEvery: -1, AcksAll: true, MaxRecords: 1, MaxValueBytes: 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file, m := generate(t, tt.cfg)
			rb, err := readCapture(bytes.NewReader(file))
			if err != nil {
				t.Fatalf("read back: %v", err)
			}
			tot := m.Totals
			if tot.Bytes != int64(len(file)) || tot.Bytes < tt.cfg.TargetBytes {
				t.Errorf("manifest says %d bytes, file has %d, target %d", tot.Bytes, len(file), tt.cfg.TargetBytes)
			}
			for _, c := range []struct {
				name      string
				got, want int64
			}{
				{"packets", rb.packets, tot.Packets},
				{"connections", rb.syns, tot.Connections},
				{"retransmitted segments", rb.retransmits, tot.RetransmittedSegments},
				{"produce requests", sumValues(rb.byVersion), tot.ProduceRequests},
				{"produce responses", rb.responses, tot.ProduceResponses},
				{"batches", rb.batches, tot.Batches},
				{"records", rb.records, tot.Records},
				{"resends", int64(len(m.Resends)), tot.Resends},
			} {
				if c.got != c.want {
					t.Errorf("%s: read back %d, manifest %d", c.name, c.got, c.want)
				}
			}
			for v, n := range tot.ProduceRequestsByVersion {
				if rb.byVersion[v] != n {
					t.Errorf("produce v%d: read back %d, manifest %d", v, rb.byVersion[v], n)
				}
			}
			if tt.cfg.ResendEvery < 0 && len(m.Resends) != 0 {
				t.Errorf("%d resends with resends off", len(m.Resends))
			}
			if n := int64(tt.cfg.MaxRecords); n > 0 && rb.records > n*rb.batches {
				t.Errorf("%d records in %d batches of at most %d", rb.records, rb.batches, n)
			}
			// Acks all and every batch resent: each exchange is a resend
			// but the capture's first, made before any batch was owed.
			if tt.cfg.AcksAll && tt.cfg.ResendEvery == 1 && tot.ProduceRequests != 2*tot.Resends+1 {
				t.Errorf("acks all, every batch resent: %d produce requests for %d resends, want two each and one", tot.ProduceRequests, tot.Resends)
			}
			if tt.cfg.RetransmitEvery < 0 && tot.RetransmittedSegments != 0 {
				t.Errorf("%d retransmissions with retransmissions off", tot.RetransmittedSegments)
			}
			checkResends(t, rb, m)
		})
	}
}

func sumValues(m map[int16]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// checkResends checks each manifest resend against the capture, and that
// no other batch is in the capture twice.
func checkResends(t *testing.T, rb *readBack, m *Manifest) {
	t.Helper()
	type batchKey struct {
		topic     string
		partition int32
		bytes     string
	}
	copies := map[batchKey]int{}
	for _, req := range rb.requests {
		if req.produce == nil {
			continue
		}
		for _, tp := range req.produce.Topics {
			for _, p := range tp.Partitions {
				copies[batchKey{tp.Topic, p.Partition, string(p.Records)}]++
			}
		}
	}
	for i, r := range m.Resends {
		client, err1 := netip.ParseAddrPort(r.Client)
		broker, err2 := netip.ParseAddrPort(r.Broker)
		if err1 != nil || err2 != nil || len(r.CorrelationIDs) != 2 || len(r.Attempts) != 2 {
			t.Fatalf("resend %d malformed: %+v", i, r)
		}
		var batch []byte
		for j, corr := range r.CorrelationIDs {
			req := rb.resendsByCorr[connCorr{client, broker, corr}]
			if req == nil || r.Attempts[j].CorrelationID != corr {
				t.Fatalf("resend %d: no produce request %d on %s->%s", i, corr, r.Client, r.Broker)
			}
			if len(req.produce.Topics) != 1 || len(req.produce.Topics[0].Partitions) != 1 ||
				req.produce.Topics[0].Topic != r.Topic || req.produce.Topics[0].Partitions[0].Partition != r.Partition {
				t.Fatalf("resend %d attempt %d: not a single batch to %s/%d", i, corr, r.Topic, r.Partition)
			}
			if req.clientID != r.ClientID || req.version != r.APIVersion || req.produce.Acks != -1 {
				t.Errorf("resend %d attempt %d: client %q v%d acks %d", i, corr, req.clientID, req.version, req.produce.Acks)
			}
			b := req.produce.Topics[0].Partitions[0].Records
			if batch != nil && !bytes.Equal(batch, b) {
				t.Errorf("resend %d: attempts carry different bytes", i)
			}
			batch = b
			resp := rb.responseByCorr[connCorr{client, broker, corr}]
			want := r.Attempts[j].Response
			switch {
			case resp == nil && want == nil:
			case resp == nil || want == nil:
				t.Errorf("resend %d attempt %d: response %v, manifest %v", i, corr, resp != nil, want != nil)
			default:
				p := resp.Topics[0].Partitions[0]
				if p.ErrorCode != want.ErrorCode || p.BaseOffset != want.BaseOffset {
					t.Errorf("resend %d attempt %d: answered %d at %d, manifest %d at %d", i, corr, p.ErrorCode, p.BaseOffset, want.ErrorCode, want.BaseOffset)
				}
			}
		}
		if crc := uint32(batch[17])<<24 | uint32(batch[18])<<16 | uint32(batch[19])<<8 | uint32(batch[20]); crc != r.BatchCRC {
			t.Errorf("resend %d: crc %d, manifest %d", i, crc, r.BatchCRC)
		}
		if n := copies[batchKey{r.Topic, r.Partition, string(batch)}]; n != 2 {
			t.Errorf("resend %d: batch sent %d times", i, n)
		}
		delete(copies, batchKey{r.Topic, r.Partition, string(batch)})
		checkVerdict(t, i, r)
	}
	for k, n := range copies {
		if n != 1 {
			t.Errorf("batch to %s/%d sent %d times, not in the manifest", k.topic, k.partition, n)
		}
	}
}

// checkVerdict checks that a resend's answers fit its verdict.
func checkVerdict(t *testing.T, i int, r Resend) {
	t.Helper()
	a0, a1 := r.Attempts[0].Response, r.Attempts[1].Response
	ok := false
	switch r.Verdict {
	case VerdictDuplicated:
		ok = !r.Idempotent && a0 != nil && a0.ErrorCode == 7 && a1 != nil && a1.ErrorCode == 0 &&
			len(r.AppendedOffsets) == 2 && a0.BaseOffset != a1.BaseOffset
	case VerdictDeduplicated:
		ok = r.Idempotent && a0 != nil && a1 != nil && a1.ErrorCode == 0 &&
			a0.BaseOffset == a1.BaseOffset && slices.Equal(r.AppendedOffsets, []int64{a1.BaseOffset})
	case VerdictSingle:
		ok = a0 != nil && a0.ErrorCode == 6 && a0.BaseOffset == -1 && a1 != nil && a1.ErrorCode == 0 &&
			slices.Equal(r.AppendedOffsets, []int64{a1.BaseOffset})
	case VerdictUnconfirmed:
		ok = a1 == nil && (a0 == nil && len(r.AppendedOffsets) == 0 ||
			a0 != nil && a0.ErrorCode == 7 && slices.Equal(r.AppendedOffsets, []int64{a0.BaseOffset}))
	}
	if !ok {
		t.Errorf("resend %d: verdict %s does not fit %+v, %+v, appended %v", i, r.Verdict, a0, a1, r.AppendedOffsets)
	}
	wantCause, wantErr := "client_timeout", ""
	if a0 != nil {
		wantCause, wantErr = "broker_error", map[int16]string{6: "NOT_LEADER_OR_FOLLOWER", 7: "REQUEST_TIMED_OUT"}[a0.ErrorCode]
	}
	if c := r.Attempts[1]; c.Cause != wantCause || c.CauseError != wantErr || r.Attempts[0].Cause != "" {
		t.Errorf("resend %d: causes %+v, want %s %s", i, r.Attempts, wantCause, wantErr)
	}
	if !slices.IsSorted(r.AppendedOffsets) {
		t.Errorf("resend %d: appended offsets %v not ascending", i, r.AppendedOffsets)
	}
	if r.Idempotent != (r.ProducerID >= 0) || r.Idempotent != (r.BaseSequence >= 0) {
		t.Errorf("resend %d: idempotent %v with producer id %d, sequence %d", i, r.Idempotent, r.ProducerID, r.BaseSequence)
	}
}

func TestGenerateEveryVerdict(t *testing.T) {
	_, m := generate(t, small(65535, 1))
	for _, v := range []string{VerdictDuplicated, VerdictDeduplicated, VerdictSingle, VerdictUnconfirmed} {
		if m.Totals.Verdicts[v] == 0 {
			t.Errorf("no %s resend in %v", v, m.Totals.Verdicts)
		}
	}
	seen := map[bool]bool{}
	for _, r := range m.Resends {
		if r.Verdict == VerdictUnconfirmed {
			seen[r.Attempts[0].Response == nil] = true
		}
	}
	if !seen[true] || !seen[false] {
		t.Errorf("unconfirmed resends lack a variant (first unanswered: %v, first answered: %v)", seen[true], seen[false])
	}
}

func TestManifestRoundTrip(t *testing.T) {
	_, m := generate(t, small(1500, 5))
	var buf bytes.Buffer
	if err := m.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := ReadManifest(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := got.WriteJSON(&again); err != nil {
		t.Fatal(err)
	}
	var first bytes.Buffer
	_ = m.WriteJSON(&first)
	if !bytes.Equal(first.Bytes(), again.Bytes()) {
		t.Fatal("manifest changes through JSON")
	}
	if _, err := ReadManifest(bytes.NewReader([]byte("{"))); err == nil {
		t.Fatal("truncated manifest read without error")
	}
}

// TestManifestWriteFile: WriteFile writes what WriteJSON writes, mode
// 0644, over an existing manifest too, and leaves no temporary file; where
// it cannot write, it fails and leaves nothing.
func TestManifestWriteFile(t *testing.T) {
	m := &Manifest{Config: Config{MTU: 1500}, Totals: Totals{Packets: 3}, Source: "test"}
	var want bytes.Buffer
	if err := m.WriteJSON(&want); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		prepare func(dir string) string // returns the path to write
		fails   bool
	}{
		{"new", func(dir string) string { return filepath.Join(dir, "a.manifest.json") }, false},
		{"existing", func(dir string) string {
			p := filepath.Join(dir, "a.manifest.json")
			if err := os.WriteFile(p, bytes.Repeat([]byte("old "), 1000), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}, false},
		{"no directory", func(dir string) string { return filepath.Join(dir, "missing", "a.manifest.json") }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := tc.prepare(dir)
			err := m.WriteFile(path)
			if tc.fails {
				if err == nil || !strings.HasPrefix(err.Error(), "gencap: write manifest: ") {
					t.Errorf("error %v, want one saying gencap: write manifest", err)
				}
			} else if err != nil {
				t.Fatal(err)
			} else {
				got, err := os.ReadFile(path)
				if err != nil || !bytes.Equal(got, want.Bytes()) {
					t.Errorf("read back %q (%v), want %q", got, err, want.Bytes())
				}
				if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
					t.Errorf("mode %v (%v), want 0644", st.Mode(), err)
				}
			}
			var left []string
			filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && p != path {
					left = append(left, p)
				}
				return nil
			})
			if len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

func BenchmarkGenerate(b *testing.B) {
	for _, mtu := range []int{65535, 1500} {
		b.Run(fmt.Sprint(mtu), func(b *testing.B) {
			cfg := Config{TargetBytes: 8 << 20, MTU: mtu, Seed: 1}
			b.ReportAllocs()
			b.SetBytes(cfg.TargetBytes)
			for b.Loop() {
				if _, err := Generate(io.Discard, cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
