package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is set at build time with -ldflags "-X main.version=..." (a
// release's, by goreleaser); "dev" leaves it to the build information the
// Go toolchain writes into every binary, a plain go build's included.
var version = "dev"

// versionInfo is what `kdupcap version` says: the module's version, the
// commit built (from the VCS stamp of go build), the Go toolchain and the
// platform.
type versionInfo struct {
	Version  string `json:"version"`            // v1.2.0, a pseudo-version of go build, or "devel"
	Module   string `json:"module"`             // the main module's path
	Commit   string `json:"commit,omitempty"`   // vcs.revision
	Time     string `json:"time,omitempty"`     // vcs.time: the commit's time, RFC 3339
	Modified bool   `json:"modified,omitempty"` // vcs.modified: built with changes not committed
	Go       string `json:"go"`                 // the toolchain: go1.26.8
	OS       string `json:"os"`
	Arch     string `json:"arch"`
}

// readVersion makes the versionInfo of a binary whose -ldflags version is
// override ("dev": none) and build information bi (nil: none read).
func readVersion(override string, bi *debug.BuildInfo) versionInfo {
	v := versionInfo{Version: override, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi == nil {
		bi = &debug.BuildInfo{}
	}
	if v.Version == "" || v.Version == "dev" {
		v.Version = bi.Main.Version
	}
	if v.Version == "" || v.Version == "(devel)" {
		v.Version = "devel"
	}
	v.Module = bi.Main.Path
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		case "GOOS":
			v.OS = s.Value
		case "GOARCH":
			v.Arch = s.Value
		}
	}
	return v
}

// String is the line for a person:
//
//	kdupcap v1.2.0 (commit 0123456789ab, 2026-12-02T02:00:00Z, modified) go1.26.8 linux/amd64
func (v versionInfo) String() string {
	var vcs []string
	if v.Commit != "" {
		vcs = append(vcs, "commit "+v.Commit[:min(len(v.Commit), 12)])
	}
	if v.Time != "" {
		vcs = append(vcs, v.Time)
	}
	if v.Modified {
		vcs = append(vcs, "modified")
	}
	s := "kdupcap " + v.Version
	if len(vcs) > 0 {
		s += " (" + strings.Join(vcs, ", ") + ")"
	}
	return s + " " + v.Go + " " + v.OS + "/" + v.Arch
}

// versionFlags are the flags of `kdupcap version`.
func versionFlags(format *string) *flag.FlagSet {
	fs := newFlagSet("kdupcap version")
	choiceVar(fs, format, "format", "text", []string{"text", "json"}, "text: one line; json: one JSON object with the fields apart (version, module, commit, time, modified, go, os, arch)")
	return fs
}

// runVersion is `kdupcap version` and `kdupcap --version`.
func runVersion(cmds []command, args []string, stdout, stderr io.Writer) int {
	c, _ := lookup(cmds, "version")
	var format string
	operands, code := parseCommand(c, versionFlags(&format), args, stdout, stderr)
	switch {
	case code >= 0:
		return code
	case len(operands) > 0:
		return usageFail(stderr, c, fmt.Errorf("unexpected argument %s", quoteArg(operands[0])))
	}
	bi, _ := debug.ReadBuildInfo()
	v := readVersion(version, bi)
	if format == "json" {
		b, err := json.Marshal(v)
		if err != nil {
			fmt.Fprintf(stderr, "kdupcap version: %v\n", err)
			return exitFailure
		}
		return writeOut(stdout, string(b)+"\n")
	}
	return writeOut(stdout, v.String()+"\n")
}
