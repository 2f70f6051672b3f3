package releasecheck

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/internal/testenv"
)

// root is the module root, where goreleaser runs.
const root = "../.."

// targets are the platforms of the release: every one has an archive, the
// Linux ones a deb and an rpm.
var targets = []struct{ goos, goarch string }{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// archiveFiles are the members of every archive besides the binary, under
// its one top directory.
var archiveFiles = []string{
	"CHANGELOG.md", "LICENSE", "README.md",
	"completions/kdupcap.bash", "completions/kdupcap.fish", "completions/kdupcap.zsh",
	"man/kdupcap.1",
}

// debFiles are the files every deb installs (dpkg-deb -c lists them with a
// leading ".").
var debFiles = []string{
	"/usr/bin/kdupcap",
	"/usr/share/man/man1/kdupcap.1.gz",
	"/usr/share/bash-completion/completions/kdupcap",
	"/usr/share/zsh/vendor-completions/_kdupcap",
	"/usr/share/fish/vendor_completions.d/kdupcap.fish",
	"/usr/lib/systemd/system/kdupcap-live.service",
	"/etc/default/kdupcap",
	"/usr/share/doc/kdupcap/copyright",
	"/usr/share/doc/kdupcap/README.md",
	"/usr/share/doc/kdupcap/CHANGELOG.md",
}

// artifact is an entry of goreleaser's dist/artifacts.json.
type artifact struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Goos   string `json:"goos"`
	Goarch string `json:"goarch"`
	Type   string `json:"type"`
	Extra  struct {
		Format    string `json:"Format"`
		WrappedIn string `json:"WrappedIn"`
	} `json:"extra"`
}

// TestSnapshot builds the release as `make release-snapshot` does, into a
// temporary dist directory, and checks what a user downloads: each target's
// archive and its members, the checksums, static Linux binaries, the host's
// binary's version, each Linux package.
func TestSnapshot(t *testing.T) {
	goreleaser := testenv.Tool(t, "goreleaser")
	testenv.Tool(t, "make")
	testenv.Tool(t, "git")
	dist := snapshot(t, goreleaser)

	var meta struct {
		Version string `json:"version"`
	}
	readJSON(t, filepath.Join(dist, "metadata.json"), &meta)
	if !strings.Contains(meta.Version, "snapshot") {
		t.Errorf("metadata.json version %q: want a snapshot version (.goreleaser.yaml's snapshot.version_template)", meta.Version)
	}
	var artifacts []artifact
	readJSON(t, filepath.Join(dist, "artifacts.json"), &artifacts)
	sums := checksums(t, filepath.Join(dist, "checksums.txt"))

	for _, tg := range targets {
		t.Run(tg.goos+"_"+tg.goarch, func(t *testing.T) {
			a := find(artifacts, "Archive", tg.goos, tg.goarch, "")
			if a == nil {
				t.Fatalf("no archive for %s/%s in artifacts.json", tg.goos, tg.goarch)
			}
			path := filepath.Join(dist, a.Name)
			checkSum(t, path, sums)
			bin := "kdupcap"
			wantFormat := "tar.gz"
			if tg.goos == "windows" {
				bin, wantFormat = "kdupcap.exe", "zip"
			}
			if a.Extra.Format != wantFormat || !strings.HasSuffix(a.Name, "."+wantFormat) {
				t.Errorf("%s: format %q, want %s", a.Name, a.Extra.Format, wantFormat)
			}
			members := listArchive(t, path)
			t.Logf("%s:\n  %s", a.Name, strings.Join(members, "\n  "))
			top := a.Extra.WrappedIn
			if top == "" || top+"."+wantFormat != a.Name {
				t.Errorf("%s: wrapped in %q, want the archive's name without .%s", a.Name, top, wantFormat)
			}
			var want []string
			for _, f := range append([]string{bin}, archiveFiles...) {
				want = append(want, top+"/"+f)
			}
			slices.Sort(want)
			if !slices.Equal(members, want) {
				t.Errorf("%s holds\n  %s\nwant\n  %s", a.Name, strings.Join(members, "\n  "), strings.Join(want, "\n  "))
			}
			if tg.goos != "linux" {
				return
			}
			exe := extract(t, path, top+"/"+bin)
			checkStatic(t, exe, tg.goarch)
			if runtime.GOOS == tg.goos && runtime.GOARCH == tg.goarch {
				checkVersion(t, exe, meta.Version, tg.goos, tg.goarch)
			}
			for _, format := range []string{"deb", "rpm"} {
				p := find(artifacts, "Linux Package", tg.goos, tg.goarch, format)
				if p == nil {
					t.Errorf("no %s for %s in artifacts.json", format, tg.goarch)
					continue
				}
				path := filepath.Join(dist, p.Name)
				checkSum(t, path, sums)
				if format == "deb" {
					checkDeb(t, path, tg.goarch)
				} else {
					checkRPM(t, path)
				}
			}
		})
	}
}

