//go:build unix

package syncer_test

import (
	"maps"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/siltsync/silt/syncer"
)

func modeOf(t *testing.T, s *syncer.Syncer, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(filepath.Join(s.Root(), p))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func chmod(t *testing.T, s *syncer.Syncer, p string, m os.FileMode) {
	t.Helper()
	if err := os.Chmod(filepath.Join(s.Root(), p), m); err != nil {
		t.Fatal(err)
	}
}

// The executable bit is committed ("x" in the entry), and a pull installs
// the file 0755 (less the umask); a plain file 0644.
func TestSyncer_Push_ExecutableBit_RecordedAndInstalled(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	b := fileStore(t)
	a := openWith(t, b, syncer.Config{})
	put(t, a, "run.sh", "#!/bin/sh\n")
	put(t, a, "big.bin", string(make([]byte, 2<<20))) // stored alone, not packed
	put(t, a, "plain", "p")
	chmod(t, a, "run.sh", 0o755)
	chmod(t, a, "big.bin", 0o700)
	mustPush(t, a, syncer.PushOptions{All: true})
	got := remoteEntries(t, b)
	if !got["run.sh"].Exec || !got["big.bin"].Exec || got["plain"].Exec {
		t.Fatalf("entries %+v", got)
	}
	c := openWith(t, b, syncer.Config{})
	mustPull(t, c, syncer.PullOptions{})
	for p, want := range map[string]os.FileMode{"run.sh": 0o755, "big.bin": 0o755, "plain": 0o644} {
		if m := modeOf(t, c, p); m != want {
			t.Errorf("%s pulled %v, want %v", p, m, want)
		}
	}
	// Pulled, then pushed: nothing changed, the bit included.
	if st := mustPush(t, c, syncer.PushOptions{All: true}); st.Files.Uploaded+st.Files.Deduplicated != 0 {
		t.Errorf("a push after the pull changed %+v", st.Files)
	}
}

// A chmod +x alone (the bytes and mtime unchanged) is a change to push: it
// sends no bytes, and a peer's pull sets the bit without downloading.
func TestSyncer_Push_ChmodAlone_IsAChange(t *testing.T) {
	b := fileStore(t)
	a := openWith(t, b, syncer.Config{})
	put(t, a, "tool", "#!/bin/sh\necho hi\n")
	mustPush(t, a, syncer.PushOptions{All: true})
	c := openWith(t, b, syncer.Config{})
	mustPull(t, c, syncer.PullOptions{})

	chmod(t, a, "tool", 0o755)
	st := mustPush(t, a, syncer.PushOptions{All: true})
	if st.Files.Deduplicated != 1 || st.Bytes.Up != 0 {
		t.Errorf("chmod +x pushed %+v, %d bytes up", st.Files, st.Bytes.Up)
	}
	if !remoteEntries(t, b)["tool"].Exec {
		t.Fatal("the entry is not executable")
	}
	st = mustPull(t, c, syncer.PullOptions{})
	if st.Bytes.Down != 0 || modeOf(t, c, "tool")&0o100 == 0 {
		t.Errorf("pull of a chmod: %d bytes down, mode %v", st.Bytes.Down, modeOf(t, c, "tool"))
	}
	chmod(t, a, "tool", 0o644)
	mustPush(t, a, syncer.PushOptions{All: true})
	mustPull(t, c, syncer.PullOptions{})
	if m := modeOf(t, c, "tool"); m&0o111 != 0 {
		t.Errorf("chmod -x reached the peer as %v", m)
	}
}

// A local chmod not yet pushed is a pending change: a pull leaves it, and
// the next push sends it.
func TestSyncer_Pull_KeepsPendingLocalChmod(t *testing.T) {
	b := fileStore(t)
	a := openWith(t, b, syncer.Config{})
	put(t, a, "tool", "x")
	put(t, a, "other", "o")
	mustPush(t, a, syncer.PushOptions{All: true})
	chmod(t, a, "tool", 0o755)
	put(t, openWith(t, b, syncer.Config{}), "late", "l") // unrelated
	mustPull(t, a, syncer.PullOptions{})
	if modeOf(t, a, "tool")&0o100 == 0 {
		t.Fatal("the pull reverted a local chmod")
	}
	mustPush(t, a, syncer.PushOptions{All: true})
	if !remoteEntries(t, b)["tool"].Exec {
		t.Error("the pending chmod was not pushed")
	}
}

// Symlinks and other entries that are not regular files are counted and
// listed in Stats and in Status, not only reported as changes.
func TestSyncer_Push_Skipped_CountedAndListed(t *testing.T) {
	b := fileStore(t)
	s := openWith(t, b, syncer.Config{})
	put(t, s, "real", "r")
	for _, l := range []string{"link1", "sub/link2"} {
		os.MkdirAll(filepath.Dir(filepath.Join(s.Root(), l)), 0o755)
		if err := os.Symlink("real", filepath.Join(s.Root(), l)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(s.Root(), "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := mustPush(t, s, syncer.PushOptions{All: true})
	kinds := map[string]string{}
	for _, sk := range st.Skipped {
		kinds[sk.Path] = sk.Kind
	}
	want := map[string]string{"link1": "symlink", "sub/link2": "symlink", "fifo": "named pipe"}
	if st.Files.Skipped != 3 || !maps.Equal(kinds, want) {
		t.Errorf("skipped %d %v, want 3 %v", st.Files.Skipped, kinds, want)
	}
	status, err := s.Status(t.Context(), false)
	if err != nil || status.Skipped != 3 || len(status.SkippedList) != 3 {
		t.Errorf("Status: skipped %d, list %v (%v)", status.Skipped, status.SkippedList, err)
	}
}
