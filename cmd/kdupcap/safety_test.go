package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kdupcap/kdupcap/internal/kwire"
	"github.com/kdupcap/kdupcap/internal/testenv"
)

// allClear is the sentence of a run that read its whole input, saw produce
// requests and found no batch sent twice: never to be printed otherwise.
const allClear = "No batch was sent more than once."

// cliRun is one run of the CLI: exit code and both streams.
type cliRun struct {
	code           int
	stdout, stderr string
}

func runCLI(args ...string) cliRun {
	var stdout, stderr bytes.Buffer
	code := run(args, nil, &stdout, &stderr)
	return cliRun{code, stdout.String(), stderr.String()}
}

// jsonSummaryOf is the summary line of JSON Lines output, as a map.
func jsonSummaryOf(t *testing.T, stdout string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	var s map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil || s["type"] != "summary" {
		t.Fatalf("last line is no summary (%v): %s", err, lines[len(lines)-1])
	}
	return s
}

// copyFile copies src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWriteDupsNeverOverwrites: --write-dups refuses an input file, by its
// name, through a symlink or a hard link, even with --force; an existing
// file without --force; a path it cannot create. Each is one line on
// stderr naming the path, exit 2, before any input is read (nothing on
// stdout), and the file refused is left as it was.
func TestWriteDupsNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pcap")
	copyFile(t, seedPath("seed-nonidempotent-retry.pcap"), in)
	orig, _ := os.ReadFile(in)
	link := filepath.Join(dir, "link.pcap")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.pcap")
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling.pcap")
	if err := os.Symlink(filepath.Join(dir, "nowhere", "x.pcap"), dangling); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(dir, "existing.pcap")
	if err := os.WriteFile(existing, []byte("earlier evidence"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name      string
		out       string
		inputs    []string
		force     bool
		wantErr   string // in the one stderr line
		untouched string // a file that must keep its bytes
	}{
		{"the input itself", in, []string{in}, false, in + ": is an input", in},
		{"the input itself, --force", in, []string{in}, true, in + ": is an input", in},
		{"a symlink to the input", link, []string{in}, false, link + ": is the input " + in, in},
		{"a symlink to the input, --force", link, []string{in}, true, link + ": is the input " + in, in},
		{"the input given through a symlink", in, []string{link}, true, in + ": is the input " + link, in},
		{"a hard link of the input, --force", hard, []string{in}, true, hard + ": is the input " + in, in},
		{"the second input", in, []string{seedPath("seed-idempotent-retry.pcap"), in}, true, in + ": is an input", in},
		{"an existing file", existing, []string{in}, false, existing + ": file exists; give --force to overwrite it", existing},
		{"a dangling symlink", dangling, []string{in}, false, dangling + ": file exists; give --force", ""},
		{"a directory", dir, []string{in}, true, dir + ": is a directory", ""},
		{"in a missing directory", filepath.Join(dir, "nowhere", "out.pcap"), []string{in}, false,
			filepath.Join(dir, "nowhere", "out.pcap") + ": cannot be written: no such file or directory", ""},
		{"under a file", filepath.Join(existing, "out.pcap"), []string{in}, false,
			filepath.Join(existing, "out.pcap") + ": cannot be written: not a directory", existing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var keep []byte
			if tc.untouched != "" {
				keep, _ = os.ReadFile(tc.untouched)
			}
			args := []string{"analyze", "--write-dups", tc.out}
			if tc.force {
				args = append(args, "--force")
			}
			r := runCLI(append(args, tc.inputs...)...)
			if r.code != exitUsage {
				t.Errorf("exit %d, want %d", r.code, exitUsage)
			}
			want := "kdupcap analyze: --write-dups: " + tc.wantErr
			if !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("stderr %q, want one line starting %q", r.stderr, want)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q: the inputs were read", r.stdout)
			}
			if tc.untouched != "" {
				if got, _ := os.ReadFile(tc.untouched); !bytes.Equal(got, keep) {
					t.Errorf("%s changed", tc.untouched)
				}
			}
		})
	}
	if got, _ := os.ReadFile(in); !bytes.Equal(got, orig) {
		t.Fatal("the input changed")
	}
}

