package gencap

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kdupcap/kdupcap/internal/testenv"
)

// TestTsharkCountsProduceRequests has Wireshark's Kafka dissector, an
// independent reader, count the produce requests of a generated file.
// tshark 4.0 (Debian 12) decodes Produce bodies up to v8 but still lists
// the header of later versions; a version it does not list at all is
// accepted only from v9 on, and some requests must be listed and agree.
// .ci/run installs tshark: under CI its absence fails the test.
func TestTsharkCountsProduceRequests(t *testing.T) {
	tshark := testenv.Tool(t, "tshark") // .ci/run installs it
	for _, mtu := range []int{65535, 1500} {
		t.Run(fmt.Sprint(mtu), func(t *testing.T) {
			cfg := small(mtu, 11)
			cfg.TargetBytes = 1 << 20
			file, m := generate(t, cfg)
			path := filepath.Join(t.TempDir(), "gen.pcap")
			if err := os.WriteFile(path, file, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(tshark, "-r", path, "-d", "tcp.port==9092,kafka",
				"-Y", "kafka.request_key==0", "-T", "fields", "-e", "kafka.api_version", "-e", "kafka.correlation_id")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("tshark: %v: %s", err, stderr.String())
			}
			got := map[int16]int64{}
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) != 2 {
					t.Fatalf("tshark line %q", sc.Text())
				}
				v, err := strconv.ParseInt(f[0], 10, 16)
				if err != nil {
					t.Fatalf("tshark line %q: %v", sc.Text(), err)
				}
				got[int16(v)]++
			}
			// compared counts the requests tshark and the manifest agree
			// on: a run where tshark listed nothing (a dissector that no
			// longer knows the port, a version range it drops) proves
			// nothing and fails.
			var compared int64
			for v, want := range m.Totals.ProduceRequestsByVersion {
				switch n := got[v]; {
				case n == want:
					compared += n
				case n == 0 && v >= 9:
					t.Logf("tshark lists no produce v%d requests (manifest: %d)", v, want)
				default:
					t.Errorf("produce v%d: tshark lists %d, manifest %d", v, n, want)
				}
				delete(got, v)
			}
			for v, n := range got {
				t.Errorf("tshark lists %d produce v%d requests the manifest lacks", n, v)
			}
			if compared == 0 {
				t.Fatalf("tshark listed no produce request the manifest could be compared with (manifest by version: %v)",
					m.Totals.ProduceRequestsByVersion)
			}
			t.Logf("tshark and the manifest agree on %d produce requests", compared)
		})
	}
}
