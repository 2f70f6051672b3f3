package tlsdecrypt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// Follower reads the lines appended to a growing key log file, as a JVM
// agent or SSLKEYLOGFILE writer appends a line per new connection. It keeps
// its offset and a partial last line until its end arrives; a file that
// shrinks (truncated or replaced) is read again from the start.
//
// A Follower is not safe for concurrent use; the KeyLog it fills is.
type Follower struct {
	keys    *KeyLog
	path    string
	off     int64
	partial []byte
	lineNo  int
	buf     []byte
}

// Follow returns a Follower of the key log file at path into k. Nothing is
// read until Poll or Run.
func (k *KeyLog) Follow(path string) *Follower {
	return &Follower{keys: k, path: path}
}

// Poll reads what was appended to the file since the last Poll and returns
// the number of secrets added. A file that does not exist yet is no error
// (0, nil); other I/O errors are returned and the next Poll tries again.
func (f *Follower) Poll() (int, error) {
	file, err := os.Open(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("tlsdecrypt: key log: %w", err)
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return 0, fmt.Errorf("tlsdecrypt: key log: %w", err)
	}
	if st.Size() < f.off {
		f.off, f.partial, f.lineNo = 0, f.partial[:0], 0
	}
	if st.Size() == f.off {
		return 0, nil
	}
	if _, err := file.Seek(f.off, io.SeekStart); err != nil {
		return 0, fmt.Errorf("tlsdecrypt: key log: %w", err)
	}
	if f.buf == nil {
		f.buf = make([]byte, 32<<10)
	}
	added := 0
	for {
		n, err := file.Read(f.buf)
		f.off += int64(n)
		data := f.buf[:n]
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				if len(f.partial)+len(data) <= maxKeyLogLine+1 {
					f.partial = append(f.partial, data...)
				}
				break
			}
			line := data[:i]
			if len(f.partial) > 0 {
				if len(f.partial)+len(line) <= maxKeyLogLine+1 {
					f.partial = append(f.partial, line...)
				}
				line = f.partial
			}
			f.lineNo++
			if f.keys.addLine(line, f.path, f.lineNo) {
				added++
			}
			f.partial = f.partial[:0]
			data = data[i+1:]
		}
		if err == io.EOF || n == 0 {
			return added, nil
		}
		if err != nil {
			return added, fmt.Errorf("tlsdecrypt: key log %s: %w", f.path, err)
		}
	}
}

// Run polls the file every interval until ctx is done, and returns
// ctx.Err(). An I/O error of a poll is handed to onErr (if not nil) and
// polling goes on.
func (f *Follower) Run(ctx context.Context, every time.Duration, onErr func(error)) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := f.Poll(); err != nil && onErr != nil {
			onErr(err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
