package kafkatest

import (
	"bytes"
	"encoding/binary"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// TestRecut: a loopback segment of 5000 bytes becomes four of at most 1500
// bytes of IP, in order, their payloads the original's, sequence numbers
// advanced, IP and TCP checksums right, FIN and PSH on the last only; a
// small segment and a UDP datagram are copied unchanged.
func TestRecut(t *testing.T) {
	payload := bytes.Repeat([]byte("0123456789"), 500)
	big := tcpFrame(t, 1000, payload, true)
	small := tcpFrame(t, 6000, []byte("tail"), false)
	udp := udpFrame(t)
	var in bytes.Buffer
	w := pcapgo.NewWriter(&in)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	ts := time.Unix(1700000000, 123000)
	for _, f := range [][]byte{big, small, udp} {
		if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(f), Length: len(f)}, f); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	n, err := Recut(&out, &in, 1500)
	if err != nil {
		t.Fatal(err)
	}
	r, err := pcapgo.NewReader(&out)
	if err != nil {
		t.Fatal(err)
	}
	var frames [][]byte
	for {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		if !ci.Timestamp.Equal(ts) {
			t.Errorf("packet %d at %v, want %v", len(frames), ci.Timestamp, ts)
		}
		frames = append(frames, data)
	}
	if n != int64(len(frames)) || len(frames) != 4+2 {
		t.Fatalf("Recut says %d packets, the file holds %d, want 6", n, len(frames))
	}
	var got []byte
	for i, f := range frames[:4] {
		ip := f[ethHeader:]
		tcp := ip[20:]
		if l := int(binary.BigEndian.Uint16(ip[2:])); l > 1500 || l != len(ip) {
			t.Errorf("piece %d: IP length %d of %d bytes", i, l, len(ip))
		}
		if checksum(0, ip[:20]) != 0 {
			t.Errorf("piece %d: IP checksum wrong", i)
		}
		pseudo := uint32(binary.BigEndian.Uint16(ip[12:])) + uint32(binary.BigEndian.Uint16(ip[14:])) +
			uint32(binary.BigEndian.Uint16(ip[16:])) + uint32(binary.BigEndian.Uint16(ip[18:])) + 6 + uint32(len(tcp))
		if checksum(pseudo, tcp) != 0 {
			t.Errorf("piece %d: TCP checksum wrong", i)
		}
		if seq := binary.BigEndian.Uint32(tcp[4:]); seq != 1000+uint32(len(got)) {
			t.Errorf("piece %d: seq %d, want %d", i, seq, 1000+len(got))
		}
		last := i == 3
		if fin, psh := tcp[tcpFlags]&tcpFlagFIN != 0, tcp[tcpFlags]&tcpFlagPSH != 0; fin != last || psh != last {
			t.Errorf("piece %d: FIN %v PSH %v", i, fin, psh)
		}
		got = append(got, tcp[20:]...)
	}
	if !bytes.Equal(got, payload) {
		t.Errorf("the pieces hold %d bytes, not the segment's %d", len(got), len(payload))
	}
	if !bytes.Equal(frames[4], small) || !bytes.Equal(frames[5], udp) {
		t.Errorf("small segment or datagram changed")
	}
}

// tcpFrame is an Ethernet frame of an IPv4 TCP segment from
// 127.0.0.1:40000 to 127.0.0.1:9092 at seq, PSH|ACK, with FIN when fin.
func tcpFrame(t *testing.T, seq uint32, payload []byte, fin bool) []byte {
	t.Helper()
	eth := &layers.Ethernet{EthernetType: layers.EthernetTypeIPv4, SrcMAC: make([]byte, 6), DstMAC: make([]byte, 6)}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: []byte{127, 0, 0, 1}, DstIP: []byte{127, 0, 0, 1}, Id: 7}
	tcp := &layers.TCP{SrcPort: 40000, DstPort: 9092, Seq: seq, Ack: 1, ACK: true, PSH: true, FIN: fin, Window: 512}
	if err := tcp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, eth, ip, tcp, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func udpFrame(t *testing.T) []byte {
	t.Helper()
	eth := &layers.Ethernet{EthernetType: layers.EthernetTypeIPv4, SrcMAC: make([]byte, 6), DstMAC: make([]byte, 6)}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: []byte{127, 0, 0, 1}, DstIP: []byte{127, 0, 0, 1}}
	udp := &layers.UDP{SrcPort: 1, DstPort: 2}
	if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, eth, ip, udp, gopacket.Payload(bytes.Repeat([]byte{'u'}, 3000))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestBulkResends: the re-sends derived from a broker's exchanges and its
