// Command readmecheck checks (or with -update rewrites) the outputs pasted
// into Markdown files against the kdupcap binary: see package readmecheck.
//
//	readmecheck [-update] -kdupcap ./kdupcap README.md ...
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/kdupcap/kdupcap/internal/readmecheck"
)

func main() {
	bin := flag.String("kdupcap", "./kdupcap", "the kdupcap binary to run")
	update := flag.Bool("update", false, "rewrite the marked blocks with the binary's output")
	flag.Parse()
	os.Exit(run(*bin, *update, flag.Args()))
}

func run(bin string, update bool, files []string) int {
	ctx := context.Background()
	failed := false
	for _, f := range files {
		doc, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "readmecheck:", err)
			return 2
		}
		if update {
			out, err := readmecheck.Update(ctx, f, doc, readmecheck.Binary(bin))
			if err == nil {
				err = os.WriteFile(f, out, 0o644)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "readmecheck:", err)
				return 2
			}
			continue
		}
		diffs, err := readmecheck.Check(ctx, f, doc, readmecheck.Binary(bin))
		if err != nil {
			fmt.Fprintln(os.Stderr, "readmecheck:", err)
			return 2
		}
		for _, d := range diffs {
			fmt.Fprintf(os.Stderr, "%s: %s\n", f, d)
			failed = true
		}
	}
	if failed {
		fmt.Fprintln(os.Stderr, "readmecheck: pasted outputs differ from the binary's; run `make readme-update` and review the diff")
		return 1
	}
	return 0
}
