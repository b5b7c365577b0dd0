package conformance

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/conformance/check"
)

// RunLiveModel runs the model-based syncer test outside `go test`, against
// a live store, as `silt conformance --model` does. newBackend is called
// once per generated sequence and must return an empty backend (a fresh
// scratch prefix); report is called once per mode ("Model_Owned",
// "Model_Shared", "Model_Concurrent") as in RunLive, and a failure's
// message carries the seed and the shrunk sequence. It returns the number
// of failed modes.
func RunLiveModel(ctx context.Context, newBackend func() (backend.Backend, error), budget ModelBudget, report func(name string, passed, skipped bool, msg string)) (failed int) {
	// rapid reads testing.Short, which needs the testing flags registered
	// and parsed; outside a test binary (the command line) nothing did.
	testing.Init()
	if !flag.Parsed() {
		_ = flag.CommandLine.Parse(nil) // no arguments: cannot fail
	}
	for _, name := range []string{"Model_Owned", "Model_Shared", "Model_Concurrent"} {
		shared, concurrent := name == "Model_Shared", name == "Model_Concurrent"
		c := check.Check{Name: name, Run: func(t check.T, _ backend.Backend) {
			mt, ok := t.(modelTB)
			if !ok {
				t.Fatalf("the live runner's T lacks what the model needs")
			}
			runModel(mt, func() backend.Backend {
				b, err := newBackend()
				if err != nil {
					t.Fatalf("open backend: %v", err)
				}
				t.Cleanup(func() { b.Close() })
				return b
			}, shared, concurrent, false, budget)
		}}
		passed, skipped, msg := check.RunOne(ctx, c, newBackend)
		if !passed {
			failed++
		}
		report(name, passed, skipped, liveSummary(msg))
	}
	return failed
}

// liveSummary keeps a failure's lines that matter on a terminal: rapid's
// verdict and the sequence, not every draw.
func liveSummary(msg string) string {
	var keep []string
	for _, part := range strings.Split(msg, "; ") {
		if !strings.Contains(part, "[rapid] draw") {
			keep = append(keep, part)
		}
	}
	out := strings.Join(keep, "; ")
	if len(out) > 4000 {
		out = out[:4000] + fmt.Sprintf("... (%d bytes more)", len(out)-4000)
	}
	return out
}
