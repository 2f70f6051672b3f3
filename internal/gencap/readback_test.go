package gencap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/netip"
	"sort"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file reads a generated capture back, independently of the generator:
// pcapgo and gopacket layers for packets, an in-order TCP reassembler that
// drops exact retransmissions, and kmsg for Kafka frames.

// flowKey is one direction of a TCP connection.
type flowKey struct{ src, dst netip.AddrPort }

// flow is the reassembled bytes of one direction.
type flow struct {
	next    uint32
	started bool
	data    []byte
}

// readBack is what a capture holds, as read back.
type readBack struct {
	packets        int64
	syns           int64
	retransmits    int64
	lastMicros     int64
	flows          map[flowKey]*flow
	requests       []request
	responses      int64
	batches        int64
	records        int64
	byVersion      map[int16]int64
	resendsByCorr  map[connCorr]*request // produce requests by connection and correlation ID
	responseByCorr map[connCorr]*kmsg.ProduceResponse
}

type connCorr struct {
	client, broker netip.AddrPort
	corr           int32
}

type request struct {
	key, version int16
	corr         int32
	clientID     string
	produce      *kmsg.ProduceRequest
}

// readCapture reads a pcap written by Generate and checks every packet,
// stream, frame and batch in it.
func readCapture(r io.Reader) (*readBack, error) {
	pr, err := pcapgo.NewReader(r)
	if err != nil {
		return nil, err
	}
	if pr.LinkType() != layers.LinkTypeEthernet {
		return nil, fmt.Errorf("link type %v", pr.LinkType())
	}
	rb := &readBack{
		flows:          map[flowKey]*flow{},
		byVersion:      map[int16]int64{},
		resendsByCorr:  map[connCorr]*request{},
		responseByCorr: map[connCorr]*kmsg.ProduceResponse{},
	}
	var (
		eth     layers.Ethernet
		ip      layers.IPv4
		tcp     layers.TCP
		payload gopacket.Payload
		decoded []gopacket.LayerType
	)
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &ip, &tcp, &payload)
	for {
		data, ci, err := pr.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("packet %d: %w", rb.packets+1, err)
		}
		rb.packets++
		us := ci.Timestamp.UnixMicro()
		if us <= rb.lastMicros {
			return nil, fmt.Errorf("packet %d: time %d not after %d", rb.packets, us, rb.lastMicros)
		}
		rb.lastMicros = us
		if err := parser.DecodeLayers(data, &decoded); err != nil && len(decoded) < 3 {
			return nil, fmt.Errorf("packet %d: %w", rb.packets, err)
		}
		if len(decoded) < 3 {
			return nil, fmt.Errorf("packet %d: only %v", rb.packets, decoded)
		}
		if err := checkChecksums(data); err != nil {
			return nil, fmt.Errorf("packet %d: %w", rb.packets, err)
		}
		src, _ := netip.AddrFromSlice(ip.SrcIP)
		dst, _ := netip.AddrFromSlice(ip.DstIP)
		k := flowKey{netip.AddrPortFrom(src, uint16(tcp.SrcPort)), netip.AddrPortFrom(dst, uint16(tcp.DstPort))}
		f := rb.flows[k]
		if tcp.SYN {
			if f != nil && len(f.data) > 0 {
				return nil, fmt.Errorf("packet %d: %v reused", rb.packets, k)
			}
			f = &flow{next: tcp.Seq + 1, started: true}
			rb.flows[k] = f
			if !tcp.ACK {
				rb.syns++
			}
			continue
		}
		if f == nil {
			return nil, fmt.Errorf("packet %d: %v without SYN", rb.packets, k)
		}
		n := uint32(len(tcp.Payload))
		switch {
		case n == 0:
		case tcp.Seq == f.next:
			f.data = append(f.data, tcp.Payload...)
			f.next += n
		case tcp.Seq+n == f.next && bytes.Equal(f.data[len(f.data)-int(n):], tcp.Payload):
			rb.retransmits++
		default:
			return nil, fmt.Errorf("packet %d: %v seq %d, want %d", rb.packets, k, tcp.Seq, f.next)
		}
		if tcp.FIN {
			f.next++
		}
	}
	// Streams, in a stable order.
	keys := make([]flowKey, 0, len(rb.flows))
	for k := range rb.flows {
		if k.dst.Port() == 9092 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].src.String() < keys[j].src.String() })
	for _, k := range keys {
		if err := rb.parseConn(k.src, k.dst, rb.flows[k].data, rb.flows[flowKey{k.dst, k.src}]); err != nil {
			return nil, err
		}
	}
	return rb, nil
}

