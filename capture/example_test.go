package capture_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/kdupcap/kdupcap/capture"
)

// printer prints what it is given; a real Stream is the Kafka decoder.
type printer struct{ a, b netip.AddrPort }

func (p *printer) Data(fromA bool, data []byte, ts time.Time) bool {
	from, to := p.a, p.b
	if !fromA {
		from, to = to, from
	}
	fmt.Printf("%s %v > %v: %d bytes\n", ts.Format("15:04:05.000"), from, to, len(data))
	return true
}

func (p *printer) Gap(fromA bool, n int, ts time.Time) { fmt.Printf("gap of %d bytes\n", n) }
func (p *printer) Close(ts time.Time)                  { fmt.Println("closed") }

func Example() {
	src, err := capture.Open("../testdata/seed-nonidempotent-retry.pcap")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	asm := capture.NewAssembler(func(a, b netip.AddrPort, ts time.Time) capture.Stream {
		return &printer{a: a, b: b}
	}, capture.AssemblerOptions{})
	for {
		p, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err) // e.g. "dump.pcap: truncated at byte 12345: unexpected EOF"
			break
		}
		asm.Add(p)
	}
	asm.Close()
	st := asm.Stats()
	fmt.Println(st.Packets, "packets,", st.TCPConnections, "connection,", st.DeliveredBytes, "bytes")
	// Output:
	// 07:26:40.000 172.19.0.1:55464 > 172.19.0.4:19092: 140 bytes
	// 07:26:40.001 172.19.0.4:19092 > 172.19.0.1:55464: 55 bytes
	// 07:26:40.008 172.19.0.1:55464 > 172.19.0.4:19092: 140 bytes
	// closed
	// 3 packets, 1 connection, 335 bytes
}

// The packets behind a finding, written to a pcap while the capture goes on.
func ExampleEvidence() {
	src, err := capture.Open("../testdata/seed-nonidempotent-retry.pcap")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	ev := capture.NewEvidence(capture.EvidenceOptions{PerConnBytes: 1 << 20, Retain: time.Hour})
	var client, broker netip.AddrPort
	asm := capture.NewAssembler(func(a, b netip.AddrPort, ts time.Time) capture.Stream {
		client, broker = a, b
		return &printer{a: a, b: b}
	}, capture.AssemblerOptions{Evidence: ev})
	for {
		p, err := src.Next()
		if err != nil {
			break
		}
		asm.Add(p)
	}
	asm.Close()
	var out bytes.Buffer
	n, err := ev.WritePcap(&out, broker, client, time.Time{}, time.Time{})
	if errors.Is(err, capture.ErrEvidenceEvicted) {
		fmt.Println("partial evidence:", err)
	}
	fmt.Println(n, "packets written,", ev.Stats().DroppedPackets, "dropped")
	// Output:
	// 07:26:40.000 172.19.0.1:55464 > 172.19.0.4:19092: 140 bytes
	// 07:26:40.001 172.19.0.4:19092 > 172.19.0.1:55464: 55 bytes
	// 07:26:40.008 172.19.0.1:55464 > 172.19.0.4:19092: 140 bytes
	// closed
	// 3 packets written, 0 dropped
}
