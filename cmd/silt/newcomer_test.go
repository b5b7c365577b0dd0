package main

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Regressions of what a new user hit on a fresh clone (issue 37).

// TestNewcomer_ServeFindsCacheUpward checks silt serve without --dir
// finds the cache as every other command does: upward from the working
// directory, and through $SILT_DIR.
func TestNewcomer_ServeFindsCacheUpward(t *testing.T) {
	_, dirs := setup(t, 1)
	a := dirs[0]
	write(t, a, "data/x", "x")
	for _, tc := range []struct {
		wd  string
		env []string
	}{{filepath.Join(a, "data"), nil}, {t.TempDir(), []string{"SILT_DIR=" + a}}} {
		cmd := exec.Command(siltBin, "serve")
		cmd.Dir = tc.wd
		cmd.Env = append(cmd.Environ(), tc.env...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if !strings.HasPrefix(line, "serving "+a) {
			t.Errorf("silt serve in %s %v: %q\nstderr: %s", tc.wd, tc.env, line, stderr.String())
		}
	}
}
