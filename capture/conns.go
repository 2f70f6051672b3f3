package capture

import (
	"slices"
	"time"

	"github.com/gopacket/gopacket/reassembly"
)

// The connections held at once are bounded. Each costs some 2 KB here and
// in the Streams (reassembly's connection, the conn, decode's state), and a
// capture of many connections opened and never closed (a SYN flood, a
// scan, 200,000 clients each sending one request) would grow them without
// end: idle connections are closed only after IdleTimeout of capture time.
// So the Assembler keeps a list of the connections in reassembly's pool
// (live), and once it holds more than MaxConnections, the quarter least
// recently active are closed at once, by a flush of reassembly with the
// cutoff time that takes them: their data waiting behind holes is
// delivered after a Gap, and their Streams are told Evict (or Close).
// Evicting a quarter at a time costs a sort of the list per quarter of the
// bound of new connections, a few operations per connection.
//
// The list follows the pool as far as it can be seen from here: a
// connection leaves it once closed and idle since the flush's cutoff, the
// pool's own rule for removing it. A conn the pool keeps a little longer
// (its last packet refused) is only left out of the count early.

// track lists a new connection, and marks an eviction due past the bound.
func (a *Assembler) track(c *conn) {
	a.live = append(a.live, c)
	if len(a.live) > a.opts.MaxConnections {
		a.evictDue = true
	}
}

// prune drops from the list the connections reassembly took out of its
// pool at a flush with cutoff: closed, and without a packet since.
func (a *Assembler) prune(cutoff time.Time) {
	live := a.live[:0]
	for _, c := range a.live {
		if !c.closed || !c.last.Before(cutoff) {
			live = append(live, c)
		} else {
			a.forget(c)
		}
	}
	clear(a.live[len(live):])
	a.live = live
}

// evict closes the connections least recently active, leaving three
// quarters of MaxConnections (or more, when many share the cutoff's
// packet time), counted in Stats.Evicted.
func (a *Assembler) evict() {
	a.evictDue = false
	keep := a.opts.MaxConnections - a.opts.MaxConnections/4
	if len(a.live) <= keep {
		return
	}
	times := a.times[:0]
	for _, c := range a.live {
		times = append(times, c.last.UnixNano())
	}
	slices.Sort(times)
	a.times = times[:0]
	// Every connection whose last packet is at or before the cutoff's.
	cutoff := time.Unix(0, times[len(times)-keep-1]+1)
	a.touch()
	a.flushing, a.evicting = true, true
	a.asm.FlushWithOptions(reassembly.FlushOptions{T: cutoff, TC: cutoff})
	a.flushing, a.evicting = false, false
	a.prune(cutoff)
}
