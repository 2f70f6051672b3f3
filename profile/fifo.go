package profile

// The Profiler's queue of reports (Profiler.queue) is a copy of detect's
// chunked fifo, less its reset: profile imports detect for its exported
// types only, and a shared internal package would be a third import for
// some 60 lines.

// fifo is a queue in chunks of fifoChunk entries: pushing never copies
// what is queued (a slice doubled would copy it and leave the old array to
// the collector, fresh memory each time), and a chunk read to its end is
// kept for the next pushes.
type fifo[T any] struct {
	chunks [][]T // the front is chunks[0][head]
	head   int
	n      int
	spare  [][]T
}

const fifoChunk = 1024

func (a *fifo[T]) push(e T) {
	k := len(a.chunks) - 1
	if k < 0 || len(a.chunks[k]) == fifoChunk {
		var c []T
		if s := len(a.spare); s > 0 {
			c, a.spare = a.spare[s-1], a.spare[:s-1]
		} else {
			c = make([]T, 0, fifoChunk)
		}
		a.chunks = append(a.chunks, c)
		k++
	}
	a.chunks[k] = append(a.chunks[k], e)
	a.n++
}

// front returns the first entry, if there is one.
func (a *fifo[T]) front() (T, bool) {
	if a.n == 0 {
		var zero T
		return zero, false
	}
	return a.chunks[0][a.head], true
}

// pop drops the first entry; the queue must not be empty.
func (a *fifo[T]) pop() {
	a.head++
	a.n--
	if a.head == len(a.chunks[0]) && (a.head == fifoChunk || a.n == 0) {
		a.spare = append(a.spare, a.chunks[0][:0])
		k := copy(a.chunks, a.chunks[1:])
		clear(a.chunks[k:])
		a.chunks = a.chunks[:k]
		a.head = 0
	}
}

// len is the number of entries, stale ones included.
func (a *fifo[T]) len() int { return a.n }
