package decode

import (
	"testing"
	"unsafe"
)

// TestConnSize: a Conn stays within the 576-byte size class (conn.go): a
// capture holds one per connection, a flood of connections 16384 of them,
// and the next class is 640 bytes. A direction carries no batchScan of its
// own until it has a frame to scan.
func TestConnSize(t *testing.T) {
	if n := unsafe.Sizeof(Conn{}); n > 576 {
		t.Errorf("a Conn is %d bytes, over its 576-byte size class", n)
	}
}
