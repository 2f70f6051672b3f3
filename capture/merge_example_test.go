package capture_test

import (
	"bytes"
	"fmt"
	"io"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/kdupcap/kdupcap/capture"
)

// hostCapture writes a pcap of one-word packets at the given milliseconds.
func hostCapture(words map[int]string) *bytes.Reader {
	var buf bytes.Buffer
	w := pcapgo.NewWriterNanos(&buf)
	w.WriteFileHeader(65535, layers.LinkTypeRaw)
	t0 := time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)
	for ms := range 10 {
		if word, ok := words[ms]; ok {
			ci := gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(ms) * time.Millisecond), CaptureLength: len(word), Length: len(word)}
			w.WritePacket(ci, []byte(word))
		}
	}
	return bytes.NewReader(buf.Bytes())
}

// Two captures taken at the same time on two hosts, the second host's clock
// 2ms late, read as one timeline.
func ExampleMerge() {
	client, _ := capture.NewSource("client.pcap", hostCapture(map[int]string{1: "request", 5: "retry"}))
	broker, _ := capture.NewSource("broker.pcap", hostCapture(map[int]string{1: "timeout", 5: "ok"}))
	m := capture.Merge([]*capture.Source{client, broker}, capture.MergeOptions{
		ClockSkew: []time.Duration{0, 2 * time.Millisecond},
	})
	defer m.Close()
	for {
		pkt, err := m.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err) // one file's error: the others go on
			continue
		}
		// pkt.Data is valid until the next call to m.Next.
		fmt.Println(pkt.CI.Timestamp.Format("05.000"), string(pkt.Data))
	}
	fmt.Println(m.Layout())
	// Output:
	// 00.001 request
	// 00.003 timeout
	// 00.005 retry
	// 00.007 ok
	// overlapping
}
