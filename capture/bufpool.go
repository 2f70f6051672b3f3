package capture

// bufPool keeps the chunks of the sources read ahead that ended for the
// next ones (pcapahead.go): a merge of many rotated files reuses a few
// chunks instead of making new ones for every file. It is used by the
// reading goroutine only; a nil pool keeps nothing.
type bufPool struct {
	free [][]byte
}

func (p *bufPool) get() []byte {
	if p != nil {
		if n := len(p.free); n > 0 {
			b := p.free[n-1]
			p.free = p.free[:n-1]
			return b
		}
	}
	return make([]byte, aheadChunkSize)
}

func (p *bufPool) put(b []byte) {
	if p != nil {
		p.free = append(p.free, b[:cap(b)])
	}
}

// len is how many chunks p has.
func (p *bufPool) len() int {
	if p == nil {
		return 0
	}
	return len(p.free)
}
