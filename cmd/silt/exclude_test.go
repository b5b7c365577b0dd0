package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// push --exclude keeps a path out of the bucket; the summary line and
// status count what was excluded and skipped, without -v.
func TestPush_ExcludeFlagAndSkippedSummary(t *testing.T) {
	u, dirs := setup(t, 1)
	a := dirs[0]
	write(t, a, "keep.txt", "k")
	write(t, a, "host.lock", "l")
	write(t, a, "scratch/x", "x")
	write(t, a, ".siltignore", "scratch/\n")
	if err := os.Symlink("keep.txt", filepath.Join(a, "link")); err != nil {
		t.Fatal(err)
	}
	r := ok(t, "push", "--dir", a, "--exclude", "*.lock")
	if !strings.Contains(r.stdout, "1 skipped: symlink") || !strings.Contains(r.stdout, "2 excluded") {
		t.Errorf("push summary: %s", r.stdout)
	}
	ls := ok(t, "ls", u).stdout
	if strings.Contains(ls, "host.lock") || strings.Contains(ls, "scratch") || !strings.Contains(ls, "keep.txt") {
		t.Errorf("ls after push --exclude: %s", ls)
	}
	st := ok(t, "status", "--dir", a, "--exclude", "*.lock").stdout
	if !strings.Contains(st, "excluded: 2 paths") || !strings.Contains(st, "link: symlink") {
		t.Errorf("status: %s", st)
	}
	if r := silt(t, "push", "--dir", a, "--exclude", "[bad"); r.code != 2 || !strings.Contains(r.stderr, "[bad") {
		t.Errorf("a bad --exclude: exit %d, %s", r.code, r.stderr)
	}
}
