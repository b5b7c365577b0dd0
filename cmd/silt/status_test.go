package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestStatus_ChangedFiles_Named checks status names the files a push
// would send: at most 10 lines without -v, every one with -v, and all in
// --json's changes.
func TestStatus_ChangedFiles_Named(t *testing.T) {
	_, dirs := setup(t, 1)
	a := dirs[0]
	for i := range 12 {
		write(t, a, fmt.Sprintf("f%02d", i), "x")
	}
	r := ok(t, "status", "--dir", a)
	if !strings.Contains(r.stdout, "upload   f00") || strings.Contains(r.stdout, "f11") || !strings.Contains(r.stdout, "and 2 more") {
		t.Errorf("status without -v:\n%s", r.stdout)
	}
	r = ok(t, "status", "--dir", a, "-v")
	if !strings.Contains(r.stdout, "upload   f11") || strings.Contains(r.stdout, "more") || strings.Contains(r.stderr, "f00") {
		t.Errorf("status -v:\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
	}
	v := object(t, ok(t, "status", "--dir", a, "--json"))
	if ch, _ := v["changes"].([]any); len(ch) != 12 {
		t.Errorf("status --json changes: %v", v["changes"])
	}
}
