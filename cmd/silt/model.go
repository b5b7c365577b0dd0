package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
)

// modelBinary is the command that runs the model-based syncer test on a
// live store. It is a separate binary because the test is built on rapid,
// which links Go's testing package, and silt itself never does.
const modelBinary = "silt-conformance"

// runModelConformance runs `silt-conformance --model URL`, found next to
// this executable or on PATH, with this command's output and flags.
func runModelConformance(ctx context.Context, c *cli, url string) error {
	bin := ""
	if self, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), modelBinary); isExecutable(p) {
			bin = p
		}
	}
	if bin == "" {
		p, err := exec.LookPath(modelBinary)
		if err != nil {
			return withHint(errors.New("conformance --model needs the silt-conformance command, which is not installed"),
				"go install github.com/siltsync/silt/cmd/silt-conformance@latest (or go run ./cmd/silt-conformance --model URL in a checkout)")
		}
		bin = p
	}
	args := []string{"--model"}
	if c.json {
		args = append(args, "--json")
	}
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	cmd.Stdout, cmd.Stderr = c.stdout, c.stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return errReported{code: ee.ExitCode()}
		}
		return err
	}
	return nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
