// Command readloop is the practical limit benchrun measures kdupcap against:
// it reads every packet of a pcap or pcapng file with pcapgo's
// ReadPacketData (a copy of each packet, no decoding at all), or with
// -zerocopy its ZeroCopyReadPacketData (no copy: what kdupcap's
// capture.Source uses), and prints the packets and captured bytes it saw as
// one JSON object.
//
//	readloop [-zerocopy] FILE
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/pcapgo"
)

// result is what readloop prints.
type result struct {
	Packets int64 `json:"packets"`
	Bytes   int64 `json:"bytes"` // captured bytes of all packets
}

func main() {
	zeroCopy := flag.Bool("zerocopy", false, "ZeroCopyReadPacketData instead of ReadPacketData")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: readloop [-zerocopy] FILE")
		os.Exit(2)
	}
	res, err := readLoop(flag.Arg(0), *zeroCopy)
	if err != nil {
		fmt.Fprintf(os.Stderr, "readloop: %v\n", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		fmt.Fprintf(os.Stderr, "readloop: %v\n", err)
		os.Exit(1)
	}
}

// readLoop reads every packet of the pcap or pcapng file at path. The
// 64 KiB buffer is the one kdupcap's capture.Source reads through.
func readLoop(path string, zeroCopy bool) (result, error) {
	var res result
	f, err := os.Open(path)
	if err != nil {
		return res, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	var read func() ([]byte, gopacket.CaptureInfo, error)
	if magic, _ := br.Peek(4); bytes.Equal(magic, []byte{0x0a, 0x0d, 0x0d, 0x0a}) {
		r, err := pcapgo.NewNgReader(br, pcapgo.DefaultNgReaderOptions)
		if err != nil {
			return res, fmt.Errorf("%s: %w", path, err)
		}
		read = r.ReadPacketData
		if zeroCopy {
			read = r.ZeroCopyReadPacketData
		}
	} else {
		r, err := pcapgo.NewReader(br)
		if err != nil {
			return res, fmt.Errorf("%s: %w", path, err)
		}
		read = r.ReadPacketData
		if zeroCopy {
			read = r.ZeroCopyReadPacketData
		}
	}
	for {
		data, _, err := read()
		if err == io.EOF {
			return res, nil
		}
		if err != nil {
			return res, fmt.Errorf("%s: packet %d: %w", path, res.Packets+1, err)
		}
		res.Packets++
		res.Bytes += int64(len(data))
	}
}
