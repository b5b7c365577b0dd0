package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInit_NonEmptyDirectory_RefusedNamingCountAndOptions checks init on a
// directory holding files refuses with exit 3, binds nothing, names the
// count and both options, and never says "Next: silt pull".
func TestInit_NonEmptyDirectory_RefusedNamingCountAndOptions(t *testing.T) {
	root := t.TempDir()
	d := filepath.Join(root, "cache")
	for i := range 405 {
		write(t, d, fmt.Sprintf("f%03d", i), "x")
	}
	r := silt(t, "init", "--dir", d, fileURL(filepath.Join(root, "bucket")))
	wantCode(t, r, exitRefused, "init on 405 files")
	want := "silt init: " + d + " already holds 405 files and the bucket 0; silt init does not guess what to do with them\n" +
		"hint: choose one: --push-existing binds and pushes them now"
	if !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "--adopt binds and takes them as the cache's state") {
		t.Errorf("stderr:\n%s\nwant %q", r.stderr, want)
	}
	if strings.Contains(r.stdout+r.stderr, "Next: silt pull") {
		t.Errorf("init on a non-empty directory still suggests silt pull:\n%s%s", r.stdout, r.stderr)
	}
	if _, err := os.Stat(configPath(d)); !os.IsNotExist(err) {
		t.Errorf("refused init left a binding: %v", err)
	}
	if r := silt(t, "init", "--adopt", "--push-existing", "--dir", d, fileURL(filepath.Join(root, "bucket"))); r.code != exitUsage {
		t.Errorf("--adopt with --push-existing: exit %d, want 2", r.code)
	}
}

// TestInit_PushExisting_FirstCommitThenAnOrdinaryPush checks
// --push-existing makes the files the first commit on an empty bucket, and
// on a bucket with commits pushes as usual: equal files unchanged, a
// differing one a conflict (exit 3).
func TestInit_PushExisting_FirstCommitThenAnOrdinaryPush(t *testing.T) {
	root := t.TempDir()
	bucket := fileURL(filepath.Join(root, "bucket"))
	a := filepath.Join(root, "a")
	write(t, a, "same", "same")
	write(t, a, "diff", "remote")
	r := ok(t, "init", "--push-existing", "--dir", a, bucket)
	if !strings.Contains(r.stdout, "pushed the 2 files already there: 2 uploaded; now at seq 1\nNext: silt status --dir "+a) {
		t.Errorf("init --push-existing on an empty bucket:\n%s", r.stdout)
	}
	if r := ok(t, "ls", bucket); !strings.Contains(r.stdout, "same") || !strings.Contains(r.stdout, "diff") {
		t.Errorf("ls after init --push-existing:\n%s", r.stdout)
	}
	b := filepath.Join(root, "b")
	write(t, b, "same", "same")
	write(t, b, "diff", "local")
	write(t, b, "new", "new")
	r = silt(t, "init", "--push-existing", "--dir", b, bucket)
	wantCode(t, r, exitRefused, "init --push-existing onto commits with a differing file")
	if !strings.Contains(r.stderr, "silt init: bound "+b+" and pushed the files already there, but 1 conflict: kept the local copies (listed above)") ||
		!strings.Contains(r.stderr, "hint: see them with silt status --dir "+b+"; settle each with silt resolve --dir "+b) {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	if !strings.Contains(r.stdout, "conflict: diff:") || !strings.Contains(r.stdout, "1 uploaded") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
}

// TestInit_Adopt_EqualInSyncDifferingKeptLocalOnlyPushedNext checks
// --adopt: nothing uploaded at init; equal files are not conflicts; the
// differing one and the local-only one go up with the next push, which
// has no conflict; the bucket's other file is downloaded.
func TestInit_Adopt_EqualInSyncDifferingKeptLocalOnlyPushedNext(t *testing.T) {
	root := t.TempDir()
	bucket := fileURL(filepath.Join(root, "bucket"))
	a := filepath.Join(root, "a")
	write(t, a, "same", "same")
	write(t, a, "diff", "remote")
	write(t, a, "ronly", "ronly")
	ok(t, "init", "--push-existing", "--dir", a, bucket)
	b := filepath.Join(root, "b")
	write(t, b, "same", "same")
	write(t, b, "diff", "local")
	write(t, b, "lonly", "lonly")
	r := ok(t, "init", "--adopt", "--dir", b, bucket)
	want := "adopted the 3 files already there: 1 equal to the bucket's (in sync), 1 differing (kept; they win at the next push), 1 only here (sent by the next push); downloaded 1 only in the bucket\n" +
		"Next: silt push --dir " + b
	if !strings.Contains(r.stdout, want) {
		t.Errorf("init --adopt:\n%s\nwant %q", r.stdout, want)
	}
	if got := read(t, b, "ronly"); got != "ronly" {
		t.Errorf("ronly = %q after adopt", got)
	}
	if r := ok(t, "cat", bucket, "diff"); r.stdout != "remote" {
		t.Errorf("adopt uploaded already: diff in the bucket = %q", r.stdout)
	}
	p := ok(t, "push", "--json", "--dir", b)
	v := object(t, p)
	if num(v, "files", "uploaded") != 2 || num(v, "files", "conflicts") != 0 || num(v, "files", "unchanged") < 1 {
		t.Errorf("push after adopt: %s", p.stdout)
	}
	if r := ok(t, "cat", bucket, "diff"); r.stdout != "local" {
		t.Errorf("diff in the bucket after push = %q, want the adopted local copy", r.stdout)
	}
}

// TestInit_CreatesTheOneFormat: the first push creates the bucket as
// the log (.silt/log/, the commit point), the next push commits to it, a
// second cache reads it, and --format, whose choice is gone, is a usage
// error.
func TestInit_CreatesTheOneFormat(t *testing.T) {
	root := t.TempDir()
	bucketDir := filepath.Join(root, "bucket")
	bucket := fileURL(bucketDir)
	a := filepath.Join(root, "a")
	write(t, a, "f", "one")
	ok(t, "init", "--push-existing", "--dir", a, bucket)
	if _, err := os.Stat(filepath.Join(bucketDir, ".silt", "log", "00000000000000000001.json")); err != nil {
		t.Fatalf("no log entry after init --push-existing: %v", err)
	}
	write(t, a, "f", "two")
	ok(t, "push", "--dir", a)
	if _, err := os.Stat(filepath.Join(bucketDir, ".silt", "log", "00000000000000000002.json")); err != nil {
		t.Fatalf("the next push did not commit to the log: %v", err)
	}
	b := filepath.Join(root, "b")
	ok(t, "init", "--dir", b, bucket)
	ok(t, "pull", "--dir", b)
	if got, err := os.ReadFile(filepath.Join(b, "f")); err != nil || string(got) != "two" {
		t.Fatalf("b/f = %q (%v), want two", got, err)
	}
	if r := silt(t, "init", "--format", "5", "--dir", filepath.Join(root, "c"), bucket); r.code != exitUsage {
		t.Errorf("--format 5: exit %d, want 2:\n%s", r.code, r.stderr)
	}
}
