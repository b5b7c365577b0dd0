package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siltsync/silt/index"
)

// The whole damaged-manifest story on the command line: after the
// manifest is lost, check, ls, log, gc, pull and push say so (exit 1,
// with the way out); silt recover brings the newest snapshot back in one
// command, and everything works again.
func TestRecover_LostManifest_EveryCommandSaysSoThenRecoverBringsItBack(t *testing.T) {
	u, dirs := setupFormat(t, 2, 0)
	a, b := dirs[0], dirs[1]
	// An older silt's bucket, whose manifest is its commit point.
	olderPush(t, u, 3, map[string]string{"data/x": "1"})
	olderPush(t, u, 3, map[string]string{"data/x": "2", "data/y": "y"})
	olderPush(t, u, 3, map[string]string{"data/z": "z"})
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
	// The push refused while the manifest was missing goes through once
	// the recovered bucket is migrated to the one format.
	ok(t, "migrate", u)
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

// silt pull --reanchor: a cache that pulled a jumped seq refuses the real
// manifest (exit 1, the hint names the way out) until it re-anchors.
func TestPull_Reanchor_AfterASeqJump(t *testing.T) {
	u, dirs := setupFormat(t, 2, 0)
	_, b := dirs[0], dirs[1]
	olderPush(t, u, 3, map[string]string{"data/x": "1"}) // the manifest as commit point
	key := filepath.Join(strings.TrimPrefix(u, "file://"), ".silt", "manifest.json")
	real, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	m, err := index.DecodeManifest(index.ManifestKey, real)
	if err != nil {
		t.Fatal(err)
	}
	m.Seq = 1_000_000
	if err := os.WriteFile(key, index.EncodeManifest(m), 0o644); err != nil {
		t.Fatal(err)
	}
	ok(t, "pull", "--dir", b)
	if err := os.WriteFile(key, real, 0o644); err != nil {
		t.Fatal(err)
	}
	r := silt(t, "pull", "--dir", b)
	wantCode(t, r, 1, "pull of the real manifest after a jump")
	if !strings.Contains(r.stderr, "silt pull --reanchor") {
		t.Errorf("the rollback hint does not name --reanchor:\n%s", r.stderr)
	}
	r = ok(t, "pull", "--reanchor", "--dir", b)
	if !strings.Contains(r.stdout, "had seen seq 1000000") || !strings.Contains(r.stdout, "at seq 1") {
		t.Errorf("pull --reanchor: %s", r.stdout)
	}
	ok(t, "pull", "--dir", b)
}
