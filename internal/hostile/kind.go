package hostile

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Kind is one hostile capture.
type Kind int

// The kinds. The letter is the row of issue 13 each one reproduces; the
// kinds after Interrupt are this package's own.
const (
	ManyTopics     Kind = iota + 1 // a
	ManyClients                    // b
	HalfOpen                       // c
	OpenFrames                     // d
	BigRequest                     // e
	BigRequests4                   // f
	WidePartitions                 // g
	SnappyBomb                     // h
	GzipRecords                    // i
	HugeSnaplen                    // j
	HugePacketKind                 // k
	ZstdRLE                        // l
	GzipFileBomb                   // m
	ZstdFileBomb                   // m
	ForgedCRC                      // n
	SharedBadCRC                   // o
	Snaplen96                      // p
	Snaplen200                     // p
	Proxy                          // q
	DockerNAT                      // r
	Twice                          // s
	TwoClusters                    // t
	DualWrite                      // u
	Interrupt                      // v
	OverlapRewrite                 // overlapping TCP segments with other bytes
	WindowFlood                    // SYN flood with huge windows, data beyond holes
	FrameSizeMax                   // frame sizes of 2^31-1, negative, 100 MiB+1
	BadCounts                      // negative and oversized array counts
	NestedLegacy                   // legacy message sets nested deep and wide
	NgHugeBlock                    // pcapng blocks of huge lengths
	TinyGaps                       // thousands of one-byte holes
	endKinds
)

// kindInfo is one kind's name, the issue row it reproduces, what it holds
// at scale 1, and its generator.
type kindInfo struct {
	name  string
	row   string
	about string
	write func(w io.Writer, scale float64, t *Truth) error
}

// kinds is indexed by Kind.
var kinds = [endKinds]kindInfo{
	ManyTopics:     {"many-topics", "a", "1.5 M answered batches, each to a new random topic (~600 MB)", writeManyTopics},
	ManyClients:    {"many-clients", "b", "250 k topics and client.ids on 50 k connections from 50 k client IPs (~2 GB)", writeManyClients},
	HalfOpen:       {"half-open", "c", "200 k connections: handshake and one small unanswered request each", writeHalfOpen},
	OpenFrames:     {"open-frames", "d", "10 k open connections each holding 1 MiB of an unfinished 50 MB frame (scale 0.03: 300, 0.2: 2,000)", writeOpenFrames},
	BigRequest:     {"big-request", "e", "one complete, valid, answered 100 MB produce request", writeBigRequest},
	BigRequests4:   {"big-requests-4", "f", "4 connections each with one complete 100 MB request, unanswered, their segments interleaved", writeBigRequests4},
	WidePartitions: {"wide-partitions", "g", "a 100 MB request of 12.5 M minimal partition entries (a count kmsg's length check passes)", writeWidePartitions},
	SnappyBomb:     {"snappy-bomb", "h", "a raw snappy batch and a xerial batch, each 1 GiB of zeros (~50 MB each), unanswered", writeSnappyBomb},
	GzipRecords:    {"gzip-records", "i", "64 MiB of pending batches, then 40 unanswered gzip batches of 16 MiB of 4-byte records, every record distinct", writeGzipRecords},
	HugeSnaplen:    {"huge-snaplen", "j", "a pcap of snap length 2^32-1 holding one 2 GiB packet", writeHugeSnaplen},
	HugePacketKind: {"huge-packet", "k", "one 256 MiB packet in a pcap of snap length 262144", writeHugePacket},
	ZstdRLE:        {"zstd-rle", "l", "4000 answered batches, each 16 MiB of zeros in 522 bytes of zstd", writeZstdRLE},
	GzipFileBomb:   {"gzip-file-bomb", "m", "a gzip capture expanding to 16 GiB (a pcap header, then zeros)", writeGzipFileBomb},
	ZstdFileBomb:   {"zstd-file-bomb", "m", "a zstd capture expanding to 16 GiB (a pcap header, then zeros)", writeZstdFileBomb},
	ForgedCRC:      {"forged-crc", "n", "two different answered batches with equal, valid CRC-32C (4 bytes of a record forged)", writeForgedCRC},
	SharedBadCRC:   {"shared-bad-crc", "o", "two different answered batches carrying the same wrong CRC", writeSharedBadCRC},
	Snaplen96:      {"snaplen-96", "p", "ordinary traffic with re-sends, every packet cut to 96 bytes", writeSnaplen96},
	Snaplen200:     {"snaplen-200", "p", "ordinary traffic with re-sends, every packet cut to 200 bytes", writeSnaplen200},
	Proxy:          {"proxy", "q", "a TCP proxy on the capture host: both legs carry the same bytes 60-100 us apart, one real re-send", writeProxy},
	DockerNAT:      {"docker-nat", "r", "`-i any` on a Docker host (SLL2): one connection before and after NAT, one real re-send", writeDockerNAT},
	Twice:          {"twice", "s", "ordinary traffic with re-sends over 3 s, for `analyze f f --clock-skew 2=1s`", writeTwice},
	TwoClusters:    {"two-clusters", "t", "two clusters handing out producer ID 0: same PID, epoch and sequences, other bytes; one real re-send", writeTwoClusters},
	DualWrite:      {"dual-write", "u", "the same records written to two clusters, plus one record the application wrote twice to one", writeDualWrite},
	Interrupt:      {"interrupt", "v", "ordinary traffic with re-sends, for a pipe left open and a signal", writeInterrupt},
	OverlapRewrite: {"overlap-rewrite", "", "1000 requests each overlapped by a segment of other bytes, one real re-send", writeOverlapRewrite},
	WindowFlood:    {"window-flood", "", "50 k SYNs with window scale 14, and 2000 connections holding 1 MiB beyond an unfilled hole", writeWindowFlood},
	FrameSizeMax:   {"frame-size-max", "", "1000 connections sending frame sizes 2^31-1, -1, -2^31 and 100 MiB+1, one real re-send", writeFrameSizeMax},
	BadCounts:      {"bad-counts", "", "requests with negative and oversized array, string and record counts, and one 100 MB request whose partition count is its byte count", writeBadCounts},
	NestedLegacy:   {"nested-legacy", "", "legacy message sets nested 1000 gzip levels deep, and 7 levels of gzip wrappers of 100 copies each (13 PB expanded)", writeNestedLegacy},
	NgHugeBlock:    {"pcapng-huge-block", "", "a pcapng with a 1 GiB packet block, then a block claiming 4 GiB cut after 1 MiB", writeNgHugeBlock},
	TinyGaps:       {"tiny-gaps", "", "200 k one-byte holes in acknowledged streams, then one real re-send", writeTinyGaps},
}

