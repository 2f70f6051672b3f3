package detect

// slab holds values (the remembered batches, the carriers of record
// matching) in chunks of 1<<chunkBits, made whole at once, so that growing
// it never copies a value nor holds the old array beside the new while it
// does (a hundred thousand batches is common): a small run holds one chunk,
// about 1 MB of batches. Slots are numbered from 0 and never handed back;
// their owners keep lists of the free ones.
type slab[T any] struct {
	chunks [][]T
	n      int32 // slots handed out
}

const chunkBits = 12

func (s *slab[T]) at(slot int32) *T {
	return &s.chunks[slot>>chunkBits][slot&(1<<chunkBits-1)]
}

// grow hands out a new slot, holding T's zero value.
func (s *slab[T]) grow() int32 {
	k := int(s.n >> chunkBits)
	if k == len(s.chunks) {
		s.chunks = append(s.chunks, make([]T, 0, 1<<chunkBits))
	}
	var zero T
	s.chunks[k] = append(s.chunks[k], zero)
	s.n++
	return s.n - 1
}
