//go:build unix

package main

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/creack/pty"
)

func TestProgress_InAPseudoTerminal_DrawsAndEndsTheLine(t *testing.T) {
	_, dirs := setup(t, 1)
	a := dirs[0]
	for i := range 20 {
		write(t, a, fmt.Sprintf("data/f%02d", i), fmt.Sprintf("%0999d\n", i))
	}
	cmd := exec.Command(siltRaceBin, "push", "--dir", a)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout // a pipe: results only
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Skip("no pseudo-terminal here:", err)
	}
	defer tty.Close()
	var term bytes.Buffer
	_, _ = io.Copy(&term, tty) // until the child exits and the pty closes (EIO)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("push in a pty: %v\n%s", err, term.String())
	}
	lines := screen(term.String())
	found := false
	for _, l := range lines {
		if strings.HasPrefix(l, "push  20/20 files  19.5 KiB / 19.5 KiB  ") && strings.Contains(l, "/s  ETA 0s") {
			found = true
		}
	}
	if !found {
		t.Errorf("the terminal does not show the final progress line:\n%q", term.String())
	}
	if strings.Contains(stdout.String(), "\r") || !strings.Contains(stdout.String(), "20 uploaded") {
		t.Errorf("stdout (a pipe) got progress or lacks the result: %q", stdout.String())
	}
}
