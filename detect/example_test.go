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
		NoResponse: "end of capture", Batches: []decode.Batch{batch}})

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
