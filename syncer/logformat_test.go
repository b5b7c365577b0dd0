package syncer_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// countedBucket opens a file:// bucket under root as the command line
// does, counted.
func countedBucket(t *testing.T, root string) *wrap.Counting {
	t.Helper()
	b, err := backend.Open(t.Context(), "file://"+filepath.Join(root, "bucket"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return wrap.Count(b)
}

// A bucket in the one format this silt writes (5, the log of deltas), as
// the command line opens it: a one-file push costs 4 requests (the absent
// next entry, the object, the shard, the entry; a checkpoint every
// index.DefaultCheckpointEvery commits), an unchanged pull 1, a changed
// pull reads the new entry, and the next process starts where the last
// left.
func TestLogFormat_RequestCounts_AndPeersConverge(t *testing.T) {
	root := t.TempDir()
	c := countedBucket(t, root)
	open := func(name string) *syncer.Syncer {
		s, err := syncer.Open(t.Context(), syncer.Config{Backend: c, Dir: filepath.Join(root, name)})
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
	// A third cache, new to the bucket, commits in the log too.
	third := open("c")
	t.Cleanup(func() { third.Close() })
	putMarked(t, third, "n/g", "from a third cache")
	if st, err := third.Push(t.Context(), syncer.PushOptions{}); err != nil || st.Seq != 3 {
		t.Fatalf("push of a third cache: seq %d, %v", st.Seq, err)
	}
	if _, err := c.Stat(t.Context(), index.LogKey(3)); err != nil {
		t.Fatalf("the third cache's commit is not in the log: %v", err)
	}
}

// A push that commits a checkpoint's seq writes it: it reads
// the hint, writes the pages the hint's root does not name, the root and
// the hint again; and a shard past the bucket's byte bound is split by
// bytes.
func TestDeltaFormat_CheckpointPush_AndByteBound(t *testing.T) {
	root := t.TempDir()
	c := countedBucket(t, root)
	s, err := syncer.Open(t.Context(), syncer.Config{Backend: c, Dir: filepath.Join(root, "a"), CheckpointEvery: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	long := strings.Repeat("n", 100) + "/" + strings.Repeat("o", 100) + "/" + strings.Repeat("p", 100) + "/" + strings.Repeat("q", 100)
	for i := range 600 {
		putMarked(t, s, fmt.Sprintf("m/%s%03d", long, i), "x")
	}
	if _, err := s.Push(t.Context(), syncer.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	head, err := index.ReadHead(t.Context(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if head.Manifest.ShardMaxBytes != index.DefaultShardMaxBytes6 || len(head.Manifest.Shards) < 4 {
		t.Fatalf("600 entries of ~520 bytes: %d shards, byte bound %d; want them split at %d", len(head.Manifest.Shards), head.Manifest.ShardMaxBytes, index.DefaultShardMaxBytes6)
	}
	for _, ref := range head.Manifest.Shards {
		if ref.Bytes > index.DefaultShardMaxBytes6 {
			t.Errorf("shard %s: %d bytes, bound %d", ref.Lo, ref.Bytes, index.DefaultShardMaxBytes6)
		}
	}
	putMarked(t, s, "m/"+long+"000", "y")
	before := c.Counts()
	st, err := s.Push(t.Context(), syncer.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// 4 for the commit; the hint read, one page, the root, the hint.
	if d := c.Counts().Sub(before); d.Total() != 8 || st.Seq != 2 {
		t.Fatalf("one-file push at checkpoint seq %d: %+v, want 8 requests", st.Seq, d)
	}
	if _, err := c.Stat(t.Context(), index.CheckpointKey(2)); err != nil {
		t.Fatalf("no checkpoint of seq 2: %v", err)
	}
}
