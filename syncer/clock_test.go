package syncer_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/syncer"
)

// A file written within the racy window but before an operation began is
// hashed once: the operation's stamp of the file system's clock proves the
// hash (its mtime is earlier than the stamp), so the next push and pull
// trust the stat. A file whose mtime is at or after the stamp (here: in the
// future) is hashed by every operation, as before. Issue 23: a host's step
// pulled, wrote and pushed a model within a second, and each operation
// hashed every file of it again. Outside Linux no stamp proves anything
// (no device numbers), and the racy window decides alone.
func TestSyncer_ClockStamp_ProvedHashIsNotRepeated(t *testing.T) {
	proves := runtime.GOOS == "linux"
	store := mem.New()
	s := openCache(t, store)
	const n = 5
	recent := time.Now().Add(-300 * time.Millisecond) // racily close to any verification now
	for i := range n {
		writeAt(t, s.Root(), fmt.Sprintf("m/f%d", i), fmt.Sprintf("body %d", i), recent)
	}
	writeAt(t, s.Root(), "m/future", "future", time.Now().Add(time.Hour))
	all := syncer.PushOptions{All: true}
	hashes := func(step string, want, wantElsewhere int64, op func() (syncer.Stats, error)) {
		t.Helper()
		before := syncer.Hashes(s)
		if _, err := op(); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if !proves {
			want = wantElsewhere
		}
		if got := syncer.Hashes(s) - before; got != want {
			t.Errorf("%s: %d files hashed, want %d", step, got, want)
		}
	}
	push := func() (syncer.Stats, error) { return s.Push(t.Context(), all) }
	pull := func() (syncer.Stats, error) { return s.Pull(t.Context(), syncer.PullOptions{}) }
	hashes("first push", n+1, n+1, push)
	hashes("push again", 1, n+1, push) // only the future file
	hashes("pull", 1, n+1, pull)

	// Files a pull installed are racy (the install is the write). A pull
	// judging their shard again (a peer changed another file of it)
	// hashes them once, and that hash is proved: the push after it trusts
	// the stat.
	peer := s
	c := openCache(t, store)
	if _, err := c.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	writeAt(t, peer.Root(), "m/new", "new", time.Now().Add(-time.Hour))
	if _, err := peer.Push(t.Context(), all); err != nil {
		t.Fatal(err)
	}
	s = c
	hashes("pull of the changed shard", n+1, n+1, pull)
	hashes("push after that pull", 1, n+2, push) // m/new, installed by that pull

	// The push proves what it hashes as well: an installed file that no
	// pull judged again is hashed by the next push only.
	d := openCache(t, store)
	if _, err := d.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	s = d
	hashes("push after an install", n+2, n+2, push)
	hashes("push again after an install", 0, n+2, push)
}

// The stamp is taken before the first file is opened, never after: a
// write that lands while a push is hashing gets an mtime at or after the
// stamp, so its record stays racy, and a second write in the same tick
// of the file system's clock (the same mtime, the same size) is still
// found by the next push. A stamp taken after the read would have proved
// the first write's mtime and let the second one pass unseen.
func TestSyncer_ClockStamp_WriteDuringTheHashIsFoundLater(t *testing.T) {
	store := mem.New()
	s := openCache(t, store)
	writeAt(t, s.Root(), "m/f", "v1", time.Now().Add(-time.Hour))
	wrote := false
	syncer.FailOpen(s, func(p string) error {
		if p != "m/f" || wrote {
			return nil
		}
		wrote = true
		// v2 lands after the stamp, before the read, in the stamp's tick;
		// then the file system's clock moves on, so a stamp taken after
		// the read would be later than v2's mtime and prove it.
		fi, err := os.Stat(filepath.Join(s.Root(), ".silt", "clock"))
		if err != nil {
			return err
		}
		f := filepath.Join(s.Root(), "m", "f")
		if err := os.WriteFile(f, []byte("v2"), 0o644); err != nil {
			return err
		}
		if err := os.Chtimes(f, fi.ModTime(), fi.ModTime()); err != nil {
			return err
		}
		probe := filepath.Join(s.Root(), "probe")
		for {
			if err := os.WriteFile(probe, nil, 0o644); err != nil {
				return err
			}
			pi, err := os.Stat(probe)
			if err != nil || pi.ModTime().After(fi.ModTime()) {
				return err
			}
		}
	})
	if _, err := s.Push(t.Context(), syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	syncer.FailOpen(s, nil)
	if err := os.Remove(filepath.Join(s.Root(), "probe")); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(s.Root(), "m", "f")
	fi, err := os.Stat(full)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, s, "m/f", "v3")
	if err := os.Chtimes(full, fi.ModTime(), fi.ModTime()); err != nil { // the same tick as v2
		t.Fatal(err)
	}
	st, err := s.Push(t.Context(), syncer.PushOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if st.Files.Uploaded != 1 {
		t.Fatalf("the second push uploaded %d files; the write of v3 in v2's tick was missed", st.Files.Uploaded)
	}
	peer := openCache(t, store)
	if _, err := peer.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, peer, "m/f"); got != "v3" {
		t.Fatalf("the bucket holds %q, want v3", got)
	}
}
