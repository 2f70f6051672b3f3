package capture

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/iotest"
	"time"
)

// TestReadAhead: every byte the reader gives, in order, then its error,
// again on every later Read, whatever the sizes of the reads on either side.
func TestReadAhead(t *testing.T) {
	data := make([]byte, 3*readAheadSize+12345)
	for i := range data {
		data[i] = byte(i * 7)
	}
	errBad := errors.New("bad block")
	tests := []struct {
		name    string
		r       func() io.Reader
		want    []byte
		wantErr error
		readLen int
	}{
		{"empty", func() io.Reader { return bytes.NewReader(nil) }, nil, io.EOF, 4096},
		{"one byte", func() io.Reader { return bytes.NewReader(data[:1]) }, data[:1], io.EOF, 4096},
		{"one buffer", func() io.Reader { return bytes.NewReader(data[:readAheadSize]) }, data[:readAheadSize], io.EOF, 4096},
		{"several buffers, large reads", func() io.Reader { return bytes.NewReader(data) }, data, io.EOF, 1 << 20},
		{"several buffers, odd reads", func() io.Reader { return bytes.NewReader(data) }, data, io.EOF, 999},
		{"a byte a read underneath", func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data[:5000])) }, data[:5000], io.EOF, 4096},
		{"data with the error", func() io.Reader { return iotest.DataErrReader(bytes.NewReader(data)) }, data, io.EOF, 4096},
		{"error after data", func() io.Reader { return io.MultiReader(bytes.NewReader(data), iotest.ErrReader(errBad)) }, data, errBad, 4096},
		{"error at once", func() io.Reader { return iotest.ErrReader(io.ErrUnexpectedEOF) }, nil, io.ErrUnexpectedEOF, 4096},
	}
	// startAt: read this many bytes directly before starting to read ahead
	// (-1: never start).
	for _, startAt := range []int{0, 1000, -1} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/start at %d", tt.name, startAt), func(t *testing.T) {
				r := tt.r()
				released := make(chan struct{})
				ra := newReadAhead(r, func() { close(released) })
				var got []byte
				p := make([]byte, tt.readLen)
				var err error
				for err == nil {
					if startAt >= 0 && len(got) >= startAt {
						ra.start(nil, false)
					}
					var n int
					n, err = ra.Read(p)
					got = append(got, p[:n]...)
				}
				if !bytes.Equal(got, tt.want) {
					t.Errorf("read %d bytes, want %d (equal: %v)", len(got), len(tt.want), bytes.Equal(got, tt.want))
				}
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("error %v, want %v", err, tt.wantErr)
				}
				if n, again := ra.Read(p); n != 0 || !errors.Is(again, tt.wantErr) {
					t.Errorf("Read after the error: %d, %v", n, again)
				}
				if ra.active() || ra.empty != nil {
					t.Errorf("after the error: still active %v, holding buffers %v", ra.active(), ra.empty != nil)
				}
				ra.Close()
				<-released // by the goroutine at the error, or by Close when never started
				if n, err := ra.Read(p); n != 0 || !errors.Is(err, errClosed) {
					t.Errorf("Read after Close: %d, %v", n, err)
				}
			})
		}
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

// TestReadAheadClose: Close returns while the goroutine is blocked in the
// reader (a pipe that will not be written again), and the goroutine
// releases the reader once its Read returns; Close twice is harmless.
func TestReadAheadClose(t *testing.T) {
	br := &blockingReader{blocked: make(chan struct{}), unblock: make(chan struct{})}
	released := make(chan struct{})
	ra := newReadAhead(br, func() { close(released) })
	ra.start(nil, false)
	<-br.blocked
	closed := make(chan struct{})
	go func() {
		ra.Close()
		ra.Close()
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
