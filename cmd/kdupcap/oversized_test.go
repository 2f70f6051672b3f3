package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/kdupcap/kdupcap/capture"
)

// A pcap whose snap length is 2^32-1 and whose one record claims 2 GiB with
// little data after it: an input error naming the position, exit 2, and
// nothing allocated whole.
func TestOversizedPacketClaimed(t *testing.T) {
	le := binary.LittleEndian
	b := le.AppendUint32(nil, 0xa1b2c3d4)
	b = le.AppendUint16(b, 2)
	b = le.AppendUint16(b, 4)
	b = le.AppendUint64(b, 0)
	b = le.AppendUint32(b, 0xffffffff)
	b = le.AppendUint32(b, uint32(layers.LinkTypeRaw))
	b = le.AppendUint64(b, 1)
	b = le.AppendUint32(b, 2<<30)
	b = le.AppendUint32(b, 2<<30)
	b = append(b, make([]byte, 2000)...)
	path := filepath.Join(t.TempDir(), "claimed.pcap")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"analyze", "--quiet", path}, nil, &stdout, &stderr); code != exitUsage {
		t.Fatalf("exit %d, want %d; stderr: %s", code, exitUsage, stderr.String())
	}
	if !strings.Contains(stderr.String(), "truncated at byte 24") || !strings.Contains(stderr.String(), "2147483648 bytes") {
		t.Errorf("stderr: %s", stderr.String())
	}
}

// A real capture with a packet over capture.MaxPacketBytes added among its
// own: skipped, exit 0, the same findings, with one worker or two.
func TestOversizedPacketSkipped(t *testing.T) {
	file := filepath.Join("..", "..", "testdata", "kcat-nonidempotent-timeout.pcap")
	pkts, _ := readCapture(t, file)
	big := pkts[len(pkts)/2]
	big.data = make([]byte, capture.MaxPacketBytes+1)
	big.ci.CaptureLength, big.ci.Length = len(big.data), len(big.data)
	with := append(append(append([]capturedPacket(nil), pkts[:len(pkts)/2]...), big), pkts[len(pkts)/2:]...)
	path := filepath.Join(t.TempDir(), "big.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(0xffffffff, pkts[0].link); err != nil {
		t.Fatal(err)
	}
	for _, p := range with {
		if err := w.WritePacket(p.ci, p.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	want, _ := analyzeLines(t, file)
	for _, workers := range []string{"1", "2"} {
		got, sum := analyzeLines(t, path, "--workers", workers)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("workers %s: findings differ:\n%s\nwant:\n%s", workers, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if sum["packets"] != float64(len(with)) {
			t.Errorf("workers %s: packets %v, want %d", workers, sum["packets"], len(with))
		}
		dropped, _ := sum["dropped"].(map[string]any)
		if dropped["oversized_packets"] != float64(1) || dropped["oversized_bytes"] != float64(len(big.data)) {
			t.Errorf("workers %s: summary dropped %v, want the one oversized packet of %d bytes", workers, sum["dropped"], len(big.data))
		}
	}
}
