package detect

import (
	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/internal/fifo"
)

// maxConnEnds bounds the connection ends remembered at once; beyond it the
// oldest is forgotten (Stats.ConnEndsForgotten) and an attempt on that
// connection shows no end.
const maxConnEnds = 1 << 16

// AnswerLostWindow is how soon after an answer an RST from the broker must
// come for a re-send on another connection to be taken as answer_lost: a
// client reads its socket at once, so an RST much later comes after it read
// the answer (and, on most systems, an RST discards only the data still
// unread).
const AnswerLostWindow = 200e6 // ns

// connEnds holds how the connections of remembered attempts ended
// (decode.EndSink), for as long as a batch may still be built from them.
type connEnds struct {
	m     map[*decode.ConnInfo]decode.ConnEnd
	order fifo.Queue[endQueued]
}

type endQueued struct {
	conn *decode.ConnInfo
	time int64
}

// ConnEnd implements decode.EndSink: how connection c ended. The attempts
// on c of findings built from now on say it (Attempt.End), and the causes
// of their re-sends follow from it.
func (d *Detector) ConnEnd(c *decode.ConnInfo, e decode.ConnEnd) {
	if c == nil {
		return
	}
	ce := &d.ends
	if ce.m == nil {
		ce.m = make(map[*decode.ConnInfo]decode.ConnEnd)
	}
	if _, ok := ce.m[c]; ok {
		return // the first end counts
	}
	for len(ce.m) >= maxConnEnds {
		q, _ := ce.order.Front()
		ce.order.Pop()
		delete(ce.m, q.conn)
		d.stats.ConnEndsForgotten++
	}
	ce.m[c] = e
	ce.order.Push(endQueued{conn: c, time: unixNano(e.Time)})
}

// expireEnds forgets the ends older than twice the window: a remembered
// batch was last sent within the window, and the attempts before it, whose
// ends judge the causes, seldom came a window earlier still.
func (d *Detector) expireEnds() {
	ce := &d.ends
	cutoff := d.newest - 2*d.window
	for {
		q, ok := ce.order.Front()
		if !ok || q.time >= cutoff {
			return
		}
		ce.order.Pop()
		delete(ce.m, q.conn)
	}
}

// endOf is how the connection of a ended, if known.
func (ce *connEnds) endOf(a *attempt) (decode.ConnEnd, bool) {
	if ce == nil || ce.m == nil || a.conn == nil {
		return decode.ConnEnd{}, false
	}
	e, ok := ce.m[a.conn]
	return e, ok
}
