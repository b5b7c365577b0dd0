package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// corrupt flips the bytes of body wherever they are stored under the
// bucket directory (a data object, or inside a pack), keeping sizes.
func corrupt(t *testing.T, bucket, body string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(bucket, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(data, []byte(body)) {
			return err
		}
		n++
		return os.WriteFile(p, bytes.ReplaceAll(data, []byte(body), bytes.Repeat([]byte("X"), len(body))), 0o644)
	})
	if err != nil || n == 0 {
		t.Fatalf("corrupt %q under %s: %d objects, %v", body, bucket, n, err)
	}
}

func TestCat_Regression_CorruptObject_PrintsNoByte(t *testing.T) {
	u, dirs := setup(t, 1)
	body := "these bytes are the committed file, and will be damaged"
	write(t, dirs[0], "f", body)
	ok(t, "push", "--dir", dirs[0])
	corrupt(t, filepath.Join(filepath.Dir(dirs[0]), "bucket"), body)
	for _, args := range [][]string{{"cat", u, "f"}, {"cat", "--json", u, "f"}} {
		r := silt(t, args...)
		wantCode(t, r, exitError, args...)
		if strings.Contains(r.stdout, "XXXX") || (args[1] != "--json" && r.stdout != "") {
			t.Errorf("silt %v printed damaged bytes: %q", args, r.stdout)
		}
	}
}

func TestHydrate_Regression_AfterFullPull_Idempotent(t *testing.T) {
	_, dirs := setup(t, 2)
	write(t, dirs[0], "data/m/x", "x")
	write(t, dirs[0], "data/m/y", "y")
	ok(t, "push", "--dir", dirs[0])
	ok(t, "pull", "--dir", dirs[1])
	ok(t, "hydrate", "--dir", dirs[1], "data/m")
	ok(t, "pull", "--dir", dirs[1])
	ok(t, "hydrate", "--dir", dirs[1], "data/m")
	// A path with no committed file under it is still an error.
	wantCode(t, silt(t, "hydrate", "--dir", dirs[1], "data/none"), exitError, "hydrate data/none")
}

func TestInit_Regression_RelativeFileURL_MadeAbsolute(t *testing.T) {
	root := t.TempDir()
	ok := func(wd string, args ...string) result {
		t.Helper()
		r := siltAt(t, wd, nil, args...)
		wantCode(t, r, 0, args...)
		return r
	}
	ok(root, "init", "--dir", "c", "file://./rel")
	var b binding
	data, err := os.ReadFile(filepath.Join(root, "c", ".silt", "config.json"))
	if err != nil || json.Unmarshal(data, &b) != nil {
		t.Fatalf("binding: %v %s", err, data)
	}
	if want := fileURL(filepath.Join(root, "rel")); b.URL != want {
		t.Errorf("binding URL %s, want %s", b.URL, want)
	}
	// From inside the cache the same bucket, not a new one there.
	write(t, filepath.Join(root, "c"), "a.txt", "a")
	ok(filepath.Join(root, "c"), "push")
	ok(filepath.Join(root, "c"), "status")
	if _, err := os.Stat(filepath.Join(root, "c", "rel")); err == nil {
		t.Errorf("a command inside the cache created a bucket %s", filepath.Join(root, "c", "rel"))
	}
}

func TestReadCommands_Regression_MissingBucket_CreateNothing(t *testing.T) {
	typo := filepath.Join(t.TempDir(), "typo")
	for _, args := range [][]string{{"ls"}, {"check"}, {"log"}, {"gc", "--dry-run"}, {"gc"}, {"cat"}, {"export"}} {
		full := append(args, fileURL(typo))
		switch args[0] {
		case "cat":
			full = append(full, "f")
		case "export":
			full = append(full, t.TempDir())
		}
		r := silt(t, full...)
		wantCode(t, r, exitError, full...)
		if !strings.Contains(r.stderr, "no bucket at") {
			t.Errorf("silt %v: %s", full, r.stderr)
		}
		if _, err := os.Stat(typo); err == nil {
			t.Fatalf("silt %v created %s", full, typo)
		}
	}
}

func TestLs_Regression_InsideCache_PathsRelativeToWorkingDirectory(t *testing.T) {
	_, dirs := setup(t, 1)
	a := dirs[0]
	write(t, a, "a.txt", "a")
	write(t, a, "sub/b.txt", "b")
	ok(t, "push", "--dir", a)
	if r := siltAt(t, a, nil, "ls", "."); r.code != 0 || !strings.Contains(r.stdout, "a.txt") || !strings.Contains(r.stdout, "sub/b.txt") {
		t.Errorf("ls . at the cache root: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	sub := filepath.Join(a, "sub")
	if r := siltAt(t, sub, nil, "ls", "."); r.code != 0 || strings.Contains(r.stdout, "a.txt") || !strings.Contains(r.stdout, "sub/b.txt") {
		t.Errorf("ls . in sub/: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := siltAt(t, sub, nil, "cat", "b.txt"); r.code != 0 || r.stdout != "b" {
		t.Errorf("cat b.txt in sub/: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	if r := siltAt(t, sub, nil, "cat", "../a.txt"); r.code != 0 || r.stdout != "a" {
		t.Errorf("cat ../a.txt in sub/: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
}

func TestExport_Regression_NoStoreStateInDestination(t *testing.T) {
	u, dirs := setup(t, 1)
	write(t, dirs[0], "d/f", "f")
	ok(t, "push", "--dir", dirs[0])
	dest := filepath.Join(t.TempDir(), "out")
	ok(t, "export", u, dest)
	entries, _ := os.ReadDir(dest)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "d" || read(t, dest, "d/f") != "f" {
		t.Errorf("export left %v in %s", names, dest)
	}
}

func TestTrace_Regression_ServiceNameIsSilt(t *testing.T) {
	_, dirs := setup(t, 1)
	f := filepath.Join(t.TempDir(), "spans.jsonl")
	write(t, dirs[0], "f", "f")
	ok(t, "push", "--dir", dirs[0], "--trace", f)
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("unknown_service")) || !bytes.Contains(data, []byte(`"Value":"silt"`)) {
		t.Errorf("spans do not name service silt:\n%.600s", data)
	}
}

func TestIsTerminal_Regression_DevNull_NotATerminal(t *testing.T) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Errorf("%s is taken for a terminal", os.DevNull)
	}
}
