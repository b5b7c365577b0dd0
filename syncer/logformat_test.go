package syncer_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// A bucket created in the log format, as the command line opens it: a
// one-file push costs 4 requests (the absent next entry, the object, the
// shard, the entry; the hint every index.HintEvery commits, none of them
// the history copy of version 3), an unchanged pull 1, a changed pull
// reads the new entry, and the next process starts where the last left.
func TestLogFormat_RequestCounts_AndPeersConverge(t *testing.T) {
	root := t.TempDir()
	b, err := backend.Open(t.Context(), "file://"+filepath.Join(root, "bucket"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	c := wrap.Count(b)
	open := func(name string) *syncer.Syncer {
		s, err := syncer.Open(t.Context(), syncer.Config{Backend: c, Dir: filepath.Join(root, name), Format: index.LogFormat})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, peer := open("a"), open("b")
	t.Cleanup(func() { peer.Close() })
	putMarked(t, a, "m/f", "v1")
	if _, err := a.Push(t.Context(), syncer.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	putMarked(t, a, "m/f", "v2")
	before := c.Counts()
	st, err := a.Push(t.Context(), syncer.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Counts().Sub(before); d.Total() != 4 || st.Seq != 2 {
		t.Fatalf("one-file push at seq %d: %+v, want 4 requests", st.Seq, d)
	}
	before = c.Counts()
	if _, err := a.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := c.Counts().Sub(before); d.Total() != 1 {
		t.Fatalf("unchanged pull: %+v, want 1 request", d)
	}
	if _, err := peer.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(peer.Root(), "m", "f")); string(got) != "v2" {
		t.Fatalf("peer has %q, want v2", got)
	}
	// A new process over the same cache: its saved observation is fresh,
	// so its unchanged pull is one request too.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	a = open("a")
	t.Cleanup(func() { a.Close() })
	before = c.Counts()
	if _, err := a.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := c.Counts().Sub(before); d.Total() != 1 {
		t.Fatalf("unchanged pull of a new process: %+v, want 1 request", d)
	}
	// The bucket is a log: a version-3 cache opened on it writes the log.
	v3, err := syncer.Open(t.Context(), syncer.Config{Backend: c, Dir: filepath.Join(root, "v3")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v3.Close() })
	putMarked(t, v3, "n/g", "from a version-3 cache")
	if st, err := v3.Push(t.Context(), syncer.PushOptions{}); err != nil || st.Seq != 3 {
		t.Fatalf("push of a version-3 cache: seq %d, %v", st.Seq, err)
	}
	if _, err := c.Stat(t.Context(), index.LogKey(3)); err != nil {
		t.Fatalf("the version-3 cache's commit is not in the log: %v", err)
	}
}