// Kinds returns every kind, in the order of the rows.
func Kinds() []Kind {
	out := make([]Kind, 0, endKinds-1)
	for k := ManyTopics; k < endKinds; k++ {
		out = append(out, k)
	}
	return out
}

func (k Kind) valid() bool { return k >= ManyTopics && k < endKinds }

// String is the kind's name, as ParseKind takes it.
func (k Kind) String() string {
	if !k.valid() {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kinds[k].name
}

// Row is the row of issue 13 the kind reproduces ("a".."v"), or "" for
// this package's own kinds.
func (k Kind) Row() string {
	if !k.valid() {
		return ""
	}
	return kinds[k].row
}

// About says what the kind's capture holds at scale 1.
func (k Kind) About() string {
	if !k.valid() {
		return ""
	}
	return kinds[k].about
}

// ParseKind returns the kind named s.
func ParseKind(s string) (Kind, error) {
	for k := ManyTopics; k < endKinds; k++ {
		if kinds[k].name == s {
			return k, nil
		}
	}
	names := make([]string, 0, endKinds-1)
	for _, k := range Kinds() {
		names = append(names, k.String())
	}
	return 0, fmt.Errorf("hostile: unknown kind %q (kinds: %s)", s, strings.Join(names, ", "))
}

// Write writes the capture of kind k at scale to w and returns what it
// holds. Scale 1 is the size; counts and byte sizes are multiplied
// by scale (each at least 1). The bytes are the same on every call with the
// same kind and scale. Only w's errors and a bad kind or scale fail it;
// the Truth then covers what was written.
func Write(w io.Writer, k Kind, scale float64) (Truth, error) {
	t := Truth{Kind: k, Scale: scale}
	if !k.valid() {
		return t, fmt.Errorf("hostile: unknown kind %d", int(k))
	}
	if !(scale > 0) || math.IsInf(scale, 0) || scale > 1000 {
		return t, fmt.Errorf("hostile: %s: scale %v: want a number in (0, 1000]", k, scale)
	}
	if err := kinds[k].write(w, scale, &t); err != nil {
		return t, fmt.Errorf("hostile: %s at scale %v: %w", k, scale, err)
	}
	return t, nil
}

// scaled is n times scale, rounded, at least 1.
func scaled(n int64, scale float64) int64 {
	return max(1, int64(math.Round(float64(n)*scale)))
}
