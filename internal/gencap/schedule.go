package gencap

// segHeap orders scheduled segments by time, then by scheduling order, so
// that the file is the same on every run.
type segHeap []*segment

func (h segHeap) Len() int { return len(h) }
func (h segHeap) Less(i, j int) bool {
	if h[i].tsMicros != h[j].tsMicros {
		return h[i].tsMicros < h[j].tsMicros
	}
	return h[i].order < h[j].order
}
func (h segHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *segHeap) Push(x any)   { *h = append(*h, x.(*segment)) }
func (h *segHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return s
}

// connHeap orders connections by the time of their next step, then by
// creation order.
type connHeap []*conn

func (h connHeap) Len() int { return len(h) }
func (h connHeap) Less(i, j int) bool {
	if h[i].next != h[j].next {
		return h[i].next < h[j].next
	}
	return h[i].index < h[j].index
}
func (h connHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *connHeap) Push(x any)   { *h = append(*h, x.(*conn)) }
func (h *connHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return c
}
