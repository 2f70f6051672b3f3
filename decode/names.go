package decode

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The names of wire values as brokers, clients and their logs print them,
// for the stages after decode: the error code of an answer, the codec of a
// batch's attributes, and a request's acks.

// ErrorName is the Kafka name of an error code: "NONE" for 0, the name kerr
// knows, or "UNKNOWN_ERROR_<code>" for a code it does not.
func ErrorName(code int16) string {
	switch code {
	case 0:
		return "NONE"
	case 6:
		// kerr keeps the pre-2.7 name NOT_LEADER_OR_FOLLOWER; brokers and
		// clients log the current one.
		return "NOT_LEADER_OR_FOLLOWER"
	}
	err := kerr.ErrorForCode(code)
	if err == kerr.UnknownServerError && code != kerr.UnknownServerError.Code {
		return "UNKNOWN_ERROR_" + strconv.Itoa(int(code))
	}
	if ke, ok := err.(*kerr.Error); ok {
		return ke.Message
	}
	return "UNKNOWN_ERROR_" + strconv.Itoa(int(code))
}

// CodecName names a record batch compression codec (attributes bits 0-2):
// none, gzip, snappy, lz4, zstd, or codec-N for the values no client uses.
func CodecName(codec int16) string {
	switch codec & 0x7 {
	case 0:
		return "none"
	case 1:
		return "gzip"
	case 2:
		return "snappy"
	case 3:
		return "lz4"
	case 4:
		return "zstd"
	}
	return "codec-" + strconv.Itoa(int(codec&0x7))
}

// AcksText is a ProduceRequest's acks as clients configure it: "all" for -1.
func AcksText(acks int16) string {
	if acks == -1 {
		return "all"
	}
	return strconv.Itoa(int(acks))
}
