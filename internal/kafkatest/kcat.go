package kafkatest

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// KcatProduce returns a ProduceFunc that writes the values, one a line, with
// kcat (librdkafka) to partition 0, each value in a request of its own (no
// linger, one message a batch, one request in flight), acks=all. extra are
// more -X settings ("key=value"), e.g. "enable.idempotence=false" and
// "request.timeout.ms=300" (librdkafka sends it as the request's
// TimeoutMillis). The values must not contain newlines.
func KcatProduce(extra ...string) ProduceFunc {
	return kcatProduce(CodecNone, extra)
}

// KcatCompressed is KcatProduce with compression.codec set to codec. Each
// value gets the key "key-<i>" followed by kcatKeyPad dots: librdkafka sends
// a batch uncompressed when compressing does not make it smaller, which it
// never does for one short record, so the key makes it compressible. The
// values must not contain newlines or tabs.
//
// On a retry librdkafka re-sends the very same batch bytes (same CRC,
// same timestamps), compressed or not.
func KcatCompressed(codec Codec, extra ...string) ProduceFunc {
	return kcatProduce(codec, extra)
}

// kcatKeyPad is how many dots KcatCompressed appends to each key.
const kcatKeyPad = 200

func kcatProduce(codec Codec, extra []string) ProduceFunc {
	return func(ctx context.Context, addr, topic string, values []string) error {
		args := []string{"-P", "-b", addr, "-t", topic, "-p", "0", "-q",
			"-X", "acks=all",
			"-X", "linger.ms=0",
			"-X", "batch.num.messages=1",
			"-X", "max.in.flight.requests.per.connection=1",
			"-X", "compression.codec=" + codec.String(),
		}
		lines := values
		if codec != CodecNone {
			args = append(args, "-K", "\t")
			lines = make([]string, len(values))
			for i, v := range values {
				lines[i] = fmt.Sprintf("key-%d%s\t%s", i, strings.Repeat(".", kcatKeyPad), v)
			}
		}
		for _, x := range extra {
			args = append(args, "-X", x)
			// kcat sets the codec from -z (default none) after the -X
			// settings, so a codec must be given there too.
			if codec, ok := strings.CutPrefix(x, "compression.codec="); ok {
				args = append(args, "-z", codec)
			}
		}
		cmd := exec.CommandContext(ctx, "kcat", args...)
		cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("kafkatest: kcat %s: %w: %s", strings.Join(args, " "), err, stderr.String())
		}
		return nil
	}
}
