//go:build linux

package syncer

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// The single-call resolution answers only where the os.Root would answer
// the same: a regular file reached without a symlink. A symlink on the way
// or in the last place, a directory, a missing path and a symlink out of
// the cache all go the Root's way (statBeneath and openFileBeneath say
// false), so what silt sees of the cache does not depend on which way
// found it.
func TestLocal_Beneath_AnswersOnlyWhatTheRootAnswersAlike(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "ns/a/b"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "ns/a/b/f"), []byte("data"), 0o755))
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644))
	must(os.Symlink("a", filepath.Join(dir, "ns/link")))
	must(os.Symlink("b/f", filepath.Join(dir, "ns/a/flink")))
	must(os.Symlink(outside, filepath.Join(dir, "ns/out")))
	root, err := os.OpenRoot(dir)
	must(err)
	l := &local{dir: root, ns: "ns/"}
	defer func() { l.fast.close(); root.Close() }()

	lf, ok := l.statBeneath("a/b/f")
	if !ok {
		t.Fatal("a plain regular file was not resolved in one call")
	}
	fi, err := root.Lstat("ns/a/b/f")
	must(err)
	if want := infoFile(fi); lf != want {
		t.Errorf("stat: %+v, the Root says %+v", lf, want)
	}
	f, ok := l.openFileBeneath("a/b/f")
	if !ok {
		t.Fatal("a plain regular file was not opened in one call")
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil || string(data) != "data" {
		t.Errorf("read %q, %v", data, err)
	}
	for _, p := range []string{"link/b/f", "a/flink", "out/secret", "a/b", "a/missing", "a/b/f/x", "../../" + filepath.Base(outside) + "/secret"} {
		if lf, ok := l.statBeneath(p); ok {
			t.Errorf("stat %s: answered %+v; the Root's way must decide", p, lf)
		}
		if f, ok := l.openFileBeneath(p); ok {
			f.Close()
			if p != "a/b" { // both ways open a directory, and its read fails alike
				t.Errorf("open %s: answered; the Root's way must decide", p)
			}
		}
	}
}
