package kwire

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAppendResponse frames responses of flexible and non-flexible versions
// and of ApiVersions, and reads them back with kmsg.
func TestAppendResponse(t *testing.T) {
	tests := []struct {
		name    string
		resp    kmsg.Response
		version int16
		tagByte bool
	}{
		{"produce v7", kmsg.NewPtrProduceResponse(), 7, false},
		{"produce v9 flexible", kmsg.NewPtrProduceResponse(), 9, true},
		{"api versions v3 keeps header v0", kmsg.NewPtrApiVersionsResponse(), 3, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.resp.SetVersion(tc.version)
			frame := AppendResponse([]byte("prefix"), 42, tc.resp)[len("prefix"):]
			if size := int(binary.BigEndian.Uint32(frame)); size != len(frame)-4 {
				t.Fatalf("size %d, frame holds %d", size, len(frame)-4)
			}
			if corr := int32(binary.BigEndian.Uint32(frame[4:])); corr != 42 {
				t.Fatalf("correlation ID %d", corr)
			}
			body := frame[8:]
			if tc.tagByte {
				if body[0] != 0 {
					t.Fatalf("tag section %d, want empty", body[0])
				}
				body = body[1:]
			}
			back := tc.resp.(interface{ Key() int16 })
			r := kmsg.ResponseForKey(back.Key())
			r.SetVersion(tc.version)
			if err := r.ReadFrom(body); err != nil {
				t.Fatalf("read back: %v", err)
			}
		})
	}
}
