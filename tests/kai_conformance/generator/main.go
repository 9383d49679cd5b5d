// Command generator converts the scenario tables of KAI Scheduler's action
// tests (test_utils.TestTopologyBasic literals) into JSON files that the C++
// conformance test replays. It reads Go syntax only: constants are evaluated
// with go/constant, sub-group trees by modelling KAI's constructors and
// interpreting straight-line code (interp.go), and whatever cannot be
// evaluated statically is kept as "$expr:<source>" and listed in the
// scenario's "untranslatable" array.
//
// Usage: go run . --kai <KAI checkout> --commit <sha> --out <dir>
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	kai := flag.String("kai", "", "root of a KAI Scheduler checkout (at least its pkg/ tree)")
	commit := flag.String("commit", "", "KAI commit the checkout was taken from; recorded in the output")
	out := flag.String("out", "", "directory to write the scenario JSON files to")
	flag.Parse()
	if *kai == "" || *commit == "" || *out == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*kai, *commit, *out); err != nil {
		fmt.Fprintln(os.Stderr, "generator:", err)
		os.Exit(1)
	}
}

// run converts every file in sourceFiles and prints a per-file summary.
func run(kai, commit, out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	l := newLoader(kai)
	sources := map[string]string{} // output name -> source, to catch clashes
	for _, source := range sourceFiles {
		name := outputName(source)
		if other, clash := sources[name]; clash {
			return fmt.Errorf("%s and %s would both be written to %s", other, source, name)
		}
		sources[name] = source
		doc, err := convertFile(l, source)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, name), encodeJSON(doc.toJSON(commit)), 0o644); err != nil {
			return err
		}
		fmt.Printf("%-45s %3d scenarios, %3d with untranslatable expressions\n",
			name, len(doc.scenarios), doc.untranslatableCount())
	}
	return nil
}
