// Command silt-conformance runs silt's model-based syncer test against a
// live store: generated sequences of every syncer operation (with faults,
// restarts, peers and gc) checked against an oracle after every step, on a
// scratch prefix it removes afterwards. `silt conformance --model URL`
// runs it. It is its own binary because the test is built on rapid, which
// links Go's testing package, and silt never does.
//
//	silt-conformance --model [--json] URL
//
// SILT_MODEL_BUDGET=N sets the sequences per mode (default 40).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/siltsync/silt/backend"
	_ "github.com/siltsync/silt/backend/stores" // every shipped store
	"github.com/siltsync/silt/conformance"
	"github.com/siltsync/silt/conformance/check"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type result struct {
	Name    string `json:"name"`
	Passed  bool   `json:"passed"`
	Skipped bool   `json:"skipped"`
	Message string `json:"message,omitempty"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("silt-conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.Bool("model", false, "run the model-based syncer test (the only suite of this command)")
	asJSON := fs.Bool("json", false, "print exactly one JSON object on stdout")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if !*model || fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: silt-conformance --model [--json] URL")
		return 2
	}
	url := fs.Arg(0)
	b, err := backend.Open(ctx, url)
	if err != nil {
		fmt.Fprintf(stderr, "silt-conformance: %v\n", err)
		return 1
	}
	defer b.Close()
	scratch := check.NewScratch(b)
	results := []result{}
	failed := conformance.RunLiveModel(ctx, scratch.Next, conformance.ModelBudget{}, func(name string, passed, skipped bool, msg string) {
		results = append(results, result{name, passed, skipped, msg})
		if *asJSON {
			return
		}
		status := map[bool]string{true: "PASS", false: "FAIL"}[passed]
		if skipped {
			status = "SKIP"
		}
		fmt.Fprintf(stdout, "%s %s", status, name)
		if msg != "" && (!passed || skipped) {
			fmt.Fprintf(stdout, ": %s", msg)
		}
		fmt.Fprintln(stdout)
	})
	cleanErr := scratch.Remove(ctx)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(map[string]any{"op": "conformance", "url": url, "model": true, "checks": results, "failed": failed})
	} else {
		fmt.Fprintf(stdout, "%d checks, %d failed\n", len(results), failed)
	}
	if cleanErr != nil {
		fmt.Fprintf(stderr, "silt-conformance: %v\n", cleanErr)
		return 1
	}
	if failed > 0 {
		return 1
	}
	return 0
}
