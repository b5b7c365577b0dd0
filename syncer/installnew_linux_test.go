package syncer

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/siltsync/silt/internal/localhook"
)

// leftTemporaries lists the temporary downloads under dir/.silt/tmp, its
// shards included.
func leftTemporaries(t *testing.T, dir string) []string {
	t.Helper()
	var left []string
	err := filepath.WalkDir(filepath.Join(dir, tmpDir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), "dl-") {
			left = append(left, p)
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return left
}

var threeFiles = map[string]string{"d/a": "bytes of a\n", "d/b": "bytes of b\n", "d/c": "bytes of c\n"}

// A cold pull installs every new file through the held directories and
// leaves no temporary in any shard of .silt/tmp.
func TestInstallNew_ColdPull_AllInstalledNoTemporaries(t *testing.T) {
	s := newFilesBucket(t, threeFiles)
	st, err := s.Pull(t.Context(), PullOptions{})
	if err != nil || st.Files.Downloaded != 3 {
		t.Fatalf("pull: %+v, %v", st.Files, err)
	}
	mustHold(t, s, threeFiles)
	if left := leftTemporaries(t, s.Root()); len(left) != 0 {
		t.Errorf("temporaries left: %v", left)
	}
}

// The batch holds d open; a user removing d between two installs does not
// fail the pull: d is made again for the next file.
func TestInstallNew_ParentRemovedMidPull_MadeAgain(t *testing.T) {
	s := newFilesBucket(t, threeFiles)
	removed := false
	defer localhook.Set(s.Root(), func(p string, st localhook.Stage) {
		if p == "d/b" && st == localhook.BeforeRename && !removed {
			removed = true
			if err := os.RemoveAll(filepath.Join(s.Root(), "d")); err != nil {
				t.Error(err)
			}
		}
	})()
	st, err := s.Pull(t.Context(), PullOptions{})
	if err != nil {
		t.Fatalf("pull: %v", err)
	}
	if !removed {
		t.Fatal("the hook never ran")
	}
	for _, p := range []string{"d/b", "d/c"} {
		if got, _ := readLocal(t, s, p); got != threeFiles[p] {
			t.Errorf("%s = %q, want %q (stats %+v)", p, got, threeFiles[p], st.Files)
		}
	}
}

// A parent directory swapped for a symlink to elsewhere while the batch
// runs never leads an install out of the cache.
func TestInstallNew_ParentSwappedForSymlink_NothingOutside(t *testing.T) {
	s := newFilesBucket(t, threeFiles)
	outside := t.TempDir()
	swapped := false
	defer localhook.Set(s.Root(), func(p string, st localhook.Stage) {
		if p == "d/b" && st == localhook.BeforeCheck && !swapped {
			swapped = true
			d := filepath.Join(s.Root(), "d")
			if err := os.Rename(d, d+".moved"); err != nil {
				t.Error(err)
			}
			if err := os.Symlink(outside, d); err != nil {
				t.Error(err)
			}
		}
	})()
	_, _ = s.Pull(t.Context(), PullOptions{}) // a conflict or an install in d.moved: either is fine
	if !swapped {
		t.Fatal("the hook never ran")
	}
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("the pull wrote outside the cache: %v", entries)
	}
}

// A file created at the path while the download ran is kept, and the
// pull reports the path as a conflict (RENAME_NOREPLACE refused the
// rename).
func TestInstallNew_CreatedLocallyMeanwhile_Kept(t *testing.T) {
	s := newFilesBucket(t, threeFiles)
	defer localhook.Set(s.Root(), func(p string, st localhook.Stage) {
		if p == "d/b" && st == localhook.BeforeRename {
			if err := os.WriteFile(filepath.Join(s.Root(), "d", "b"), []byte("mine\n"), 0o644); err != nil {
				t.Error(err)
			}
		}
	})()
	st, err := s.Pull(t.Context(), PullOptions{})
	if err != nil {
		t.Fatalf("pull: %v", err)
	}
	if got, _ := readLocal(t, s, "d/b"); got != "mine\n" {
		t.Errorf("d/b = %q, want the local file kept", got)
	}
	if st.Files.Conflicts != 1 || len(st.Conflicts) != 1 || st.Conflicts[0].Path != "d/b" {
		t.Errorf("conflicts = %d %+v, want d/b", st.Files.Conflicts, st.Conflicts)
	}
	if left := leftTemporaries(t, s.Root()); len(left) != 0 {
		t.Errorf("temporaries left: %v", left)
	}
}

// On a filesystem without RENAME_NOREPLACE the verified temporary is
// installed the portable way, and so is every later file of the batch.
func TestInstallNew_NoRenameNoReplace_FallsBack(t *testing.T) {
	calls := 0
	defer func(f func(int, string, int, string) error) { renameNoReplace = f }(renameNoReplace)
	renameNoReplace = func(int, string, int, string) error { calls++; return unix.EINVAL }
	s := newFilesBucket(t, threeFiles)
	st, err := s.Pull(t.Context(), PullOptions{})
	if err != nil || st.Files.Downloaded != 3 {
		t.Fatalf("pull: %+v, %v", st.Files, err)
	}
	mustHold(t, s, threeFiles)
	if calls != 1 {
		t.Errorf("renameat2 tried %d times, want once (then the batch falls back)", calls)
	}
	if left := leftTemporaries(t, s.Root()); len(left) != 0 {
		t.Errorf("temporaries left: %v", left)
	}
}

// A new file's parent directory exists before the install looks at the
// path, as with the portable install: a user saving the file atomically
// then (a temporary beside it, renamed over it) finds the directory, and
// the saved file is kept. The model found the order wrong (its local
// writer's "renameSave" at stage 0).
func TestInstallNew_ParentMadeBeforeCheck_AtomicSaveKept(t *testing.T) {
	s := newFilesBucket(t, map[string]string{"n/x/y": "remote\n"})
	saved := false
	defer localhook.Set(s.Root(), func(p string, st localhook.Stage) {
		if p != "n/x/y" || st != localhook.BeforeCheck {
			return
		}
		abs := filepath.Join(s.Root(), "n", "x", "y")
		if err := os.WriteFile(abs+".writer-tmp", []byte("saved\n"), 0o644); err != nil {
			t.Errorf("the user's save: %v", err)
			return
		}
		if err := os.Rename(abs+".writer-tmp", abs); err != nil {
			t.Error(err)
		}
		saved = true
	})()
	st, err := s.Pull(t.Context(), PullOptions{})
	if err != nil {
		t.Fatalf("pull: %v", err)
	}
	if !saved {
		t.Fatal("the user's save did not run")
	}
	if got, _ := readLocal(t, s, "n/x/y"); got != "saved\n" {
		t.Errorf("n/x/y = %q, want the saved file kept", got)
	}
	if st.Files.Conflicts != 1 {
		t.Errorf("conflicts = %d, want 1", st.Files.Conflicts)
	}
}
