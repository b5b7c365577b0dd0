package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The whole damaged-manifest story on the command line: after the
// manifest is lost, check, ls, log, gc, pull and push say so (exit 1,
// with the way out); silt recover brings the newest snapshot back in one
// command, and everything works again.
func TestRecover_LostManifest_EveryCommandSaysSoThenRecoverBringsItBack(t *testing.T) {
	u, dirs := setup(t, 2)
	a, b := dirs[0], dirs[1]
	write(t, a, "data/x", "1")
	ok(t, "push", "--dir", a)
	write(t, a, "data/x", "2")
	write(t, a, "data/y", "y")
	ok(t, "push", "--dir", a)
	write(t, a, "data/z", "z")
	ok(t, "push", "--dir", a)
	bucket := strings.TrimPrefix(u, "file://")
	if err := os.Remove(filepath.Join(bucket, ".silt", "manifest.json")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", u}, {"ls", u}, {"log", u}, {"gc", "--older-than", "0s", u}, {"pull", "--dir", b}} {
		r := silt(t, args...)
		wantCode(t, r, 1, args...)
		if !strings.Contains(r.stderr, "history copies") || !strings.Contains(r.stderr, "silt recover") {
			t.Errorf("silt %s: stderr does not name the missing manifest and the way out:\n%s", strings.Join(args, " "), r.stderr)
		}
	}
	write(t, a, "data/w", "w")
	wantCode(t, silt(t, "push", "--dir", a), 1, "push onto a missing manifest")

	dry := ok(t, "recover", "--dry-run", u)
	if !strings.Contains(dry.stdout, "manifest: missing") || !strings.Contains(dry.stdout, "would re-commit snapshot 2") {
		t.Errorf("recover --dry-run: %s", dry.stdout)
	}
	r := ok(t, "recover", u)
	if !strings.Contains(r.stdout, "re-committed snapshot 2") || !strings.Contains(r.stdout, "as seq 4") {
		t.Errorf("recover: %s", r.stdout)
	}
	ok(t, "check", "--data", u)
	ok(t, "pull", "--dir", b)
	if got := read(t, b, "data/y"); got != "y" {
		t.Errorf("data/y after recover = %q", got)
	}
	// The push refused while the manifest was missing goes through now.
	ok(t, "push", "--dir", a)
	ok(t, "pull", "--dir", b)
	if got := read(t, b, "data/w"); got != "w" {
		t.Errorf("data/w after a's push = %q", got)
	}
	v := object(t, ok(t, "recover", u, "--json"))
	if rep := v["report"].(map[string]any); rep["noop"] != true {
		t.Errorf("recover on a whole bucket = %v, want a no-op", v)
	}
}

// silt recover --seq undoes a bad push as a new commit.
func TestRecover_Seq_UndoesAPush(t *testing.T) {
	u, dirs := setup(t, 2)
	a, b := dirs[0], dirs[1]
	write(t, a, "data/x", "good")
	ok(t, "push", "--dir", a)
	write(t, a, "data/x", "bad")
	ok(t, "push", "--dir", a)
	r := ok(t, "recover", "--seq", "1", u)
	if !strings.Contains(r.stdout, "re-committed snapshot 1") || !strings.Contains(r.stdout, "as seq 3") {
		t.Errorf("recover --seq 1: %s", r.stdout)
	}
	ok(t, "pull", "--dir", b)
	if got := read(t, b, "data/x"); got != "good" {
		t.Errorf("data/x after recover = %q", got)
	}
	wantCode(t, silt(t, "recover", "--seq", "7", u), 1, "recover of an unknown seq")
}
