package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUsage_Hint_NamesTheCommand(t *testing.T) {
	r := silt(t, "push", "--no-such-flag")
	wantCode(t, r, 2, "push --no-such-flag")
	if !strings.Contains(r.stderr, "hint: see: silt push --help\n") || strings.Contains(r.stderr, "<command>") {
		t.Errorf("usage hint:\n%s", r.stderr)
	}
}

func TestPush_ConflictJSON_ExactlyOneObjectWithStatsAndError(t *testing.T) {
	_, dirs := setup(t, 2)
	a, b := dirs[0], dirs[1]
	write(t, a, "x", "a")
	ok(t, "push", "--dir", a)
	write(t, b, "x", "b")
	r := silt(t, "push", "--dir", b, "--json")
	wantCode(t, r, 3, "push --json (conflict)")
	v := object(t, r) // fails on a second object
	checkStatsJSON(t, "push", v)
	if v["exit"] != 3.0 || v["error"] == nil || num(v, "files", "conflicts") != 1 {
		t.Errorf("one object with stats and error, got %v", v)
	}
}

func TestJSON_Ampersand_NotEscaped(t *testing.T) {
	root := filepath.Join(t.TempDir(), "r&d")
	u := fileURL(filepath.Join(root, "bucket"))
	d := filepath.Join(root, "cache")
	r := ok(t, "init", "--json", "--dir", d, u)
	if !strings.Contains(r.stdout, "r&d") || strings.Contains(r.stdout, `\u0026`) {
		t.Errorf("--json escapes &:\n%s", r.stdout)
	}
	cfg := read(t, d, ".silt/config.json")
	if !strings.Contains(cfg, "r&d") || strings.Contains(cfg, `\u0026`) {
		t.Errorf("config.json escapes &:\n%s", cfg)
	}
}

func TestHydrate_Directory_HydratesTheSubtree(t *testing.T) {
	_, dirs := setup(t, 2)
	a, b := dirs[0], dirs[1]
	write(t, a, "data/m/x/state/1/raw", "one")
	write(t, a, "data/m/x/state/2/raw", "two")
	write(t, a, "data/m/x/state/latest", "2")
	ok(t, "push", "--dir", a)
	ok(t, "pull", "--dir", b, "--metadata-only")
	r := silt(t, "hydrate", "--dir", b, "data/m/x")
	wantCode(t, r, 0, "hydrate DIR")
	if strings.Contains(r.stderr, "not a regular file") {
		t.Errorf("hydrate DIR: %s", r.stderr)
	}
	for p, want := range map[string]string{"data/m/x/state/1/raw": "one", "data/m/x/state/2/raw": "two"} {
		if got := read(t, b, p); got != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
}

func TestInit_EmptyDirectory_SuggestsPullOrPut(t *testing.T) {
	root := t.TempDir()
	empty := filepath.Join(root, "empty")
	if r := ok(t, "init", "--dir", empty, fileURL(filepath.Join(root, "bucket"))); !strings.Contains(r.stdout, "Next: put files in") {
		t.Errorf("init next step for an empty cache and bucket:\n%s", r.stdout)
	}
}

func TestInit_NamespaceWithFilesOutside_SaysWhereFilesMustBe(t *testing.T) {
	root := t.TempDir()
	d := filepath.Join(root, "cache")
	write(t, d, "data/x", "x")
	r := ok(t, "init", "--dir", d, "--namespace", "team-a", fileURL(filepath.Join(root, "bucket")))
	want := "note: with --namespace team-a only files under " + filepath.Join(d, "team-a") + " sync; " + filepath.Join(d, "data") + " is ignored"
	if !strings.Contains(r.stdout, want) {
		t.Errorf("init --namespace with DIR/data:\n%s\nwant %q", r.stdout, want)
	}
	if r := ok(t, "push", "--dir", d); !strings.Contains(r.stdout, "ignored: "+filepath.Join(d, "data")) {
		t.Errorf("push with files outside the namespace:\n%s", r.stdout)
	}
}

func TestPush_DryRun_NeverSaysDeleted(t *testing.T) {
	_, dirs := setup(t, 1)
	a := dirs[0]
	write(t, a, "x", "x")
	ok(t, "push", "--dir", a)
	if err := os.Remove(filepath.Join(a, "x")); err != nil {
		t.Fatal(err)
	}
	r := ok(t, "push", "--dir", a, "--dry-run")
	if strings.Contains(r.stdout, "deleted remotely") || !strings.Contains(r.stdout, "1 to delete remotely") {
		t.Errorf("push --dry-run summary:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "would delete x\n") {
		t.Errorf("push --dry-run does not list the deletion:\n%s", r.stderr)
	}
}

func TestPush_EqualFiles_CountedUnchanged(t *testing.T) {
	_, dirs := setup(t, 1)
	a := dirs[0]
	for i := range 4 {
		write(t, a, fmt.Sprintf("f%d", i), fmt.Sprint(i))
	}
	ok(t, "push", "--dir", a)
	v := object(t, ok(t, "push", "--dir", a, "--json"))
	if num(v, "files", "unchanged") != 4 {
		t.Errorf("second push: files %v, want 4 unchanged", v["files"])
	}
}

func TestDemo_ClosingLines_DoNotPointAtTheRemovedBucket(t *testing.T) {
	r := ok(t, "demo")
	i := strings.Index(r.stdout, "The same with the command line")
	if i < 0 {
		t.Fatalf("no closing lines:\n%s", r.stdout)
	}
	closing := r.stdout[i:]
	if strings.Contains(closing, "silt-demo-") || !strings.Contains(r.stdout, "removed now") {
		t.Errorf("closing lines point at the temporary bucket:\n%s", closing)
	}
}

func TestHelp_NewFlags_EachHasAnExample(t *testing.T) {
	for cmd, flags := range map[string][]string{
		"push":    {"-v", "--dry-run", "--lock", "--lock-wait", "--json-changes", "--trace", "--profile"},
		"pull":    {"-v", "--lazy", "--json-changes", "SILT_TRACE", "--gcs-credentials"},
		"sync":    {"-v", "--json-changes"},
		"resolve": {"--keep-local", "--take-remote", "--all", "--no-push", "-v"},
		"lock":    {"push --lock"},
		"ls":      {"$SILT_REMOTE", "--profile", "?profile=", "--gcs-credentials", "?credentials="},
		"init":    {"--push-existing", "--adopt", "--profile", "--gcs-credentials"},
		"status":  {"status -v"},
	} {
		h := ok(t, cmd, "--help").stdout
		i := strings.Index(h, "Example:")
		for _, f := range flags {
			if i < 0 || !strings.Contains(h[i:], f) {
				t.Errorf("silt %s --help has no example with %s:\n%s", cmd, f, h)
			}
		}
	}
	top := ok(t, "--help").stdout
	for _, f := range []string{"-v", "--dry-run", "--json-changes", "resolve", "--lazy", "--lock", "--log-level", "--log-format", "SILT_REMOTE", "SILT_DIR",
		"--profile", "--gcs-credentials", "--trace", "SILT_TRACE", "--push-existing", "--adopt", "status -v"} {
		if !strings.Contains(top, f) {
			t.Errorf("silt --help does not show %s", f)
		}
	}
}