// checkChecksums recomputes the IPv4 and TCP checksums of an Ethernet
// frame: both must sum to 0xffff with the stored values in place.
func checkChecksums(frame []byte) error {
	ipHdr := frame[14:34]
	if sum16(0, ipHdr) != 0xffff {
		return errors.New("bad ipv4 checksum")
	}
	total := int(binary.BigEndian.Uint16(ipHdr[2:]))
	if total < 40 || 14+total > len(frame) {
		return fmt.Errorf("ipv4 total length %d in a %d-byte frame", total, len(frame))
	}
	seg := frame[34 : 14+total] // short frames are padded to 60 bytes
	pseudo := make([]byte, 0, 12)
	pseudo = append(pseudo, ipHdr[12:20]...)
	pseudo = append(pseudo, 0, 6)
	pseudo = binary.BigEndian.AppendUint16(pseudo, uint16(len(seg)))
	if sum16(sum16(0, pseudo), seg) != 0xffff {
		return errors.New("bad tcp checksum")
	}
	return nil
}

func sum16(acc uint32, b []byte) uint32 {
	for len(b) >= 2 {
		acc += uint32(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint32(b[0]) << 8
	}
	for acc > 0xffff {
		acc = acc&0xffff + acc>>16
	}
	return acc
}

// frames splits a stream into size-prefixed frames; the stream must end at
// a frame boundary.
func frames(stream []byte) ([][]byte, error) {
	var out [][]byte
	for len(stream) > 0 {
		if len(stream) < 4 {
			return nil, fmt.Errorf("%d bytes left, no frame size", len(stream))
		}
		n := int32(binary.BigEndian.Uint32(stream))
		if n < 0 || int(n) > len(stream)-4 {
			return nil, fmt.Errorf("frame size %d with %d bytes left", n, len(stream)-4)
		}
		out = append(out, stream[4:4+n])
		stream = stream[4+n:]
	}
	return out, nil
}

func (rb *readBack) parseConn(client, broker netip.AddrPort, reqStream []byte, back *flow) error {
	reqFrames, err := frames(reqStream)
	if err != nil {
		return fmt.Errorf("%v->%v: %w", client, broker, err)
	}
	byCorr := map[int32]*request{}
	for i, fr := range reqFrames {
		req, err := parseRequest(fr)
		if err != nil {
			return fmt.Errorf("%v->%v request %d: %w", client, broker, i, err)
		}
		if byCorr[req.corr] != nil {
			return fmt.Errorf("%v->%v: correlation ID %d twice", client, broker, req.corr)
		}
		byCorr[req.corr] = req
		rb.requests = append(rb.requests, *req)
		if req.produce != nil {
			rb.byVersion[req.version]++
			rb.resendsByCorr[connCorr{client, broker, req.corr}] = req
			for _, t := range req.produce.Topics {
				for _, p := range t.Partitions {
					n, err := checkBatch(p.Records)
					if err != nil {
						return fmt.Errorf("%v->%v corr %d %s/%d: %w", client, broker, req.corr, t.Topic, p.Partition, err)
					}
					rb.batches++
					rb.records += int64(n)
				}
			}
		}
	}
	if back == nil {
		return fmt.Errorf("%v->%v: no reverse direction", client, broker)
	}
	respFrames, err := frames(back.data)
	if err != nil {
		return fmt.Errorf("%v->%v: %w", broker, client, err)
	}
	for i, fr := range respFrames {
		if len(fr) < 4 {
			return fmt.Errorf("%v->%v response %d: short", broker, client, i)
		}
		corr := int32(binary.BigEndian.Uint32(fr))
		req := byCorr[corr]
		if req == nil {
			return fmt.Errorf("%v->%v response %d: unknown correlation ID %d", broker, client, i, corr)
		}
		body := fr[4:]
		switch req.key {
		case 0:
			if req.produce.Acks == 0 {
				return fmt.Errorf("%v->%v: response to acks=0 request %d", broker, client, corr)
			}
			if req.version >= 9 {
				if len(body) == 0 || body[0] != 0 {
					return fmt.Errorf("%v->%v response %d: bad tag section", broker, client, corr)
				}
				body = body[1:]
			}
			resp := &kmsg.ProduceResponse{Version: req.version}
			if err := resp.ReadFrom(body); err != nil {
				return fmt.Errorf("%v->%v response %d: %w", broker, client, corr, err)
			}
			rb.responses++
			rb.responseByCorr[connCorr{client, broker, corr}] = resp
		case 18:
			resp := &kmsg.ApiVersionsResponse{Version: req.version}
			if err := resp.ReadFrom(body); err != nil || resp.ErrorCode != 0 {
				return fmt.Errorf("%v->%v api versions response %d: %v", broker, client, corr, err)
			}
		default:
			return fmt.Errorf("%v->%v: response to key %d", broker, client, req.key)
		}
	}
	return nil
}

// parseRequest parses a request frame's header and, for Produce and
// ApiVersions, its body.
func parseRequest(fr []byte) (*request, error) {
	if len(fr) < 10 {
		return nil, errors.New("short header")
	}
	req := &request{
		key:     int16(binary.BigEndian.Uint16(fr)),
		version: int16(binary.BigEndian.Uint16(fr[2:])),
		corr:    int32(binary.BigEndian.Uint32(fr[4:])),
	}
	n := int(int16(binary.BigEndian.Uint16(fr[8:])))
	if n < 0 || 10+n > len(fr) {
		return nil, fmt.Errorf("client id length %d", n)
	}
	req.clientID = string(fr[10 : 10+n])
	body := fr[10+n:]
	kr := kmsg.RequestForKey(req.key)
	if kr == nil {
		return nil, fmt.Errorf("unknown key %d", req.key)
	}
	kr.SetVersion(req.version)
	if kr.IsFlexible() {
		if len(body) == 0 || body[0] != 0 {
			return nil, errors.New("bad tag section")
		}
		body = body[1:]
	}
	if err := kr.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("key %d v%d: %w", req.key, req.version, err)
	}
	switch r := kr.(type) {
	case *kmsg.ProduceRequest:
		req.produce = r
	case *kmsg.ApiVersionsRequest:
	default:
		return nil, fmt.Errorf("unexpected key %d", req.key)
	}
	return req, nil
}