// snapshot runs goreleaser on the repository's configuration with dist set
// to a temporary directory, and returns that directory.
func snapshot(t *testing.T, goreleaser string) string {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`(?m)^dist:`).Match(cfg) {
		t.Fatal(".goreleaser.yaml sets dist: the test sets it to a temporary directory (make release-snapshot uses the default, dist/)")
	}
	tmp := t.TempDir()
	dist := filepath.Join(tmp, "dist")
	cfgPath := filepath.Join(tmp, "goreleaser.yaml")
	if err := os.WriteFile(cfgPath, append(cfg, "\ndist: "+dist+"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goreleaser, "release", "--snapshot", "--clean", "--skip=publish", "--config", cfgPath)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), remoteEnv(t)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("goreleaser release --snapshot: %v after %v:\n%s", err, time.Since(start).Round(time.Second), tail(out.String(), 60))
	}
	t.Logf("goreleaser release --snapshot took %v", time.Since(start).Round(100*time.Millisecond))
	return dist
}

// remoteEnv gives git a remote URL through the environment when the
// checkout has no remote: goreleaser, finding none, would replace the
// commit, its date and every file's time with placeholders.
func remoteEnv(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("git", "remote")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git remote: %v", err)
	}
	if len(bytes.TrimSpace(out)) > 0 || os.Getenv("GIT_CONFIG_COUNT") != "" {
		return nil
	}
	return []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=remote.origin.url",
		"GIT_CONFIG_VALUE_0=https://github.com/kdupcap/kdupcap.git"}
}

// find is the artifact of type typ for goos/goarch (and, for a package,
// its format), or nil.
func find(as []artifact, typ, goos, goarch, format string) *artifact {
	for i, a := range as {
		if a.Type == typ && a.Goos == goos && a.Goarch == goarch && (format == "" || a.Extra.Format == format) {
			return &as[i]
		}
	}
	return nil
}

// readJSON decodes the JSON file path into v.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// checksums reads checksums.txt: file name to SHA-256 in hex.
func checksums(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("%s: line %q is not \"SHA256  NAME\"", path, sc.Text())
		}
		sums[name] = sum
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sums
}

// checkSum fails unless checksums.txt holds the SHA-256 of the file path.
func checkSum(t *testing.T, path string, sums map[string]string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	name := filepath.Base(path)
	if got, want := sums[name], hex.EncodeToString(h[:]); got != want {
		t.Errorf("checksums.txt: %s is %q, want %s", name, got, want)
	}
}

