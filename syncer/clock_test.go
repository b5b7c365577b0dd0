package syncer_test

import (
	"fmt"
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
