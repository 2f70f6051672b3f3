package capture

import (
	"bytes"
	"io"
	"testing"
	"time"
)

// TestPcapAheadClose: Close returns while the goroutine is blocked in the
// reader (a pipe that will not be written again), and the goroutine
// releases the reader once its Read returns; Close twice is harmless.
func TestPcapAheadClose(t *testing.T) {
	br := &blockingReader{blocked: make(chan struct{}), unblock: make(chan struct{})}
	released := make(chan struct{})
	a := startAhead(br, func() { close(released) }, nil, 0, aheadChunksCompressed, 0, false, nil)
	c, _ := a.next() // the byte before the reader blocks
	if c.n != 1 || c.err != nil {
		t.Fatalf("first chunk: %d bytes, %v", c.n, c.err)
	}
	<-br.blocked
	closed := make(chan struct{})
	go func() {
		a.Close()
		a.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for a reader blocked in Read")
	}
	select {
	case <-released:
		t.Fatal("released while still reading")
	default:
	}
	close(br.unblock)
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("the reader was never released")
	}
}

// blockingReader gives one byte, then closes blocked and blocks in Read
// until unblock closes.
type blockingReader struct {
	gave    bool
	blocked chan struct{}
	unblock chan struct{}
}

func (b *blockingReader) Read(p []byte) (int, error) {
	if !b.gave {
		b.gave = true
		p[0] = 'x'
		return 1, nil
	}
	close(b.blocked)
	<-b.unblock
	return 0, io.EOF
}

// stutterReader returns its bytes step at a time, after zeros reads that
// return nothing and no error before each.
type stutterReader struct {
	b           []byte
	step, zeros int
	z           int
}

func (r *stutterReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	if r.z < r.zeros {
		r.z++
		return 0, nil
	}
	r.z = 0
	n := copy(p, r.b[:min(r.step, len(r.b))])
	r.b = r.b[n:]
	return n, nil
}

// TestReadChunk: a chunk is read full from a regular file's stream however
// short its reads (a decompressor's), handed on at the first short read
// from a pipe, and ended by a hundred reads in a row that bring nothing,
// not by a hundred spread over reads that do.
func TestReadChunk(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 1024) // 16 KiB
	for _, tc := range []struct {
		name        string
		step, zeros int
		size        int
		whole       bool
		wantN       int
		wantErr     error
	}{
		{"whole, short reads", 1000, 0, 8192, true, 8192, nil},
		{"pipe, short reads", 1000, 0, 8192, false, 1000, nil},
		{"whole, to the end", 5000, 0, 32768, true, len(data), io.EOF},
		{"pipe, exact reads", 4096, 0, 4096, false, 4096, nil},
		{"whole, 99 empty reads before each", 100, 99, 8192, true, 8192, nil},
		{"whole, 100 empty reads", 100, 100, 8192, true, 0, io.ErrNoProgress},
		{"pipe, 99 empty reads", 100, 99, 8192, false, 100, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &stutterReader{b: data, step: tc.step, zeros: tc.zeros}
			n, err := readChunk(r, make([]byte, tc.size), tc.whole)
			if n != tc.wantN || err != tc.wantErr {
				t.Fatalf("readChunk = %d, %v; want %d, %v", n, err, tc.wantN, tc.wantErr)
			}
		})
	}
}
