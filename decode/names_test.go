package decode

import "testing"

func TestErrorName(t *testing.T) {
	for code, want := range map[int16]string{0: "NONE", -1: "UNKNOWN_SERVER_ERROR", 6: "NOT_LEADER_OR_FOLLOWER", 7: "REQUEST_TIMED_OUT",
		20: "NOT_ENOUGH_REPLICAS_AFTER_APPEND", 46: "DUPLICATE_SEQUENCE_NUMBER", 9999: "UNKNOWN_ERROR_9999", -7: "UNKNOWN_ERROR_-7"} {
		if got := ErrorName(code); got != want {
			t.Errorf("ErrorName(%d) = %q, want %q", code, got, want)
		}
	}
}

func TestCodecName(t *testing.T) {
	// Attributes bits above 0-2 (timestamp type, transactional, control)
	// do not change the codec.
	for attrs, want := range map[int16]string{0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd", 5: "codec-5", 7: "codec-7",
		0x10 | 1: "gzip", 0x20 | 4: "zstd"} {
		if got := CodecName(attrs); got != want {
			t.Errorf("CodecName(%#x) = %q, want %q", attrs, got, want)
		}
	}
}

func TestAcksText(t *testing.T) {
	for acks, want := range map[int16]string{-1: "all", 0: "0", 1: "1", 2: "2"} {
		if got := AcksText(acks); got != want {
			t.Errorf("AcksText(%d) = %q, want %q", acks, got, want)
		}
	}
}
