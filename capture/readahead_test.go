package capture

import (
	"bytes"
	"errors"
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
		r       io.Reader
		want    []byte
		wantErr error
		readLen int
	}{
		{"empty", bytes.NewReader(nil), nil, io.EOF, 4096},
		{"one byte", bytes.NewReader(data[:1]), data[:1], io.EOF, 4096},
		{"one buffer", bytes.NewReader(data[:readAheadSize]), data[:readAheadSize], io.EOF, 4096},
		{"several buffers, large reads", bytes.NewReader(data), data, io.EOF, 1 << 20},
		{"several buffers, odd reads", bytes.NewReader(data), data, io.EOF, 999},
		{"a byte a read underneath", iotest.OneByteReader(bytes.NewReader(data[:5000])), data[:5000], io.EOF, 4096},
		{"data with the error", iotest.DataErrReader(bytes.NewReader(data)), data, io.EOF, 4096},
		{"error after data", io.MultiReader(bytes.NewReader(data), iotest.ErrReader(errBad)), data, errBad, 4096},
		{"error at once", iotest.ErrReader(io.ErrUnexpectedEOF), nil, io.ErrUnexpectedEOF, 4096},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			released := make(chan struct{})
			ra := newReadAhead(tt.r, func() { close(released) })
			defer ra.Close()
			var got []byte
			p := make([]byte, tt.readLen)
			var err error
			for err == nil {
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
			<-released // the reader's goroutine stopped at the error and released it
		})
	}
}

// blockingReader gives one byte, then blocks in Read until unblock closes.
type blockingReader struct {
	gave    bool
	unblock chan struct{}
}

func (b *blockingReader) Read(p []byte) (int, error) {
	if !b.gave {
		b.gave = true
		p[0] = 'x'
		return 1, nil
	}
	<-b.unblock
	return 0, io.EOF
}

// TestReadAheadClose: Close returns while the goroutine is blocked in the
// reader (a pipe that will not be written again), and the goroutine
// releases the reader once its Read returns; Close twice is harmless.
func TestReadAheadClose(t *testing.T) {
	br := &blockingReader{unblock: make(chan struct{})}
	released := make(chan struct{})
	ra := newReadAhead(br, func() { close(released) })
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
