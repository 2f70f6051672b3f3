package profile

// Fixtures copied from detect's tests (detect/helpers_test.go): the same
// connections and exchanges, so that profiles are built from what detect
// finds in them.

import (
	"net/netip"
	"time"

	"github.com/kdupcap/kdupcap/decode"
)

var (
	t0    = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	conn1 = &decode.ConnInfo{ID: 1, Client: netip.MustParseAddrPort("10.0.0.1:50000"),
		Broker: netip.MustParseAddrPort("10.0.0.2:9092"), DetectedBy: "port", FirstSeen: t0}
	conn2 = &decode.ConnInfo{ID: 2, Client: netip.MustParseAddrPort("10.0.0.1:50001"),
		Broker: netip.MustParseAddrPort("10.0.0.2:9092"), DetectedBy: "port", FirstSeen: t0}
	rdkafka = "rdkafka"
)

const noAnswer = -1 // a respMs meaning the exchange has no response

func ms(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Millisecond))) }

// plain is a non-idempotent batch on topic "test" partition 0.
func plain(crc uint32) decode.Batch {
	return decode.Batch{Topic: "test", Partition: 0, Magic: 2, CRC: crc, Hash: uint64(crc) * 31,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 10, LastOffsetDelta: 9, Length: 700}
}

// idem is an idempotent batch of producer 0 epoch 0 on topic "test"
// partition 0; crc also sets the bytes hash.
func idem(seq int32, crc uint32) decode.Batch {
	return decode.Batch{Topic: "test", Partition: 0, Magic: 2, CRC: crc, Hash: uint64(crc) * 31,
		ProducerID: 0, ProducerEpoch: 0, FirstSequence: seq, NumRecords: 1, LastOffsetDelta: 0, Length: 90}
}

// ex builds an exchange on c sent at sentMs; respMs < 0 means no response,
// else every batch is answered with code at offset.
func ex(c *decode.ConnInfo, corrID int32, sentMs, respMs float64, code int16, offset int64, bs ...decode.Batch) *decode.Exchange {
	x := &decode.Exchange{Conn: c, ClientID: &rdkafka, CorrelationID: corrID, Version: 7, Acks: -1,
		TimeoutMillis: 5000, RequestTime: ms(sentMs)}
	if respMs < 0 {
		x.NoResponse = decode.NoResponseEndOfCapture
	} else {
		x.Responded = true
		x.ResponseTime = ms(respMs)
	}
	for _, b := range bs {
		if x.Responded {
			b.Response = &decode.PartitionResponse{ErrorCode: code, BaseOffset: offset, LogAppendTime: -1, LogStartOffset: 0}
		}
		x.Batches = append(x.Batches, b)
	}
	return x
}

func noResp(x *decode.Exchange, why decode.NoResponse) *decode.Exchange { x.NoResponse = why; return x }

// acks0 makes x an acks=0 request: the broker never answers one.
func acks0(x *decode.Exchange) *decode.Exchange {
	x.Acks = 0
	x.Responded, x.ResponseTime, x.NoResponse = false, time.Time{}, decode.NoResponseAcks0
	for i := range x.Batches {
		x.Batches[i].Response = nil
	}
	return x
}

// recs is a non-idempotent batch holding the records named by content
// hashes, at offset deltas 0..n-1; crc tells its bytes apart.
func recs(crc uint32, hashes ...uint64) decode.Batch {
	b := plain(crc)
	b.NumRecords = int32(len(hashes))
	b.LastOffsetDelta = b.NumRecords - 1
	p := make([]decode.RecordPrint, len(hashes))
	for i, h := range hashes {
		p[i] = decode.RecordPrint{Hash: h, OffsetDelta: int32(i), Index: int32(i)}
	}
	b.SetRecordPrints(p)
	return b
}
