package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve_TakeRemote_KeepsBackupThatRestoreReturns(t *testing.T) {
	_, _, b := conflictOn(t)
	ok(t, "resolve", "--dir", b, "--take-remote", "data/x")
	s := ok(t, "status", "--dir", b, "--offline").stdout
	if !strings.Contains(s, "backups: 1 local copy silt replaced and kept") || !strings.Contains(s, "  data/x: "+filepath.Join(b, ".silt", "kept")) {
		t.Fatalf("status does not list the backup:\n%s", s)
	}
	r := ok(t, "resolve", "--dir", b, "--restore", "data/x")
	if !strings.Contains(r.stdout, "restored 1 path") {
		t.Errorf("restore output:\n%s", r.stdout)
	}
	if got := read(t, b, "data/x"); got != "from b" {
		t.Errorf("data/x = %q after --restore, want b's copy back", got)
	}
	if s := ok(t, "status", "--dir", b, "--offline").stdout; !strings.Contains(s, "marked dirty: 1 path\n") {
		t.Errorf("the restored path is not marked for the next push:\n%s", s)
	}
	wantCode(t, silt(t, "resolve", "--dir", b, "--restore", "data/none"), 1, "restore without a backup")
}

func TestResolve_TakeRemote_UnpushedEditsWithoutConflict_RefusedUnlessForced(t *testing.T) {
	_, dirs := setup(t, 1)
	a := dirs[0]
	write(t, a, "data/x", "base")
	ok(t, "push", "--dir", a)
	write(t, a, "data/x", "unpushed")
	r := silt(t, "resolve", "--dir", a, "--take-remote", "data/x")
	wantCode(t, r, 3, "take-remote over unpushed edits")
	if !strings.Contains(r.stderr, "--force") || read(t, a, "data/x") != "unpushed" {
		t.Fatalf("refusal did not keep the file or name --force:\n%s", r.stderr)
	}
	ok(t, "resolve", "--dir", a, "--take-remote", "--force", "data/x")
	if got := read(t, a, "data/x"); got != "base" {
		t.Errorf("data/x = %q after a forced take-remote", got)
	}
	if s := ok(t, "status", "--dir", a, "--offline").stdout; !strings.Contains(s, "backups: 1") {
		t.Errorf("the forced take-remote kept no backup:\n%s", s)
	}
}

// Issue 19: three caches share data/a/1/raw; one edits and pushes, another
// deletes it and syncs. The remote edit wins, is installed, and is
// reported once; the sync exits 0 and the next one has nothing to do.
func TestSync_DeletionLosesToRemoteEdit_InstallsItExitZero(t *testing.T) {
	_, dirs := setup(t, 3)
	a, b, c := dirs[0], dirs[1], dirs[2]
	write(t, a, "data/a/1/raw", "v1")
	ok(t, "push", "--dir", a)
	ok(t, "pull", "--dir", b)
	ok(t, "pull", "--dir", c)
	write(t, a, "data/a/1/raw", "v2")
	ok(t, "push", "--dir", a)
	if err := os.Remove(filepath.Join(b, "data", "a", "1", "raw")); err != nil {
		t.Fatal(err)
	}
	r := ok(t, "sync", "--dir", b, "-v")
	if n := strings.Count(r.stdout+r.stderr, "the remote copy wins"); n != 1 {
		t.Errorf("sync reported the lost deletion %d times, want once:\n%s%s", n, r.stdout, r.stderr)
	}
	if got := read(t, b, "data/a/1/raw"); got != "v2" {
		t.Errorf("data/a/1/raw = %q after sync, want the remote edit installed", got)
	}
	s := ok(t, "status", "--dir", b, "--offline").stdout
	if strings.Contains(s, "conflicts:") || strings.Contains(s, "lazy:") {
		t.Errorf("status after the sync:\n%s", s)
	}
}
