package syncer_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/syncer"
)

func writeAt(t *testing.T, root, p, body string, mtime time.Time) {
	t.Helper()
	abs := filepath.Join(root, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(abs, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(abs, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// A push hashes a file only when its stat cannot prove it unchanged: a
// new file, a changed size or mtime, or an mtime racily close to (here:
// after) the record's verification. Counted, not timed.
func TestSyncer_Push_HashesOnlyWhatTheStatDoesNotSettle(t *testing.T) {
	s, err := syncer.Open(t.Context(), syncer.Config{Backend: mem.New(), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	future := time.Now().Add(time.Hour) // always within the racy window of a verification
	files := []string{"m/a/1", "m/a/2", "m/b/1", "m/b/2", "m/c", "n"}
	for _, p := range files {
		writeAt(t, s.Root(), p, "body of "+p, old)
	}
	writeAt(t, s.Root(), "racy", "racy", future)
	all := syncer.PushOptions{All: true}
	push := func(step string, wantHashes int64, wantUploads int) {
		t.Helper()
		before := syncer.Hashes(s)
		st, err := s.Push(t.Context(), all)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if got := syncer.Hashes(s) - before; got != wantHashes || st.Files.Uploaded != wantUploads {
			t.Errorf("%s: %d hashes, %d uploads; want %d, %d", step, got, st.Files.Uploaded, wantHashes, wantUploads)
		}
		if st.Local.Examined != len(files)+1 {
			t.Errorf("%s: examined %d files, want %d", step, st.Local.Examined, len(files)+1)
		}
	}
	push("first push", int64(len(files))+1, len(files)+1)
	push("no-op push", 1, 0) // only the racy file
	writeAt(t, s.Root(), "m/b/1", "body of m/b/1", old.Add(-time.Minute))
	push("mtime changed, same bytes", 2, 0)
	push("mtime recorded", 1, 0)
	writeAt(t, s.Root(), "m/a/2", "new body", old)
	push("size changed", 2, 1)
}

// The walk yields files in byte order of their paths (the index's order),
// not in the order of a directory listing: "a-b" and "a.b/x" sort before
// "a/c" since '-' and '.' sort before '/'. It skips .silt directories and
// symlinks.
func TestSyncer_Push_WalksInPathOrder(t *testing.T) {
	s, err := syncer.Open(t.Context(), syncer.Config{Backend: mem.New(), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	old := time.Now().Add(-time.Hour)
	want := []string{"a-b", "a.b/x", "a/b/c", "a/c", "a0", "b/a/.silt-not/x", "b/a/z", "b/a0"}
	for _, p := range slices.Backward(want) {
		writeAt(t, s.Root(), p, p, old)
	}
	writeAt(t, s.Root(), "b/.silt/state.db", "a nested cache's own", old)
	if err := os.Symlink("a0", filepath.Join(s.Root(), "b", "link")); err != nil {
		t.Fatal(err)
	}
	st, err := s.Push(t.Context(), syncer.PushOptions{All: true, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	skipped := 0
	for _, c := range st.Changes {
		switch c.Action {
		case syncer.ActionUpload:
			got = append(got, c.Path)
		case syncer.ActionSkip:
			skipped++
			if c.Path != "b/link" {
				t.Errorf("skipped %s (%s), want only b/link", c.Path, c.Reason)
			}
		}
	}
	if !slices.Equal(got, want) || skipped != 1 {
		t.Errorf("planned uploads %v (%d skipped); want %v and the symlink skipped", got, skipped, want)
	}
}
