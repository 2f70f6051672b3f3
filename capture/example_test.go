package capture_test

import (
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
