package pipeline

import (
	"io"
	"time"

	"github.com/kdupcap/kdupcap/capture"
)

// Inputs are the capture files of an analysis, read as one timeline merged
// by timestamp: captures taken at the same time on several hosts
// interleave, and a capture rotated into several files (tcpdump -C) reads
// as if its files were read one after the other, connections running on
// across them.
type Inputs struct {
	// Files are paths; "-" is Stdin.
	Files []string
	// Skew[i], if any, is added to every timestamp of Files[i].
	Skew  []time.Duration
	Stdin io.Reader
}

// progressEvery+1 is how many packets are read between two calls of an
// onRead function (a power of two less one, used as a mask): cheap enough
// to cost nothing per packet, often enough for a bar redrawn ten times a
// second (256 packets are 16 MiB at most).
const progressEvery = 255

// open opens the files and merges them, handing onSecrets (if set) the key
// logs of pcapng secrets blocks; it returns the errors of the files that
// could not be opened, each naming its file.
func (in Inputs) open(onSecrets func(source string, keylog []byte)) (*capture.Merged, []error) {
	var (
		errs  []error
		srcs  []*capture.Source
		sskew []time.Duration
	)
	for i, name := range in.Files {
		var (
			src *capture.Source
			err error
		)
		if name == "-" {
			src, err = capture.NewSource("-", in.Stdin)
		} else {
			src, err = capture.Open(name)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		srcs = append(srcs, src)
		if i < len(in.Skew) {
			sskew = append(sskew, in.Skew[i])
		}
	}
	return capture.Merge(srcs, capture.MergeOptions{ClockSkew: sskew, OnSecrets: onSecrets}), errs
}

// eachPacket hands fn every packet of m in merged order, telling onRead
// (if any) the input bytes read every progressEvery+1 packets and at the
// end, and returns the input errors met: a file that fails is dropped and
// the others go on.
func eachPacket(m *capture.Merged, onRead func(int64), fn func(capture.Packet)) []error {
	var errs []error
	for n := 0; ; n++ {
		if onRead != nil && n&progressEvery == 0 {
			onRead(m.InputBytes())
		}
		pkt, err := m.Next()
		if err == io.EOF {
			if onRead != nil {
				onRead(m.InputBytes())
			}
			return errs
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fn(pkt)
	}
}