// checkBatch checks one RecordBatch v2: lengths, CRC-32C, codec,
// decompressed records; it returns the record count.
func checkBatch(b []byte) (int32, error) {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		return 0, err
	}
	switch {
	case int(rb.Length) != len(b)-12:
		return 0, fmt.Errorf("batch length %d, have %d", rb.Length, len(b)-12)
	case rb.Magic != 2:
		return 0, fmt.Errorf("magic %d", rb.Magic)
	case uint32(rb.CRC) != crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)):
		return 0, errors.New("bad crc")
	case rb.NumRecords < minRecords || rb.NumRecords > maxRecords || rb.LastOffsetDelta != rb.NumRecords-1:
		return 0, fmt.Errorf("%d records, last offset delta %d", rb.NumRecords, rb.LastOffsetDelta)
	case rb.FirstOffset != 0 || rb.PartitionLeaderEpoch != -1:
		return 0, errors.New("producer batch with offset or epoch set")
	case (rb.ProducerID < 0) != (rb.FirstSequence < 0):
		return 0, fmt.Errorf("producer id %d with sequence %d", rb.ProducerID, rb.FirstSequence)
	}
	raw, err := decompress(Codec(rb.Attributes&7), rb.Records)
	if err != nil {
		return 0, err
	}
	for i := int32(0); i < rb.NumRecords; i++ {
		n, w := binary.Varint(raw)
		if w <= 0 || n < 0 || int(n) > len(raw)-w {
			return 0, fmt.Errorf("record %d: length %d", i, n)
		}
		var r kmsg.Record
		if err := r.ReadFrom(raw[:w+int(n)]); err != nil {
			return 0, fmt.Errorf("record %d: %w", i, err)
		}
		if r.OffsetDelta != i || len(r.Value) < minValueBytes || len(r.Value) > maxValueBytes {
			return 0, fmt.Errorf("record %d: offset delta %d, value %d bytes", i, r.OffsetDelta, len(r.Value))
		}
		raw = raw[w+int(n):]
	}
	if len(raw) != 0 {
		return 0, fmt.Errorf("%d bytes after the records", len(raw))
	}
	return rb.NumRecords, nil
}

func decompress(c Codec, b []byte) ([]byte, error) {
	switch c {
	case CodecNone:
		return b, nil
	case CodecGzip:
		r, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(r)
	case CodecSnappy:
		return snappy.Decode(nil, b)
	case CodecLZ4:
		return io.ReadAll(lz4.NewReader(bytes.NewReader(b)))
	case CodecZstd:
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return d.DecodeAll(b, nil)
	}
	return nil, fmt.Errorf("codec %d", c)
}
