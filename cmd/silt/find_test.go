package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// siltAt runs the binary in the working directory wd with extra
// environment variables.
func siltAt(t *testing.T, wd string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(siltBin, args...)
	cmd.Dir = wd
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, isExit := err.(*exec.ExitError); isExit {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run silt %v: %v", args, err)
	}
	return result{out.String(), errOut.String(), code}
}

func TestFindDir_FromASubdirectory_FindsTheCacheUpward(t *testing.T) {
	u, dirs := setup(t, 1)
	a := dirs[0]
	write(t, a, "data/acme/x", "x")
	write(t, a, "data/other/y", "y")
	sub := filepath.Join(a, "data", "acme")
	r := siltAt(t, sub, nil, "push", "--path", "x")
	wantCode(t, r, 0, "push --path x (from data/acme)")
	ls := object(t, ok(t, "ls", "--json", u))
	if num(ls, "count") != 1 {
		t.Fatalf("push --path x from data/acme committed %v files, want only data/acme/x:\n%s", ls["count"], r.stdout)
	}
	// URL commands take the bound remote when run inside the cache.
	// Their paths are relative to the working directory, as push's.
	if r := siltAt(t, sub, nil, "cat", "x"); r.code != 0 || r.stdout != "x" {
		t.Errorf("cat without URL inside the cache: exit %d, %q, %s", r.code, r.stdout, r.stderr)
	}
	if r := siltAt(t, sub, nil, "ls"); r.code != 0 || !strings.Contains(r.stdout, "data/acme/x") {
		t.Errorf("ls without URL inside the cache: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"log"}, {"check"}, {"verify"}, {"gc", "--dry-run"}} {
		if r := siltAt(t, sub, nil, args...); r.code != 0 {
			t.Errorf("silt %v inside the cache: exit %d\n%s", args, r.code, r.stderr)
		}
	}
}

func TestFindDir_SiltDirAndSiltRemote_Override(t *testing.T) {
	u, dirs := setup(t, 1)
	a := dirs[0]
	write(t, a, "f", "1")
	elsewhere := t.TempDir()
	if r := siltAt(t, elsewhere, []string{"SILT_DIR=" + a}, "push"); r.code != 0 {
		t.Fatalf("push with SILT_DIR: exit %d\n%s", r.code, r.stderr)
	}
	if r := siltAt(t, elsewhere, []string{"SILT_REMOTE=" + u}, "cat", "f"); r.code != 0 || r.stdout != "1" {
		t.Errorf("cat with SILT_REMOTE: exit %d, %q\n%s", r.code, r.stdout, r.stderr)
	}
	r := siltAt(t, elsewhere, nil, "status")
	wantCode(t, r, 1, "status outside any cache")
	if !strings.Contains(r.stderr, "run inside a cache") || strings.Contains(r.stderr, "hint: bind it to a bucket first: silt init --dir .") {
		t.Errorf("not-a-cache hint:\n%s", r.stderr)
	}
	r = siltAt(t, elsewhere, nil, "ls")
	wantCode(t, r, 2, "ls outside any cache")
	if !strings.Contains(r.stderr, "SILT_REMOTE") {
		t.Errorf("ls without a URL does not mention SILT_REMOTE:\n%s", r.stderr)
	}
}
