package fifo

// Queue is a first-in first-out queue in chunks of chunk entries: pushing never copies
// what is queued (a slice doubled would copy it and leave the old array to
// the collector, fresh memory each time), and a chunk read to its end is
// kept for the next pushes.
type Queue[T any] struct {
	chunks [][]T // the front is chunks[0][head]
	head   int
	n      int
	spare  [][]T
}

const chunk = 1024

// Push adds e at the back.
func (a *Queue[T]) Push(e T) {
	k := len(a.chunks) - 1
	if k < 0 || len(a.chunks[k]) == chunk {
		var c []T
		if s := len(a.spare); s > 0 {
			c, a.spare = a.spare[s-1], a.spare[:s-1]
		} else {
			c = make([]T, 0, chunk)
		}
		a.chunks = append(a.chunks, c)
		k++
	}
	a.chunks[k] = append(a.chunks[k], e)
	a.n++
}

// Front returns the first entry, if there is one.
func (a *Queue[T]) Front() (T, bool) {
	if a.n == 0 {
		var zero T
		return zero, false
	}
	return a.chunks[0][a.head], true
}

// Pop drops the first entry; the queue must not be empty.
func (a *Queue[T]) Pop() {
	a.head++
	a.n--
	if a.head == len(a.chunks[0]) && (a.head == chunk || a.n == 0) {
		a.spare = append(a.spare, a.chunks[0][:0])
		k := copy(a.chunks, a.chunks[1:])
		clear(a.chunks[k:])
		a.chunks = a.chunks[:k]
		a.head = 0
	}
}

// Len is the number of entries, the stale ones a caller left in included.
func (a *Queue[T]) Len() int { return a.n }

// Reset empties the queue, keeping its chunks for later pushes.
func (a *Queue[T]) Reset() {
	for _, c := range a.chunks {
		a.spare = append(a.spare, c[:0])
	}
	clear(a.chunks)
	a.chunks, a.head, a.n = a.chunks[:0], 0, 0
}