// TestWriteDupsWrites: a new file is written; an existing one only with
// --force, and then as a whole new pcap that reads back into the finding;
// a run that ends before writing leaves no file it created.
func TestWriteDupsWrites(t *testing.T) {
	in := seedPath("seed-nonidempotent-retry.pcap")
	tests := []struct {
		name     string
		existing []byte // nil: no file there before
		force    bool
		okWrites int // writes stdout takes before it fails; -1: all
		wantCode int
		wantFile bool // a pcap there after
	}{
		{"new file", nil, false, -1, exitOK, true},
		{"new file, --force", nil, true, -1, exitOK, true},
		{"existing file, --force", bytes.Repeat([]byte("old evidence "), 1000), true, -1, exitOK, true},
		{"new file, output fails", nil, false, 0, exitFailure, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "dups.pcap")
			if tc.existing != nil {
				if err := os.WriteFile(out, tc.existing, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"analyze", "--format", "json", "--write-dups", out, in}
			if tc.force {
				args = append(args, "--force")
			}
			var stdout, stderr bytes.Buffer
			if code := run(args, nil, &failAfter{tc.okWrites, &stdout}, &stderr); code != tc.wantCode {
				t.Fatalf("exit %d, want %d: %s", code, tc.wantCode, stderr.String())
			}
			b, err := os.ReadFile(out)
			if !tc.wantFile {
				if !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("%s left behind (%v)", out, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(b) < 24 || !isPcap(b) || bytes.Contains(b, []byte("old evidence")) {
				t.Fatalf("%s is no whole new pcap (%d bytes)", out, len(b))
			}
			if !strings.Contains(stderr.String(), "kdupcap: wrote 3 packets of 1 findings to "+out) {
				t.Errorf("stderr %q", stderr.String())
			}
			if back := cliAnalyze(t, nil, out); len(back.Findings) != 1 || back.Findings[0].Verdict != "unconfirmed" {
				t.Errorf("read back: %d findings", len(back.Findings))
			}
		})
	}
}

// isPcap reports whether b starts with a pcap file header (micro- or
// nanosecond, either byte order).
func isPcap(b []byte) bool {
	m := binary.LittleEndian.Uint32(b)
	return m == 0xa1b2c3d4 || m == 0xa1b23c4d || m == 0xd4c3b2a1 || m == 0x4d3cb2a1
}

// failAfter is an io.Writer that fails once it was handed this many
// writes (-1: never).
type failAfter struct {
	n int
	w *bytes.Buffer
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return f.w.Write(p)
}

// TestWriteDupsCheckedBeforeReading: an unwritable --write-dups fails at
// once although its input, a FIFO no one writes to, would block the
// reading for ever.
func TestWriteDupsCheckedBeforeReading(t *testing.T) {
	mkfifo := testenv.Tool(t, "mkfifo")
	dir := t.TempDir()
	fifo := filepath.Join(dir, "capture.fifo")
	if out, err := exec.Command(mkfifo, fifo).CombinedOutput(); err != nil {
		t.Fatalf("mkfifo: %v: %s", err, out)
	}
	bad := filepath.Join(dir, "nowhere", "dups.pcap")
	done := make(chan cliRun, 1)
	go func() { done <- runCLI("analyze", "--write-dups", bad, fifo) }()
	select {
	case r := <-done:
		want := "kdupcap analyze: --write-dups: " + bad + ": cannot be written: no such file or directory\n"
		if r.code != exitUsage || r.stderr != want || r.stdout != "" {
			t.Errorf("exit %d, stderr %q, stdout %q; want exit 2, stderr %q", r.code, r.stderr, r.stdout, want)
		}
	case <-time.After(10 * time.Second):
		// The run opened the FIFO: let it read an end and finish.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		<-done
		t.Fatal("--write-dups checked only after reading the input")
	}
}

// TestNoFalseAllClear: an input that fails (missing, a directory, empty,
// not a capture, truncated) never gives the all-clear sentence: the table
// says the input failed, with how far the results go, the JSON summary
// carries input_failed and failed_inputs; exit 2, with or without
// --fail-on-duplicate.
func TestNoFalseAllClear(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pcap")
	garbage := filepath.Join(dir, "garbage.pcap")
	truncated := filepath.Join(dir, "truncated.pcap")
	seed, err := os.ReadFile(seedPath("seed-nonidempotent-retry.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	for path, b := range map[string][]byte{empty: nil, garbage: []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), truncated: seed[:400]} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	missing := filepath.Join(dir, "missing.pcap")
	tests := []struct {
		name    string
		files   []string
		heading string // the table's first line of the failure
		upTo    int64  // results_up_to_byte of the failed file
	}{
		{"missing", []string{missing}, "Input failed: nothing was read, nothing was judged.", 0},
		{"a directory", []string{dir}, "Input failed: nothing was read, nothing was judged.", 0},
		{"empty", []string{empty}, "Input failed: nothing was read, nothing was judged.", 0},
		{"not a capture", []string{garbage}, "Input failed: nothing was read, nothing was judged.", 0},
		// Its first two packets end at byte 355: a request answered once,
		// no finding.
		{"truncated", []string{truncated}, "Input failed: these results are of what was read before the error, not of the whole input.", 355},
		{"one good, one missing", []string{seedPath("seed-idempotent-retry.pcap"), missing},
			"Input failed: these results are of what was read before the error, not of the whole input.", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			failed := tc.files[len(tc.files)-1]
			for _, fail := range []bool{false, true} {
				args := []string{"analyze"}
				if fail {
					args = append(args, "--fail-on-duplicate")
				}
				table := runCLI(append(args, tc.files...)...)
				js := runCLI(append(append(args, "--format", "json"), tc.files...)...)
				for _, r := range []cliRun{table, js} {
					if r.code != exitUsage {
						t.Errorf("exit %d, want %d: %s", r.code, exitUsage, r.stderr)
					}
					if strings.Contains(r.stdout, allClear) {
						t.Errorf("stdout gives the all-clear:\n%s", r.stdout)
					}
					if !strings.Contains(r.stderr, "kdupcap: "+failed+": ") {
						t.Errorf("stderr %q names no %s", r.stderr, failed)
					}
				}
				if !strings.Contains(table.stdout, tc.heading+"\n  "+failed+": ") {
					t.Errorf("table:\n%s\nwant %q then the error", table.stdout, tc.heading)
				}
				upTo := "results up to byte"
				if tc.upTo > 0 {
					if !strings.Contains(table.stdout, "\n  results up to byte 355 of "+failed+"\n") {
						t.Errorf("table says not how far the results go:\n%s", table.stdout)
					}
				} else if strings.Contains(table.stdout, upTo) {
					t.Errorf("table says %q of a file not read:\n%s", upTo, table.stdout)
				}
				s := jsonSummaryOf(t, js.stdout)
				fi, _ := s["failed_inputs"].([]any)
				if s["input_failed"] != true || len(fi) != 1 || len(s["errors"].([]any)) != 1 {
					t.Fatalf("JSON summary input_failed %v failed_inputs %v errors %v", s["input_failed"], s["failed_inputs"], s["errors"])
				}
				f := fi[0].(map[string]any)
				if f["file"] != failed || f["results_up_to_byte"] != float64(tc.upTo) {
					t.Errorf("failed_inputs %v, want %s up to byte %d", f, failed, tc.upTo)
				}
				if _, ok := s["nothing_to_judge"]; ok && tc.upTo == 0 && len(tc.files) == 1 {
					t.Errorf("nothing_to_judge %v of an input not read: the failure says it", s["nothing_to_judge"])
				}
			}
		})
	}
}

// Addresses of the hand-made captures.
var (
	testClient = netip.MustParseAddrPort("10.1.0.1:40000")
	testBroker = netip.MustParseAddrPort("10.1.0.2:9092")
	testWeb    = netip.MustParseAddrPort("10.1.0.3:8080")
)

// tcpConversation is an Ethernet capture of one TCP connection from client
// to server: the handshake, each exchange (the client's bytes, then the
// server's), and the close.
func tcpConversation(t *testing.T, client, server netip.AddrPort, exchanges ...[2][]byte) []rawPacket {
	t.Helper()
	var (
		pkts     []rawPacket
		ts       = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		seq      = [2]uint32{1000, 5000} // next sequence number of client, server
		endpoint = [2]netip.AddrPort{client, server}
	)
	send := func(from int, syn, fin bool, payload []byte) {
		src, dst := endpoint[from], endpoint[1-from]
		s, d := src.Addr().As4(), dst.Addr().As4()
		eth := &layers.Ethernet{SrcMAC: []byte{2, 0, 0, 0, 0, byte(from + 1)}, DstMAC: []byte{2, 0, 0, 0, 0, byte(2 - from)}, EthernetType: layers.EthernetTypeIPv4}
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: s[:], DstIP: d[:]}
		tcp := &layers.TCP{SrcPort: layers.TCPPort(src.Port()), DstPort: layers.TCPPort(dst.Port()), Seq: seq[from], SYN: syn, FIN: fin, PSH: len(payload) > 0, Window: 65535}
		if !(syn && from == 0) {
			tcp.ACK, tcp.Ack = true, seq[1-from]
		}
		if err := tcp.SetNetworkLayerForChecksum(ip); err != nil {
			t.Fatal(err)
		}
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, tcp, gopacket.Payload(payload)); err != nil {
			t.Fatal(err)
		}
		seq[from] += uint32(len(payload))
		if syn || fin {
			seq[from]++
		}
		ts = ts.Add(time.Millisecond)
		pkts = append(pkts, rawPacket{gopacket.CaptureInfo{Timestamp: ts}, bytes.Clone(buf.Bytes())})
	}
	send(0, true, false, nil)
	send(1, true, false, nil)
	send(0, false, false, nil)
	for _, x := range exchanges {
		send(0, false, false, x[0])
		send(1, false, false, x[1])
	}
	send(0, false, true, nil)
	send(1, false, true, nil)
	send(0, false, false, nil)
	return pkts
}

