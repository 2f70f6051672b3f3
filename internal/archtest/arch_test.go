package archtest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const module = "github.com/kdupcap/kdupcap/"

// rule says what one package must never import: forbidden directly
// (Imports) or at any depth (Deps). Names are the module's packages
// relative to the module root, or whole import paths of other modules.
type rule struct {
	pkg    string
	direct []string
	deep   []string
}

// rules are the boundaries each package's doc.go states.
var rules = []rule{
	{pkg: "capture", deep: []string{"decode", "detect", "profile", "report", "pipeline"}},
	{pkg: "capture/live", deep: []string{"decode", "detect", "profile", "report", "pipeline"}},
	{pkg: "decode", deep: []string{"capture", "detect", "profile", "report", "pipeline", "github.com/gopacket/gopacket"}},
	{pkg: "detect", deep: []string{"capture", "profile", "report", "pipeline", "github.com/gopacket/gopacket"}},
	{pkg: "profile", deep: []string{"capture", "report", "pipeline", "github.com/gopacket/gopacket"}},
	{pkg: "report", direct: []string{"decode"}, deep: []string{"capture", "pipeline", "github.com/gopacket/gopacket",
		"github.com/twmb/franz-go/pkg/kgo", "github.com/prometheus/client_golang"}},
	{pkg: "report/emit", direct: []string{"decode"}, deep: []string{"capture", "pipeline", "cmd/kdupcap", "github.com/prometheus/client_golang"}},
	{pkg: "report/html", deep: []string{"capture", "pipeline", "cmd/kdupcap", "github.com/gopacket/gopacket"}},
	{pkg: "report/metrics", direct: []string{"decode"}, deep: []string{"capture", "pipeline", "cmd/kdupcap", "github.com/twmb/franz-go/pkg/kgo"}},
	{pkg: "fleet", deep: []string{"capture", "detect", "profile", "report", "pipeline", "cmd/kdupcap", "github.com/gopacket/gopacket"}},
	{pkg: "pipeline", deep: []string{"cmd/kdupcap"}},
	// Test tools, and the browser tests' chromedp: never in the binary.
	{pkg: "cmd/kdupcap", deep: []string{"internal/kafkatest", "internal/gencap", "github.com/chromedp/chromedp", "github.com/chromedp/cdproto"}},
	{pkg: "internal/fifo", deep: []string{"capture", "decode", "detect", "profile", "report", "pipeline"}},
	{pkg: "internal/hostile", deep: []string{"capture", "decode", "detect", "profile", "report", "pipeline"}},
	{pkg: "internal/readmecheck", deep: []string{"capture", "decode", "detect", "profile", "report", "pipeline"}},
	{pkg: "internal/releasecheck", deep: []string{"capture", "decode", "detect", "profile", "report", "pipeline", "cmd/kdupcap"}},
}

type listed struct {
	ImportPath string
	Dir        string
	Imports    []string
	Deps       []string
}

// list runs `go list -deps=false -json` on the module's packages.
func list(t *testing.T) map[string]listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	pkgs := map[string]listed{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, module)] = p
	}
	return pkgs
}

// full is the import path of a rule's name.
func full(name string) string {
	if strings.Contains(name, ".") {
		return name
	}
	return module + name
}

// imports reports whether paths holds name or, for another module's
// package, anything under it.
func imports(paths []string, name string) bool {
	want := full(name)
	for _, p := range paths {
		if p == want || strings.HasPrefix(p, want+"/") {
			return true
		}
	}
	return false
}

// TestImports fails when a stage imports a package that comes after it in
// the flow, or one its doc.go forbids.
func TestImports(t *testing.T) {
	pkgs := list(t)
	for _, r := range rules {
		p, ok := pkgs[r.pkg]
		if !ok {
			t.Errorf("package %s not found: a rule names it", r.pkg)
			continue
		}
		for _, f := range r.direct {
			if imports(p.Imports, f) {
				t.Errorf("%s imports %s, which its doc.go forbids", r.pkg, f)
			}
		}
		for _, f := range r.deep {
			if imports(p.Deps, f) {
				t.Errorf("%s depends on %s, which its doc.go forbids", r.pkg, f)
			}
		}
	}
	// No package of the module but the command's tests imports the command.
	for name, p := range pkgs {
		if name != "cmd/kdupcap" && imports(p.Imports, "cmd/kdupcap") {
			t.Errorf("%s imports cmd/kdupcap", name)
		}
	}
}

// mustNot is the sentence of a doc.go that says what the package must
// never import.
var mustNot = regexp.MustCompile(`(?s)must never\s+import(.*?)[.:;]\s`)

// TestDocsSayIt fails when a package's doc.go stops naming what its rule
// forbids, so the docs and the rules stay one statement.
func TestDocsSayIt(t *testing.T) {
	pkgs := list(t)
	for _, r := range rules {
		p, ok := pkgs[r.pkg]
		if !ok {
			continue
		}
		doc, err := os.ReadFile(filepath.Join(p.Dir, "doc.go"))
		if err != nil {
			t.Errorf("%s: %v", r.pkg, err)
			continue
		}
		text := strings.Join(strings.Fields(strings.ReplaceAll(string(doc), "//", "")), " ")
		m := mustNot.FindStringSubmatch(text + " ")
		if m == nil {
			t.Errorf("%s/doc.go has no sentence saying what it must never import", r.pkg)
			continue
		}
		for _, f := range append(append([]string(nil), r.direct...), r.deep...) {
			name := filepath.Base(f)
			if !strings.Contains(m[1], name) {
				t.Errorf("%s/doc.go: %q does not name %s", r.pkg, strings.TrimSpace(m[1]), name)
			}
		}
	}
}
