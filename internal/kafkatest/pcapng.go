package kafkatest

import (
	"bufio"
	"fmt"
	"io"

	"github.com/gopacket/gopacket/pcapgo"
)

// ToPcapng copies the pcap read from src to dst as a pcapng, the format
// dumpcap and Wireshark write: one interface of the pcap's link type and
// snap length, each packet an Enhanced Packet Block with its timestamp and
// lengths. Timestamps are in nanoseconds whatever the pcap's resolution
// (pcapgo's NgWriter writes if_tsresol 9; dumpcap writes microseconds by
// default). It returns the packets written.
func ToPcapng(dst io.Writer, src io.Reader) (int64, error) {
	r, err := pcapgo.NewReader(bufio.NewReaderSize(src, 1<<20))
	if err != nil {
		return 0, fmt.Errorf("kafkatest: to pcapng: %w", err)
	}
	bw := bufio.NewWriterSize(dst, 1<<20)
	w, err := pcapgo.NewNgWriterInterface(bw, pcapgo.NgInterface{LinkType: r.LinkType(), SnapLength: r.Snaplen()}, pcapgo.DefaultNgWriterOptions)
	if err != nil {
		return 0, fmt.Errorf("kafkatest: to pcapng: %w", err)
	}
	var n int64
	for {
		data, ci, err := r.ZeroCopyReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, fmt.Errorf("kafkatest: to pcapng: packet %d: %w", n+1, err)
		}
		if err := w.WritePacket(ci, data); err != nil {
			return n, fmt.Errorf("kafkatest: to pcapng: packet %d: %w", n+1, err)
		}
		n++
	}
	if err := w.Flush(); err != nil {
		return n, fmt.Errorf("kafkatest: to pcapng: %w", err)
	}
	return n, bw.Flush()
}