// kafkaExchange is req framed as a client sends it, and its response
// (filled by fill) framed as a broker answers.
func kafkaExchange(req kmsg.Request, corr int32, fill func(kmsg.Response)) [2][]byte {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if fill != nil {
		fill(resp)
	}
	return [2][]byte{
		kmsg.NewRequestFormatter(kmsg.FormatterClientID("consumer-1")).AppendRequest(nil, req, corr),
		kwire.AppendResponse(nil, corr, resp),
	}
}

// udpPackets are n Ethernet frames of UDP (DNS-like) traffic.
func udpPackets(t *testing.T, n int) []rawPacket {
	t.Helper()
	var pkts []rawPacket
	ts := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range n {
		eth := &layers.Ethernet{SrcMAC: []byte{2, 0, 0, 0, 0, 1}, DstMAC: []byte{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: []byte{10, 1, 0, 1}, DstIP: []byte{10, 1, 0, 53}}
		udp := &layers.UDP{SrcPort: 40000, DstPort: 53}
		if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
			t.Fatal(err)
		}
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, udp, gopacket.Payload("query")); err != nil {
			t.Fatal(err)
		}
		pkts = append(pkts, rawPacket{gopacket.CaptureInfo{Timestamp: ts.Add(time.Duration(i) * time.Millisecond)}, bytes.Clone(buf.Bytes())})
	}
	return pkts
}

