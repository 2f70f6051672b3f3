package detect_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
)

// The seed's non-idempotent retry: attempt 27 timed out after the leader
// appended it at offset 112, and the capture holds no answer to attempt 28.
func Example() {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	conn := &decode.ConnInfo{ID: 1, Client: netip.MustParseAddrPort("172.18.0.1:40312"),
		Broker: netip.MustParseAddrPort("172.18.0.3:19092"), DetectedBy: "sniff"}
	batch := decode.Batch{Topic: "test", Magic: 2, CRC: 0x0a1b2c3d, Hash: 42,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 10}

	d := detect.New(detect.Options{})
	first := batch
	first.Response = &decode.PartitionResponse{ErrorCode: 7, BaseOffset: 112, LogAppendTime: -1}
	d.Produce(&decode.Exchange{Conn: conn, CorrelationID: 27, Acks: -1, RequestTime: t0,
		Responded: true, ResponseTime: t0.Add(5 * time.Second), Batches: []decode.Batch{first}})
	d.Produce(&decode.Exchange{Conn: conn, CorrelationID: 28, Acks: -1, RequestTime: t0.Add(5001 * time.Millisecond),
		NoResponse: decode.NoResponseEndOfCapture, Batches: []decode.Batch{batch}})

	for _, f := range d.Flush() {
		fmt.Println(f.Verdict, f.AppendedOffsets)
		fmt.Println(f.Reason)
		for _, a := range f.Attempts[1:] {
			fmt.Println(a.CorrelationID, a.Cause, a.CauseError, a.GapMillis)
		}
	}
	// Output:
	// unconfirmed [112]
	// attempt 28 has no response in the capture; producer not idempotent: the log may hold the batch twice
	// 28 broker_error REQUEST_TIMED_OUT 5001
}

// A streaming Detector reports a finding as soon as the last attempt is answered
// with no error, and Advance decides the rest when no traffic flows.
func Example_live() {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	conn := &decode.ConnInfo{ID: 1, Client: netip.MustParseAddrPort("172.18.0.1:40312"),
		Broker: netip.MustParseAddrPort("172.18.0.3:19092"), DetectedBy: "port"}
	send := func(corr int32, at time.Duration, crc uint32, code int16, offset int64) *decode.Exchange {
		b := decode.Batch{Topic: "test", Magic: 2, CRC: crc, Hash: uint64(crc),
			ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 10,
			Response: &decode.PartitionResponse{ErrorCode: code, BaseOffset: offset, LogAppendTime: -1}}
		return &decode.Exchange{Conn: conn, CorrelationID: corr, Acks: -1, RequestTime: t0.Add(at),
			Responded: true, ResponseTime: t0.Add(at + 5*time.Millisecond), Batches: []decode.Batch{b}}
	}

	d := detect.New(detect.Options{Streaming: true, Settle: 30 * time.Second, OnFinding: func(f detect.Finding) {
		fmt.Println(f.Attempts[0].CorrelationID, f.Verdict, len(f.Attempts), "attempts, revision", f.Revision)
	}})
	d.Produce(send(27, 0, 0xa, 7, 112))                    // REQUEST_TIMED_OUT after the append
	d.Produce(send(28, 100*time.Millisecond, 0xa, 0, 113)) // the retry, appended again: decided
	d.Produce(send(40, time.Second, 0xb, 7, 120))          // REQUEST_TIMED_OUT
	d.Produce(send(41, 2*time.Second, 0xb, 7, 121))        // and again: waits for a retry
	fmt.Println("idle")
	d.Advance(t0.Add(time.Minute)) // no retry came within Settle
	fmt.Println(len(d.Flush()), "left at the end")
	// Output:
	// 27 duplicated 2 attempts, revision 0
	// idle
	// 40 duplicated 2 attempts, revision 0
	// 0 left at the end
}
