package pipeline

import (
	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
)

// AttemptSink sees every produce exchange and connection end a run
// decodes, in capture order, before detect does, and the transaction
// requests (EndTxn, InitProducerId) detect reads: the --attempts publisher
// (fleet.Publisher). Unlike Options.Observe it sees the copies of a
// request on another connection too (detect folds those; a correlation's
// own detect folds them again). x is the Sink's during the call only; the
// sink may call Batch.RecordPrints and give a batch its prints back
// (Batch.SetRecordPrints), which detect then reads. Fetch responses do not
// go to it: a correlation decides on the produce answers alone (fleet's
// doc says why).
type AttemptSink interface {
	Exchange(x *decode.Exchange)
	ConnEnd(c *decode.ConnInfo, e decode.ConnEnd)
	decode.TxnSink
}

// detectSink is what a run hands the Detector: its decode.Sink and the
// optional sinks decode and the sharded merger call.
type detectSink interface {
	decode.Sink
	decode.EndSink
	decode.FetchSink
	decode.TxnSink
}

// attemptTap hands every exchange, connection end and transaction request
// to an AttemptSink, then to the Detector.
type attemptTap struct {
	*detect.Detector
	out AttemptSink
}

func (t attemptTap) Produce(x *decode.Exchange) {
	t.out.Exchange(x)
	t.Detector.Produce(x)
}

func (t attemptTap) ConnEnd(c *decode.ConnInfo, e decode.ConnEnd) {
	t.out.ConnEnd(c, e)
	t.Detector.ConnEnd(c, e)
}

func (t attemptTap) EndTxn(x *decode.EndTxn) {
	t.out.EndTxn(x)
	t.Detector.EndTxn(x)
}

func (t attemptTap) InitProducerID(x *decode.InitProducerID) {
	t.out.InitProducerID(x)
	t.Detector.InitProducerID(x)
}

// sinkOf is what feeds det in a run of st: det itself, or a tap in front
// of it when the run publishes its attempts.
func sinkOf(st stages, det *detect.Detector) detectSink {
	if st.attempts == nil {
		return det
	}
	return attemptTap{Detector: det, out: st.attempts}
}