// withoutSecrets writes the pcapng src without its Decryption Secrets
// Blocks to dst: a TLS capture whose keys were never given.
func withoutSecrets(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var order binary.ByteOrder = binary.LittleEndian
	if len(b) >= 12 && binary.BigEndian.Uint32(b[8:]) == 0x1a2b3c4d {
		order = binary.BigEndian
	}
	var out []byte
	dropped := 0
	for len(b) >= 12 {
		typ, n := order.Uint32(b), int(order.Uint32(b[4:]))
		if n < 12 || n > len(b) {
			t.Fatalf("%s: block of %d bytes", src, n)
		}
		if typ == 0x0000000a { // Decryption Secrets Block
			dropped++
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	if dropped == 0 {
		t.Fatalf("%s holds no secrets block", src)
	}
	if err := os.WriteFile(dst, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestNothingToJudge: a capture without produce requests says what it
// held and the hint that fits, never the all-clear; the JSON summary says
// why in nothing_to_judge; --fail-on-duplicate exits 4 saying why in one
// line, and 0 without it.
func TestNothingToJudge(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	writePcap(t, path("no-packets.pcap"), layers.LinkTypeEthernet, nil)
	writePcap(t, path("udp.pcap"), layers.LinkTypeEthernet, udpPackets(t, 3))
	writePcap(t, path("http.pcap"), layers.LinkTypeEthernet, tcpConversation(t, testClient, testWeb,
		[2][]byte{[]byte("GET / HTTP/1.1\r\nHost: web\r\n\r\n"), []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")}))
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 9
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 11
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "orders"
	ft.Partitions = []kmsg.FetchRequestTopicPartition{kmsg.NewFetchRequestTopicPartition()}
	fetch.Topics = []kmsg.FetchRequestTopic{ft}
	writePcap(t, path("metadata.pcap"), layers.LinkTypeEthernet, tcpConversation(t, testClient, testBroker, kafkaExchange(meta, 1, nil)))
	writePcap(t, path("consumer.pcap"), layers.LinkTypeEthernet, tcpConversation(t, testClient, testBroker,
		kafkaExchange(meta, 1, nil),
		kafkaExchange(fetch, 2, func(r kmsg.Response) {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic = "orders"
			rt.Partitions = []kmsg.FetchResponseTopicPartition{kmsg.NewFetchResponseTopicPartition()}
			r.(*kmsg.FetchResponse).Topics = []kmsg.FetchResponseTopic{rt}
		})))
	withoutSecrets(t, seedPath("kgo-tls13-nonidempotent-timeout.pcapng"), path("tls-no-key.pcapng"))

	tests := []struct {
		file, reason string
		text, hint   string // the table's lines
	}{
		{"no-packets.pcap", "no_packets", "the capture holds no packet",
			"capture on the interface the producers' traffic crosses, e.g. tcpdump -i any -w FILE tcp port 9092"},
		{"udp.pcap", "no_tcp", "the capture's 3 packets hold no TCP connection",
			"Kafka runs over TCP: capture the brokers' traffic, e.g. tcpdump -i any -w FILE tcp port 9092"},
		{"http.pcap", "no_kafka", "the TCP connection is not Kafka (none on a --port port, none whose bytes parse as Kafka requests)",
			"if the brokers listen on other ports, give them with --port (e.g. --port 9093,19092)"},
		{"tls-no-key.pcapng", "tls_undecrypted", "no Kafka connection could be read: the 3 TCP connections are TLS, not decrypted",
			"give --tls-keylog FILE with the clients' TLS keys (their SSLKEYLOGFILE); see TLS connections below"},
		{"metadata.pcap", "no_produce", "the Kafka connection carries no produce request, only metadata and other requests (2 frames)",
			"kdupcap judges producers' re-sends: capture where the producers connect to the brokers"},
		{"consumer.pcap", "no_produce", "the Kafka connection carries no produce request, only consumers' traffic (1 fetch response)",
			"kdupcap judges producers' re-sends: capture where the producers connect to the brokers"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			for _, fail := range []bool{false, true} {
				args := []string{"analyze", path(tc.file)}
				want := exitOK
				if fail {
					args, want = append(args, "--fail-on-duplicate"), exitNothing
				}
				table, js := runCLI(args...), runCLI(append(args, "--format", "json")...)
				for _, r := range []cliRun{table, js} {
					if r.code != want {
						t.Errorf("%v: exit %d, want %d: %s", args, r.code, want, r.stderr)
					}
					if strings.Contains(r.stdout, allClear) {
						t.Errorf("stdout gives the all-clear:\n%s", r.stdout)
					}
					line := "kdupcap: nothing to judge: " + tc.text + " (--fail-on-duplicate)\n"
					if fail && !strings.HasSuffix(r.stderr, line) {
						t.Errorf("stderr %q, want it to end with %q", r.stderr, line)
					}
				}
				if lines := "Nothing to judge: " + tc.text + ".\nhint: " + tc.hint + "\n"; !strings.HasPrefix(table.stdout, lines) {
					t.Errorf("table:\n%s\nwant it to start with:\n%s", table.stdout, lines)
				}
				n, _ := jsonSummaryOf(t, js.stdout)["nothing_to_judge"].(map[string]any)
				if n["reason"] != tc.reason || n["text"] != tc.text || n["hint"] != tc.hint {
					t.Errorf("nothing_to_judge %v, want reason %s", n, tc.reason)
				}
			}
		})
	}
}

// TestFailOnDuplicateHarm: --fail-on-duplicate exits 3 on what can hurt
// (duplicated; unconfirmed of a producer that is not idempotent, or
// re-sent under another epoch), saying why in one line on stderr, and 0 on
// what the broker deduplicates (deduplicated; an idempotent producer's
// unconfirmed re-send).
func TestFailOnDuplicateHarm(t *testing.T) {
	// The idempotent seed without the retry's answer: an idempotent
	// producer's re-send, unconfirmed.
	lt, pkts := readPcap(t, seedPath("seed-idempotent-retry.pcap"))
	idemUnconfirmed := filepath.Join(t.TempDir(), "idempotent-unconfirmed.pcap")
	writePcap(t, idemUnconfirmed, lt, pkts[:len(pkts)-1])
	// The epoch bump cut after the re-send under the new epoch, before its
	// answer: records re-sent across epochs, unconfirmed.
	lt, pkts = readPcap(t, seedPath("rdkafka211-idempotent-epoch-bump.pcap"))
	cut := time.Date(2026, 12, 2, 2, 26, 46, 972500000, time.UTC)
	var before []rawPacket
	for _, p := range pkts {
		if p.ci.Timestamp.Before(cut) {
			before = append(before, p)
		}
	}
	epochUnconfirmed := filepath.Join(filepath.Dir(idemUnconfirmed), "epoch-unconfirmed.pcap")
	writePcap(t, epochUnconfirmed, lt, before)

	tests := []struct {
		name, file string
		verdict    string // of every finding
		code       int
		stderr     string // the last line
	}{
		{"deduplicated", seedPath("seed-idempotent-retry.pcap"), "deduplicated", exitOK, ""},
		{"idempotent unconfirmed", idemUnconfirmed, "unconfirmed", exitOK, ""},
		{"not idempotent unconfirmed", seedPath("kgo-v13-nonidempotent-closed-after-append.pcap"), "unconfirmed", exitDuplicate,
			"kdupcap: 2 unconfirmed findings of producers that are not idempotent (--fail-on-duplicate)\n"},
		{"duplicated", seedPath("kgo-v13-nonidempotent-timeout.pcap"), "duplicated", exitDuplicate,
			"kdupcap: 2 duplicated findings (--fail-on-duplicate)\n"},
		{"idempotent, duplicated across an epoch bump", seedPath("rdkafka211-idempotent-epoch-bump.pcap"), "duplicated", exitDuplicate,
			"kdupcap: 1 duplicated finding (--fail-on-duplicate)\n"},
		{"idempotent, unconfirmed across an epoch bump", epochUnconfirmed, "unconfirmed", exitDuplicate,
			"kdupcap: 1 unconfirmed finding re-sent under another producer epoch or ID (--fail-on-duplicate)\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := cliAnalyze(t, nil, "--fail-on-duplicate", tc.file)
			all := append(res.Findings, res.RecordFindings...)
			if len(all) == 0 {
				t.Fatal("no finding")
			}
			for _, f := range all {
				if f.Verdict != tc.verdict {
					t.Fatalf("verdict %s, want %s", f.Verdict, tc.verdict)
				}
			}
			if res.Code != tc.code {
				t.Errorf("exit %d, want %d: %s", res.Code, tc.code, res.Stderr)
			}
			if got := lastLine(res.Stderr); tc.stderr != "" && got != tc.stderr || tc.stderr == "" && strings.Contains(res.Stderr, "--fail-on-duplicate") {
				t.Errorf("stderr %q, want last line %q", res.Stderr, tc.stderr)
			}
		})
	}
}

func lastLine(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return s[strings.LastIndex(s, "\n")+1:] + "\n"
}

// TestHarmText: the line --fail-on-duplicate gives for each kind of harm.
func TestHarmText(t *testing.T) {
	tests := []struct {
		dup, notIdempotent, changed, other int
		want                               string
	}{
		{0, 0, 0, 0, ""},
		{1, 0, 0, 0, "1 duplicated finding"},
		{2, 1, 0, 0, "2 duplicated findings and 1 unconfirmed finding of producers that are not idempotent"},
		{0, 0, 3, 0, "3 unconfirmed findings re-sent under another producer epoch or ID"},
		{1, 2, 1, 1, "1 duplicated finding, 2 unconfirmed findings of producers that are not idempotent, " +
			"1 unconfirmed finding re-sent under another producer epoch or ID and 1 unconfirmed finding the broker does not deduplicate"},
	}
	for _, tc := range tests {
		if got := harmText(tc.dup, tc.notIdempotent, tc.changed, tc.other); got != tc.want {
			t.Errorf("harmText(%d, %d, %d, %d) = %q, want %q", tc.dup, tc.notIdempotent, tc.changed, tc.other, got, tc.want)
		}
	}
}

// TestLiveEvidenceDirChecked: live's --evidence DIR that cannot hold a
// file fails before the first packet, in one line naming it, exit 2; one
// that can is made.
func TestLiveEvidenceDirChecked(t *testing.T) {
	testenv.Capture(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, dir, stderr string }{
		{"under a file", filepath.Join(file, "evidence"), "kdupcap live: --evidence: " + filepath.Join(file, "evidence") + ": cannot be made: not a directory\n"},
		{"a file", file, "kdupcap live: --evidence: " + file + ": cannot be made: not a directory\n"},
		{"a new directory", filepath.Join(dir, "new", "evidence"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			start := time.Now()
			code := runLive(t.Context(), []string{"-i", "lo", "--port", "1", "--duration", "1ms", "--evidence", tc.dir}, &stdout, &stderr)
			switch {
			case tc.stderr != "" && (code != exitUsage || stderr.String() != tc.stderr || stdout.Len() > 0):
				t.Errorf("exit %d, stderr %q, stdout %q; want exit 2, stderr %q", code, stderr.String(), stdout.String(), tc.stderr)
			case tc.stderr == "" && code != exitOK:
				t.Errorf("exit %d: %s", code, stderr.String())
			case tc.stderr == "":
				if entries, err := os.ReadDir(tc.dir); err != nil || len(entries) != 0 {
					t.Errorf("evidence directory: %v, %d entries left", err, len(entries))
				}
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}