// log, and the runs they refuse.
func TestBulkResends(t *testing.T) {
	const broker = "127.0.0.1:9092"
	batch := func(base int64, crc uint32, pid int64, seq int32) Batch {
		return Batch{BaseOffset: base, NumRecords: 2, CRC: crc, ProducerID: pid, FirstSequence: seq}
	}
	rec := func(base int64, v string) []Record {
		return []Record{{Offset: base, BatchBaseOffset: base, Value: v + "-a"}, {Offset: base + 1, BatchBaseOffset: base, Value: v + "-b"}}
	}
	x := func(conn string, corr int32, parts []string, offs ...int64) Exchange {
		return Exchange{Conn: conn, CorrelationID: corr, Partitions: parts, Codes: make([]int16, len(parts)), BaseOffsets: offs}
	}
	// Partition 0: a non-idempotent batch appended at 0 and again at 4
	// (its retry), then another at 2. Partition 1: an idempotent batch
	// at 0, answered again with 0 (deduplicated).
	log := &Log{Topic: bulkTopic, Partitions: []PartitionLog{
		{Partition: 0, Batches: []Batch{batch(0, 11, -1, -1), batch(2, 22, -1, -1), batch(4, 11, -1, -1)},
			Records: slices.Concat(rec(0, "x"), rec(2, "y"), rec(4, "x"))},
		{Partition: 1, Batches: []Batch{batch(0, 33, 7, 0)}, Records: rec(0, "z")},
	}}
	xs := []Exchange{
		x("c1", 5, []string{"bulk/0"}, 0),
		x("c1", 6, []string{"bulk/0"}, 2),
		x("c2", 3, []string{"bulk/1"}, 0),
		x("c1", 7, []string{"bulk/0"}, 4),
		x("c2", 4, []string{"bulk/1"}, 0),
	}
	got, err := bulkResends(xs, log, broker)
	if err != nil {
		t.Fatal(err)
	}
	want := []BulkResend{
		{Client: "c1", Broker: broker, Topic: bulkTopic, Partition: 0, CorrelationIDs: []int32{5, 7}, Verdict: "duplicated", AppendedOffsets: []int64{0, 4}},
		{Client: "c2", Broker: broker, Topic: bulkTopic, Partition: 1, CorrelationIDs: []int32{3, 4}, Idempotent: true, Verdict: "deduplicated", AppendedOffsets: []int64{0}},
	}
	if len(got) != len(want) {
		t.Fatalf("%d re-sends, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Client != w.Client || g.Partition != w.Partition || !slices.Equal(g.CorrelationIDs, w.CorrelationIDs) ||
			g.Verdict != w.Verdict || g.Idempotent != w.Idempotent || !slices.Equal(g.AppendedOffsets, w.AppendedOffsets) {
			t.Errorf("re-send %d: %+v, want %+v", i, g, w)
		}
	}

	once := &Log{Topic: bulkTopic, Partitions: log.Partitions[1:]}
	for _, tc := range []struct {
		name string
		xs   []Exchange
		log  *Log
		want string
	}{
		{"the log holds a batch twice that no answer explains", xs[:3], log, "no re-send explains"},
		{"an error answered", append(slices.Clone(xs[:2]), Exchange{Conn: "c2", CorrelationID: 3, Partitions: []string{"bulk/1"}, Codes: []int16{6}, BaseOffsets: []int64{-1}}), log, "answered 6"},
		{"no re-send at all", []Exchange{xs[2]}, once, "holds no re-send"},
	} {
		if _, err := bulkResends(tc.xs, tc.log, broker); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

// TestToPcapng: a pcap of either timestamp resolution copied to pcapng
// reads back packet for packet, with the same bytes, timestamps, lengths
// and link type.
func TestToPcapng(t *testing.T) {
	frames := [][]byte{tcpFrame(t, 1000, bytes.Repeat([]byte("kafka"), 300), true), tcpFrame(t, 2500, []byte("tail"), false), udpFrame(t)}
	for _, nano := range []bool{false, true} {
		var in bytes.Buffer
		w := pcapgo.NewWriter(&in)
		if nano {
			w = pcapgo.NewWriterNanos(&in)
		}
		if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
			t.Fatal(err)
		}
		var cis []gopacket.CaptureInfo
		for i, f := range frames {
			ci := gopacket.CaptureInfo{Timestamp: time.Unix(1700000000, int64(i)*1001001), CaptureLength: len(f), Length: len(f) + i}
			if !nano {
				ci.Timestamp = ci.Timestamp.Truncate(time.Microsecond)
			}
			cis = append(cis, ci)
			if err := w.WritePacket(ci, f); err != nil {
				t.Fatal(err)
			}
		}
		var out bytes.Buffer
		n, err := ToPcapng(&out, &in)
		if err != nil || n != int64(len(frames)) {
			t.Fatalf("nano %v: ToPcapng = %d, %v; want %d packets", nano, n, err, len(frames))
		}
		r, err := pcapgo.NewNgReader(&out, pcapgo.DefaultNgReaderOptions)
		if err != nil {
			t.Fatal(err)
		}
		if r.LinkType() != layers.LinkTypeEthernet {
			t.Errorf("nano %v: link type %v", nano, r.LinkType())
		}
		for i := range frames {
			data, ci, err := r.ReadPacketData()
			if err != nil {
				t.Fatalf("nano %v: packet %d: %v", nano, i, err)
			}
			if !bytes.Equal(data, frames[i]) || !ci.Timestamp.Equal(cis[i].Timestamp) || ci.CaptureLength != cis[i].CaptureLength || ci.Length != cis[i].Length {
				t.Errorf("nano %v: packet %d: %v %d/%d, want %v %d/%d", nano, i, ci.Timestamp, ci.CaptureLength, ci.Length, cis[i].Timestamp, cis[i].CaptureLength, cis[i].Length)
			}
		}
		if _, _, err := r.ReadPacketData(); err != io.EOF {
			t.Errorf("nano %v: after the packets: %v, want EOF", nano, err)
		}
	}
}
