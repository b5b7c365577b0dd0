package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bucketFiles lists every file under root with its size, to show a dry run
// writes nothing.
func bucketFiles(t *testing.T, root string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = info.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// silt migrate on the command line: --dry-run names the writes and makes
// none; the migration keeps every snapshot silt log listed; both caches
// go on pushing and pulling; a second run is a no-op.
func TestMigrate_CLI_DryRunThenMigrateKeepsLogAndPeersCarryOn(t *testing.T) {
	u, dirs := setupFormat(t, 2, 0)
	a, b := dirs[0], dirs[1]
	olderPush(t, u, 3, map[string]string{"data/x": "1"}) // an older silt's bucket
	olderPush(t, u, 3, map[string]string{"data/y": "2"})
	ok(t, "pull", "--dir", a)
	ok(t, "pull", "--dir", b)
	// This silt refuses to write it until it is migrated.
	write(t, b, "data/early", "refused")
	if r := silt(t, "push", "--dir", b); r.code != exitRefused || !strings.Contains(r.stderr, "format 3") || !strings.Contains(r.stderr, "silt migrate") {
		t.Errorf("push to a format-3 bucket: exit %d, want %d naming the format and silt migrate:\n%s", r.code, exitRefused, r.stderr)
	}
	logBefore := ok(t, "log", u).stdout
	bucket := strings.TrimPrefix(u, "file://")
	files := bucketFiles(t, bucket)

	dry := ok(t, "migrate", "--dry-run", u)
	if !strings.Contains(dry.stdout, "would write") || !strings.Contains(dry.stdout, "would migrate format") {
		t.Errorf("migrate --dry-run: %s", dry.stdout)
	}
	after := bucketFiles(t, bucket)
	if len(after) != len(files) {
		t.Errorf("migrate --dry-run changed the bucket: %d files, had %d", len(after), len(files))
	}
	for p, n := range files {
		if after[p] != n {
			t.Errorf("migrate --dry-run changed %s", p)
		}
	}

	r := ok(t, "migrate", u)
	if !strings.Contains(r.stdout, "migrated format") || !strings.Contains(r.stdout, "2 entries") {
		t.Errorf("migrate: %s", r.stdout)
	}
	logAfter := ok(t, "log", u).stdout
	for _, line := range strings.Split(strings.TrimSpace(logBefore), "\n") {
		seq := strings.Fields(line)
		if len(seq) == 0 || !strings.Contains(logAfter, seq[0]) {
			t.Errorf("silt log after the migration lost %q:\n%s", line, logAfter)
		}
	}
	ok(t, "check", "--data", u)

	write(t, b, "data/z", "from b")
	ok(t, "push", "--dir", b)
	ok(t, "pull", "--dir", a)
	if got := read(t, a, "data/z"); got != "from b" {
		t.Errorf("data/z at a after b's push = %q", got)
	}
	if _, err := os.Stat(filepath.Join(bucket, ".silt", "log")); err != nil {
		t.Errorf("no commit log after the migration: %v", err)
	}

	v := object(t, ok(t, "migrate", u, "--json"))
	if rep := v["report"].(map[string]any); rep["already"] != true {
		t.Errorf("migrate of a migrated bucket = %v, want already", v)
	}
	if r := ok(t, "migrate", u); !strings.Contains(r.stdout, "nothing to do") {
		t.Errorf("second migrate: %s", r.stdout)
	}
}
