package main

import (
	"strings"
	"testing"
)

// conflictOn makes b's push of data/x conflict with a's.
func conflictOn(t *testing.T) (string, string, string) {
	t.Helper()
	u, dirs := setup(t, 2)
	a, b := dirs[0], dirs[1]
	write(t, a, "data/x", "base")
	ok(t, "push", "--dir", a)
	ok(t, "pull", "--dir", b)
	write(t, a, "data/x", "from a")
	ok(t, "push", "--dir", a)
	write(t, b, "data/x", "from b")
	r := silt(t, "push", "--dir", b)
	wantCode(t, r, 3, "push (conflicting)")
	if !strings.Contains(r.stderr, "silt resolve") {
		t.Errorf("the conflict hint does not name silt resolve:\n%s", r.stderr)
	}
	return u, a, b
}

func TestStatus_AfterConflict_ListsReasonAndSeq(t *testing.T) {
	_, _, b := conflictOn(t)
	r := ok(t, "status", "--dir", b, "--offline")
	if !strings.Contains(r.stdout, "  data/x: changed remotely since this cache synced it; pull first (push at seq 2)") {
		t.Errorf("status does not list the conflict with reason and seq:\n%s", r.stdout)
	}
	v := object(t, ok(t, "status", "--dir", b, "--offline", "--json"))
	st, _ := v["status"].(map[string]any)
	cs, _ := st["conflicts"].([]any)
	if len(cs) != 1 {
		t.Fatalf("status --json conflicts = %v, want one", st["conflicts"])
	}
	c0, _ := cs[0].(map[string]any)
	if c0["path"] != "data/x" || c0["seq"] != 2.0 || c0["reason"] == "" {
		t.Errorf("conflict record %v", c0)
	}
}

func TestResolve_TakeRemote_ReplacesLocalAndClearsTheConflict(t *testing.T) {
	_, _, b := conflictOn(t)
	r := ok(t, "resolve", "--dir", b, "--take-remote", "data/x")
	if !strings.Contains(r.stdout, "resolved 1 path (took remote)") {
		t.Errorf("resolve output:\n%s", r.stdout)
	}
	if got := read(t, b, "data/x"); got != "from a" {
		t.Errorf("data/x = %q after --take-remote, want a's copy", got)
	}
	if s := ok(t, "status", "--dir", b).stdout; strings.Contains(s, "conflict") && !strings.Contains(s, "0 conflicts") {
		t.Errorf("status still shows a conflict:\n%s", s)
	}
	ok(t, "push", "--dir", b) // nothing left to fight over
}

func TestResolve_KeepLocalAll_PushesTheLocalCopy(t *testing.T) {
	u, a, b := conflictOn(t)
	ok(t, "resolve", "--dir", b, "--keep-local", "--all")
	if got := ok(t, "cat", u, "data/x").stdout; got != "from b" {
		t.Errorf("remote data/x = %q after --keep-local, want b's copy", got)
	}
	ok(t, "pull", "--dir", a)
	if got := read(t, a, "data/x"); got != "from b" {
		t.Errorf("a pulled %q, want b's copy", got)
	}
	if r := ok(t, "resolve", "--dir", b, "--all", "--take-remote"); !strings.Contains(r.stdout, "no conflicts") {
		t.Errorf("resolve --all with nothing left:\n%s", r.stdout)
	}
}

func TestResolve_BadCommandLines_Exit2(t *testing.T) {
	_, dirs := setup(t, 1)
	for _, args := range [][]string{
		{"resolve", "--dir", dirs[0], "data/x"},
		{"resolve", "--dir", dirs[0], "--keep-local", "--take-remote", "data/x"},
		{"resolve", "--dir", dirs[0], "--keep-local"},
		{"resolve", "--dir", dirs[0], "--keep-local", "--all", "data/x"},
	} {
		wantCode(t, silt(t, args...), 2, args...)
	}
}
