// Command hostilecap writes one hostile capture of internal/hostile, for
// manual runs:
//
//	hostilecap -list
//	hostilecap [-scale S] [-o FILE] KIND | kdupcap analyze --format json -
//
// With -o - (the default) the capture goes to standard output. The Truth
// (what the capture holds, the findings a correct analysis gives) is
// printed as JSON on standard error once the capture is written.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/kdupcap/kdupcap/internal/hostile"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "hostilecap:", err)
		os.Exit(2)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hostilecap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scale := fs.Float64("scale", 1, "size relative to the issue's (1: its full size)")
	out := fs.String("o", "-", "file to write the capture to; - is standard output")
	list := fs.Bool("list", false, "list the kinds and what each holds at scale 1")
	quiet := fs.Bool("q", false, "do not print the truth on standard error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *list {
		for _, k := range hostile.Kinds() {
			row := k.Row()
			if row == "" {
				row = "-"
			}
			fmt.Fprintf(stdout, "%-18s %s  %s\n", k, row, k.About())
		}
		return nil
	}
	if fs.NArg() != 1 {
		return errors.New("want one KIND (see -list)")
	}
	k, err := hostile.ParseKind(fs.Arg(0))
	if err != nil {
		return err
	}
	w := stdout
	if *out != "-" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	truth, err := hostile.Write(w, k, *scale)
	if err != nil {
		return err
	}
	if f, ok := w.(*os.File); ok && *out != "-" {
		if err := f.Close(); err != nil {
			return fmt.Errorf("close %s: %w", *out, err)
		}
	}
	if *quiet {
		return nil
	}
	enc := json.NewEncoder(stderr)
	enc.SetIndent("", "  ")
	return enc.Encode(truth)
}
