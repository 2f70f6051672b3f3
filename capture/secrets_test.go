package capture

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"
	"github.com/kdupcap/kdupcap/internal/testenv"
)

const testKeyLog = "# a comment\nCLIENT_RANDOM 0102 0304\n"

// ngWithSecrets is a pcapng stream: a section header, a Decryption Secrets
// Block of each keylog (before the interface, as editcap writes it, or
// between packets), an Ethernet interface and one packet after each block.
func ngWithSecrets(order ngOrder, keylogs ...string) []byte {
	w := (&ngWriter{order: order}).shb().dsb(keylogs[0]).idb(layers.LinkTypeEthernet, 65535)
	w.epb(0, 1, make([]byte, 60), 60)
	for _, k := range keylogs[1:] {
		w.dsb(k).epb(0, 1, make([]byte, 60), 60)
	}
	return w.b
}

// TestSecrets: the key logs of pcapng Decryption Secrets Blocks are handed
// out in file order, before the packets after them, in either byte order
// and whatever the reads' sizes; other captures have none.
func TestSecrets(t *testing.T) {
	second := "CLIENT_TRAFFIC_SECRET_0 aa bb\n"
	tests := []struct {
		name  string
		input []byte
		want  []string
	}{
		{"little endian", ngWithSecrets(binary.LittleEndian, testKeyLog, second), []string{testKeyLog, second}},
		{"big endian", ngWithSecrets(binary.BigEndian, testKeyLog, second), []string{testKeyLog, second}},
		{"odd length padded", ngWithSecrets(binary.LittleEndian, "CLIENT_RANDOM 01 02"), []string{"CLIENT_RANDOM 01 02"}},
	}
	for _, tc := range tests {
		for _, chunk := range []int{1, 7, 4096} {
			t.Run(fmt.Sprintf("%s/reads of %d", tc.name, chunk), func(t *testing.T) {
				src, err := NewSource("t.pcapng", &chunked{r: bytes.NewReader(tc.input), n: chunk})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				m := Merge([]*Source{src}, MergeOptions{OnSecrets: func(name string, k []byte) {
					if name != "t.pcapng" {
						t.Errorf("secrets of %q", name)
					}
					got = append(got, string(k))
				}})
				packets := 0
				for {
					_, err := m.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					packets++
					if len(got) < packets {
						t.Errorf("packet %d handed out before the secrets block in front of it", packets)
					}
				}
				if packets != len(tc.want) {
					t.Errorf("%d packets, want %d", packets, len(tc.want))
				}
				if !slices.Equal(got, tc.want) {
					t.Errorf("secrets %q, want %q", got, tc.want)
				}
			})
		}
	}
	src, err := Open("testdata/lo-ethernet.pcap")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for {
		if _, err := src.Next(); err != nil {
			break
		}
	}
	if len(src.Secrets()) != 0 {
		t.Errorf("a pcap has secrets: %q", src.Secrets())
	}
}

// TestSecretsEditcap reads the key log editcap injects, as a user makes
// such a file.
func TestSecretsEditcap(t *testing.T) {
	editcap := testenv.Tool(t, "editcap")
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.txt")
	if err := os.WriteFile(keys, []byte(testKeyLog), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "with-keys.pcapng")
	if b, err := exec.Command(editcap, "--inject-secrets", "tls,"+keys, "testdata/lo-ethernet.pcap", out).CombinedOutput(); err != nil {
		t.Fatalf("editcap: %v: %s", err, b)
	}
	src, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	n := 0
	for {
		if _, err := src.Next(); err != nil {
			break
		}
		n++
	}
	if n == 0 || len(src.Secrets()) != 1 || string(src.Secrets()[0]) != testKeyLog {
		t.Errorf("%d packets, secrets %q, want %q", n, src.Secrets(), testKeyLog)
	}
}

// chunked reads at most n bytes a call.
type chunked struct {
	r io.Reader
	n int
}

func (c *chunked) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// TestSecretsDropped: a secrets block over MaxSecretsBytes is left unread
// and counted, the packets after it read as usual.
func TestSecretsDropped(t *testing.T) {
	big := strings.Repeat("CLIENT_RANDOM aa bb\n", MaxSecretsBytes/20+1)
	src, err := NewSource("big.pcapng", bytes.NewReader(ngWithSecrets(binary.LittleEndian, big)))
	if err != nil {
		t.Fatal(err)
	}
	m := Merge([]*Source{src}, MergeOptions{OnSecrets: func(string, []byte) { t.Error("a block over the bound handed out") }})
	packets := 0
	for {
		if _, err := m.Next(); err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
		packets++
	}
	if packets != 1 || m.SecretsDropped() != 1 {
		t.Errorf("%d packets, %d secrets blocks dropped; want 1 and 1", packets, m.SecretsDropped())
	}
}
