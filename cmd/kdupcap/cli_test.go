package main

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// rawPacket is one packet of a raw-IP capture, as read or to be written.
type rawPacket struct {
	ci   gopacket.CaptureInfo
	data []byte
}

func readPcap(t *testing.T, path string) (layers.LinkType, []rawPacket) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var pkts []rawPacket
	for {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		pkts = append(pkts, rawPacket{ci, data})
	}
	return r.LinkType(), pkts
}

func writePcap(t *testing.T, path string, lt layers.LinkType, pkts []rawPacket) {
	t.Helper()
	var buf bytes.Buffer
	w := pcapgo.NewWriter(&buf)
	if err := w.WriteFileHeader(65535, lt); err != nil {
		t.Fatal(err)
	}
	for _, p := range pkts {
		p.ci.CaptureLength, p.ci.Length = len(p.data), len(p.data)
		if err := w.WritePacket(p.ci, p.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// splitSegment cuts one raw-IPv4 TCP packet into two segments at payload
// byte k, with sequence numbers and checksums fixed.
func splitSegment(t *testing.T, p rawPacket, k int) (rawPacket, rawPacket) {
	t.Helper()
	pkt := gopacket.NewPacket(p.data, layers.LayerTypeIPv4, gopacket.Default)
	ip, _ := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	tcp, _ := pkt.Layer(layers.LayerTypeTCP).(*layers.TCP)
	if ip == nil || tcp == nil {
		t.Fatal("not an IPv4 TCP packet")
	}
	payload := append([]byte(nil), tcp.Payload...)
	build := func(seq uint32, data []byte) rawPacket {
		ip2, tcp2 := *ip, *tcp
		tcp2.Seq = seq
		tcp2.SetNetworkLayerForChecksum(&ip2)
		buf := gopacket.NewSerializeBuffer()
		opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
		if err := gopacket.SerializeLayers(buf, opts, &ip2, &tcp2, gopacket.Payload(data)); err != nil {
			t.Fatal(err)
		}
		return rawPacket{p.ci, append([]byte(nil), buf.Bytes()...)}
	}
	return build(tcp.Seq, payload[:k]), build(tcp.Seq+uint32(k), payload[k:])
}

func attemptIDs(f cliFinding) []int32 {
	var ids []int32
	for _, a := range f.Attempts {
		ids = append(ids, a.CorrelationID)
	}
	return ids
}

// TestTCPRetransmissionIsNotAResend: the same TCP segment captured twice (a
// TCP retransmission) must not become a Kafka finding or a third attempt.
func TestTCPRetransmissionIsNotAResend(t *testing.T) {
	lt, pkts := readPcap(t, seedPath("seed-nonidempotent-retry.pcap"))
	dir := t.TempDir()
	tests := []struct {
		name  string
		order []int // indexes into the seed's packets
	}{
		{"first request retransmitted at once", []int{0, 0, 1, 2}},
		{"first request retransmitted after the response", []int{0, 1, 0, 2}},
		{"retry retransmitted", []int{0, 1, 2, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out []rawPacket
			for _, i := range tc.order {
				out = append(out, pkts[i])
			}
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".pcap")
			writePcap(t, path, lt, out)
			res := cliAnalyze(t, nil, path)
			if res.Code != exitOK || len(res.Findings) != 1 {
				t.Fatalf("exit %d, %d findings, want 1: %s", res.Code, len(res.Findings), res.Stderr)
			}
			if got := attemptIDs(res.Findings[0]); len(got) != 2 || got[0] != 27 || got[1] != 28 {
				t.Errorf("attempts %v, want [27 28]", got)
			}
			if res.Summary.ProduceRequests != 2 {
				t.Errorf("produce requests %d, want 2", res.Summary.ProduceRequests)
			}
		})
	}
	t.Run("one request retransmitted alone", func(t *testing.T) {
		path := filepath.Join(dir, "alone.pcap")
		writePcap(t, path, lt, []rawPacket{pkts[0], pkts[0], pkts[1]})
		res := cliAnalyze(t, nil, path)
		if res.Code != exitOK || len(res.Findings) != 0 {
			t.Fatalf("exit %d, findings %+v", res.Code, res.Findings)
		}
	})
}

// TestMidStreamStart: a capture that begins inside a request frame resyncs
// at the next segment and invents nothing.
func TestMidStreamStart(t *testing.T) {
	lt, pkts := readPcap(t, seedPath("seed-nonidempotent-retry.pcap"))
	_, tail := splitSegment(t, pkts[0], 50)
	dir := t.TempDir()
	path := filepath.Join(dir, "midstream.pcap")
	writePcap(t, path, lt, []rawPacket{tail, pkts[1], pkts[2]})
	res := cliAnalyze(t, nil, path)
	if res.Code != exitOK {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	if len(res.Findings) != 0 {
		t.Errorf("findings from a capture holding one whole request: %+v", res.Findings)
	}
	if res.Summary.ProduceRequests != 1 {
		t.Errorf("produce requests %d, want 1 (the retry, after resync)", res.Summary.ProduceRequests)
	}

	// The same request split in two segments, both captured, still counts.
	head, tail := splitSegment(t, pkts[0], 50)
	path = filepath.Join(dir, "split.pcap")
	writePcap(t, path, lt, []rawPacket{head, tail, pkts[1], pkts[2]})
	res = cliAnalyze(t, nil, path)
	if len(res.Findings) != 1 || res.Findings[0].Verdict != "unconfirmed" {
		t.Fatalf("split request: %+v", res.Findings)
	}
	// And out of order: the tail first.
	path = filepath.Join(dir, "reordered.pcap")
	writePcap(t, path, lt, []rawPacket{head, pkts[1], tail, pkts[2]})
	res = cliAnalyze(t, nil, path)
	// Both requests are whole in the capture, so both attempts are there;
	// the answer to 27 precedes its request's last segment (timestamps of
	// two capture points), so it cannot be trusted as its answer: the
	// finding may not claim more than unconfirmed.
	if len(res.Findings) != 1 {
		t.Fatalf("reordered: %d findings, want 1", len(res.Findings))
	}
	if got := attemptIDs(res.Findings[0]); len(got) != 2 || got[0] != 27 || got[1] != 28 {
		t.Errorf("reordered: attempts %v, want [27 28]", got)
	}
	if v := res.Findings[0].Verdict; v != "unconfirmed" {
		t.Errorf("reordered: verdict %q, want unconfirmed", v)
	}
}

// TestBadInput: errors name the file and the position, exit 2, and what was
// read before the fault is still reported.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	seed, err := os.ReadFile(seedPath("seed-nonidempotent-retry.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	notCapture := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notCapture, []byte("<html>this is not a capture</html>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Cut inside the third packet: the first two are whole.
	truncated := filepath.Join(dir, "truncated.pcap")
	if err := os.WriteFile(truncated, seed[:len(seed)-20], 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.pcap")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("not a capture", func(t *testing.T) {
		res := cliAnalyze(t, nil, notCapture)
		if res.Code != exitUsage || !strings.Contains(res.Stderr, "notes.txt") || !strings.Contains(res.Stderr, "not a capture") {
			t.Errorf("exit %d, stderr %q", res.Code, res.Stderr)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		res := cliAnalyze(t, nil, truncated)
		if res.Code != exitUsage || !strings.Contains(res.Stderr, "truncated.pcap") || !strings.Contains(res.Stderr, "truncated at byte") {
			t.Errorf("exit %d, stderr %q", res.Code, res.Stderr)
		}
		if res.Summary.Packets != 2 || res.Summary.ProduceRequests != 1 || len(res.Summary.Errors) != 1 {
			t.Errorf("what was read before the fault: %+v", res.Summary)
		}
	})
	t.Run("empty", func(t *testing.T) {
		res := cliAnalyze(t, nil, empty)
		if res.Code != exitUsage || !strings.Contains(res.Stderr, "empty.pcap") {
			t.Errorf("exit %d, stderr %q", res.Code, res.Stderr)
		}
	})
	t.Run("missing", func(t *testing.T) {
		res := cliAnalyze(t, nil, filepath.Join(dir, "nope.pcap"))
		if res.Code != exitUsage || !strings.Contains(res.Stderr, "nope.pcap") {
			t.Errorf("exit %d, stderr %q", res.Code, res.Stderr)
		}
	})
	t.Run("good file still analyzed beside a bad one", func(t *testing.T) {
		res := cliAnalyze(t, nil, notCapture, seedPath("seed-idempotent-retry.pcap"))
		if res.Code != exitUsage || len(res.Findings) != 1 {
			t.Errorf("exit %d, %d findings", res.Code, len(res.Findings))
		}
	})
}

// TestInputs: standard input and compressed files read like the plain file.
func TestInputs(t *testing.T) {
	seed, err := os.ReadFile(seedPath("seed-idempotent-retry.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(seed)
	zw.Close()
	gzPath := filepath.Join(dir, "seed.pcap.gz")
	if err := os.WriteFile(gzPath, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		stdin []byte
		arg   string
	}{
		{"stdin", seed, "-"},
		{"gzip", nil, gzPath},
		{"gzip on stdin", gz.Bytes(), "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := cliAnalyze(t, bytes.NewReader(tc.stdin), tc.arg)
			if res.Code != exitOK || len(res.Findings) != 1 || res.Findings[0].Verdict != "deduplicated" {
				t.Errorf("exit %d, findings %+v, stderr %s", res.Code, res.Findings, res.Stderr)
			}
		})
	}
}

// TestExitCodes covers --fail-on-duplicate and usage errors.
func TestExitCodes(t *testing.T) {
	var out, errb bytes.Buffer
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"analyze", seedPath("seed-idempotent-retry.pcap")}, exitOK},
		{[]string{"analyze", "--fail-on-duplicate", seedPath("seed-idempotent-retry.pcap")}, exitOK},
		{[]string{"analyze", "--fail-on-duplicate", seedPath("seed-nonidempotent-retry.pcap")}, exitDuplicate},
		{[]string{"analyze"}, exitUsage},
		{[]string{"analyze", "--format", "xml", seedPath("seed-idempotent-retry.pcap")}, exitUsage},
		{[]string{"analyze", "--port", "http", seedPath("seed-idempotent-retry.pcap")}, exitUsage},
		{[]string{"analyze", "--write-dups", "/dev/null", "-"}, exitUsage}, // stdin cannot be read twice
		{[]string{"analyze", "--port", "", seedPath("seed-idempotent-retry.pcap")}, exitUsage},
		{[]string{"analyze", "--port", " , ", seedPath("seed-idempotent-retry.pcap")}, exitUsage},
		{[]string{"analyze", "--port", "70000", seedPath("seed-idempotent-retry.pcap")}, exitUsage},
		{[]string{"analyze", "--port", " 19092 , 29092 ", "--sniff=false", seedPath("seed-idempotent-retry.pcap")}, exitOK},
		{[]string{"analyze", "-", "-"}, exitUsage},
		{[]string{"analyze", seedPath("seed-nonidempotent-retry.pcap"), "--fail-on-duplicate"}, exitDuplicate},
		{[]string{"analyze", seedPath("seed-idempotent-retry.pcap"), "--format", "json", seedPath("seed-nonidempotent-retry.pcap"), "--fail-on-duplicate"}, exitDuplicate},
		{[]string{"analyze", seedPath("seed-nonidempotent-retry.pcap"), "--", "--fail-on-duplicate"}, exitUsage}, // a file of that name
		{[]string{"analyze", "--fail-on-duplicate", seedPath("seed-nonidempotent-retry.pcap"), "/nonexistent.pcap"}, exitUsage},
		{[]string{"frobnicate"}, exitUsage},
		{[]string{}, exitUsage},
		{[]string{"version"}, exitOK},
	} {
		out.Reset()
		errb.Reset()
		if got := run(tc.args, strings.NewReader(""), &out, &errb); got != tc.want {
			t.Errorf("%v: exit %d, want %d (stderr %s)", tc.args, got, tc.want, errb.String())
		}
		if tc.want == exitUsage && strings.Count(strings.TrimSpace(errb.String()), "\n") > 0 && !strings.Contains(errb.String(), "Usage") {
			t.Errorf("%v: more than one line on stderr: %q", tc.args, errb.String())
		}
	}
}
