package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPushPull_Verbose_OneLinePerFileOnStderr(t *testing.T) {
	_, dirs := setup(t, 2)
	a, b := dirs[0], dirs[1]
	write(t, a, "data/x", "xx")
	write(t, a, "data/y", "yyy")
	r := ok(t, "push", "--dir", a, "-v")
	for _, want := range []string{"upload   data/x (2 B)", "upload   data/y (3 B)"} {
		if !strings.Contains(r.stderr, want+"\n") {
			t.Errorf("push -v stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stdout, "upload   ") {
		t.Errorf("per-file lines went to stdout:\n%s", r.stdout)
	}
	r = ok(t, "pull", "--dir", b, "-v")
	if !strings.Contains(r.stderr, "download data/x (2 B)\n") {
		t.Errorf("pull -v stderr lacks the download:\n%s", r.stderr)
	}
	if err := os.Remove(filepath.Join(a, "data", "x")); err != nil {
		t.Fatal(err)
	}
	r = ok(t, "push", "--dir", a, "-v")
	if !strings.Contains(r.stderr, "delete   data/x\n") {
		t.Errorf("push -v stderr lacks the remote delete:\n%s", r.stderr)
	}
	r = ok(t, "pull", "--dir", b, "-v")
	if !strings.Contains(r.stderr, "remove   data/x\n") {
		t.Errorf("pull -v stderr lacks the local removal:\n%s", r.stderr)
	}
	quiet := ok(t, "pull", "--dir", b)
	if quiet.stderr != "" {
		t.Errorf("pull without -v wrote on stderr: %q", quiet.stderr)
	}
}

func TestPush_VerboseSymlink_SkippedWithReason(t *testing.T) {
	_, dirs := setup(t, 1)
	a := dirs[0]
	write(t, a, "data/real", "r")
	if err := os.Symlink("real", filepath.Join(a, "data", "link")); err != nil {
		t.Skip("no symlinks here:", err)
	}
	r := ok(t, "push", "--dir", a, "-v")
	if !strings.Contains(r.stderr, "skip     data/link: a symlink") {
		t.Errorf("push -v does not report the skipped symlink:\n%s", r.stderr)
	}
	// Matching nothing at all is an error naming the path (issue 37).
	r = silt(t, "push", "--dir", a, "-v", "--path", "data/nothing")
	wantCode(t, r, exitError, "push -v --path data/nothing")
	if !strings.Contains(r.stderr, "no file under data/nothing, locally or in the bucket") {
		t.Errorf("push --path matching nothing says nothing:\n%s", r.stderr)
	}
}

func TestPush_JSONChanges_BoundedWithCountOfTheRest(t *testing.T) {
	_, dirs := setup(t, 1)
	a := dirs[0]
	for i := range 5 {
		write(t, a, fmt.Sprintf("data/f%d", i), "content "+fmt.Sprint(i))
	}
	v := object(t, ok(t, "push", "--dir", a, "--json", "--json-changes", "2"))
	changes, _ := v["changes"].([]any)
	if len(changes) != 2 || num(v, "changes_omitted") != 3 {
		t.Fatalf("changes %v, omitted %v; want 2 listed and 3 counted", v["changes"], v["changes_omitted"])
	}
	c0, _ := changes[0].(map[string]any)
	wantKeys(t, "changes[0]", c0, "path", "action", "bytes")
	if c0["action"] != "upload" {
		t.Errorf("changes[0].action = %v, want upload", c0["action"])
	}
}

func TestPush_DryRunPastMaxDelete_ListsEveryActionThenExit3(t *testing.T) {
	_, dirs := setup(t, 1)
	a := dirs[0]
	for i := range 5 {
		write(t, a, fmt.Sprintf("data/f%d", i), fmt.Sprint(i))
	}
	ok(t, "push", "--dir", a)
	if err := os.RemoveAll(filepath.Join(a, "data")); err != nil {
		t.Fatal(err)
	}
	write(t, a, "new", "n")
	r := silt(t, "push", "--dir", a, "--dry-run", "--max-delete", "2")
	wantCode(t, r, 3, "push --dry-run --max-delete 2")
	for i := range 5 {
		if want := fmt.Sprintf("would delete data/f%d\n", i); !strings.Contains(r.stderr, want) {
			t.Errorf("dry run past the guard does not list %q:\n%s", want, r.stderr)
		}
	}
	if !strings.Contains(r.stderr, "would upload new (1 B)\n") {
		t.Errorf("dry run does not list the upload:\n%s", r.stderr)
	}
}

func TestPull_VerboseScopeMatchingNothing_SkippedWithReason(t *testing.T) {
	_, dirs := setup(t, 2)
	write(t, dirs[0], "data/x", "x")
	ok(t, "push", "--dir", dirs[0])
	// Matching nothing is an error (issue 37), after the skip line.
	r := silt(t, "pull", "--dir", dirs[1], "-v", "--scope", "data/nope")
	wantCode(t, r, exitError, "pull -v --scope data/nope")
	if !strings.Contains(r.stderr, "skip     data/nope: --scope matches no committed file\n") {
		t.Errorf("pull --scope matching nothing says nothing:\n%s", r.stderr)
	}
	if r := ok(t, "pull", "--dir", dirs[1], "-v", "--scope", "data/x"); strings.Contains(r.stderr, "skip") {
		t.Errorf("a matching scope reported as skipped:\n%s", r.stderr)
	}
}