// listArchive lists the regular files of a .tar.gz or .zip, sorted.
func listArchive(t *testing.T, path string) []string {
	t.Helper()
	var names []string
	err := eachMember(path, func(name string, mode os.FileMode, _ io.Reader) error {
		if mode.IsRegular() {
			names = append(names, name)
		}
		if strings.HasSuffix(name, "/kdupcap") || strings.HasSuffix(name, "/kdupcap.exe") {
			if mode.Perm()&0o111 == 0 {
				return fmt.Errorf("%s: mode %v, not executable", name, mode)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	slices.Sort(names)
	return names
}

// extract writes the archive's member name to a temporary file, executable,
// and returns its path.
func extract(t *testing.T, path, name string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(name))
	found := false
	err := eachMember(path, func(n string, _ os.FileMode, r io.Reader) error {
		if n != name {
			return nil
		}
		found = true
		f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, r); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if !found {
		t.Fatalf("%s has no %s", path, name)
	}
	return out
}

// eachMember calls fn with every member of a .tar.gz or .zip archive.
func eachMember(path string, fn func(name string, mode os.FileMode, r io.Reader) error) error {
	if strings.HasSuffix(path, ".zip") {
		z, err := zip.OpenReader(path)
		if err != nil {
			return err
		}
		defer z.Close()
		for _, f := range z.File {
			r, err := f.Open()
			if err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
			err = fn(f.Name, f.Mode(), r)
			r.Close()
			if err != nil {
				return err
			}
		}
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(h.Name, h.FileInfo().Mode(), tr); err != nil {
			return err
		}
	}
}

// checkStatic fails unless exe is an ELF executable for goarch with no
// program interpreter: static, so it runs on any Linux host.
func checkStatic(t *testing.T, exe, goarch string) {
	t.Helper()
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatalf("%s: %v", exe, err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[goarch]
	if f.Machine != want {
		t.Errorf("%s: machine %v, want %v", exe, f.Machine, want)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s (%s) has a program interpreter: not static (CGO_ENABLED=0?)", exe, goarch)
		}
	}
}

// checkVersion runs `kdupcap version --format json` and checks the version
// goreleaser stamped (-X main.version) and the build information.
func checkVersion(t *testing.T, exe, version, goos, goarch string) {
	t.Helper()
	out, err := exec.Command(exe, "version", "--format", "json").Output()
	if err != nil {
		t.Fatalf("%s version --format json: %v", exe, err)
	}
	var v struct {
		Version string `json:"version"`
		Module  string `json:"module"`
		OS      string `json:"os"`
		Arch    string `json:"arch"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%s version --format json: %v: %s", exe, err, out)
	}
	t.Logf("kdupcap version --format json: %s", bytes.TrimSpace(out))
	if v.Version != version || v.Module != "github.com/kdupcap/kdupcap" || v.OS != goos || v.Arch != goarch {
		t.Errorf("version %+v, want version %s, module github.com/kdupcap/kdupcap, %s/%s", v, version, goos, goarch)
	}
}

// checkDeb lists the deb with dpkg-deb: its package fields, files,
// conffiles and maintainer scripts.
func checkDeb(t *testing.T, path, goarch string) {
	t.Helper()
	dpkg := testenv.Tool(t, "dpkg-deb")
	// run runs dpkg-deb with args, PKG standing for the deb's path.
	run := func(args ...string) string {
		args = slices.Clone(args)
		for i, a := range args {
			if a == "PKG" {
				args[i] = path
			}
		}
		out, err := exec.Command(dpkg, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("dpkg-deb %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if got, want := run("--showformat=${Package} ${Architecture}", "-W", "PKG"), "kdupcap "+goarch; got != want {
		t.Errorf("%s: %q, want %q", path, got, want)
	}
	have := map[string]bool{}
	for _, line := range strings.Split(run("-c", "PKG"), "\n") {
		if fields := strings.Fields(line); len(fields) >= 6 {
			have[strings.TrimPrefix(fields[len(fields)-1], ".")] = true
		}
	}
	for _, f := range debFiles {
		if !have[f] {
			t.Errorf("%s has no %s", filepath.Base(path), f)
		}
	}
	if have["/usr/share/zsh/site-functions/_kdupcap"] || have["/usr/share/licenses/kdupcap/LICENSE"] {
		t.Errorf("%s holds the rpm's zsh completion or licence path", filepath.Base(path))
	}
	if got := run("-I", "PKG", "conffiles"); !strings.Contains(got, "/etc/default/kdupcap") {
		t.Errorf("%s conffiles: %q, want /etc/default/kdupcap (kept across upgrades)", filepath.Base(path), got)
	}
	for _, script := range []string{"postinst", "prerm", "postrm"} {
		if got := run("-I", "PKG", script); !strings.HasPrefix(got, "#!/bin/sh") {
			t.Errorf("%s %s: %q, want the packaging/scripts one", filepath.Base(path), script, tail(got, 3))
		}
	}
}

// checkRPM checks the rpm's lead (no rpm tool is needed): magic, major
// version 3, a binary package.
func checkRPM(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lead := make([]byte, 96)
	if _, err := io.ReadFull(f, lead); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if !bytes.Equal(lead[:4], []byte{0xed, 0xab, 0xee, 0xdb}) || lead[4] != 3 || lead[6] != 0 || lead[7] != 0 {
		t.Errorf("%s: lead % x is not a binary rpm v3's", path, lead[:8])
	}
	if name := string(bytes.TrimRight(lead[10:76], "\x00")); !strings.HasPrefix(name, "kdupcap-") {
		t.Errorf("%s: package name %q, want kdupcap-VERSION", path, name)
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
