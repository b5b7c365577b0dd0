package syncer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// boundedCache opens a cache on store splitting at max when it creates the
// bucket's index.
func boundedCache(t *testing.T, store backend.Backend, max int) *syncer.Syncer {
	t.Helper()
	s, err := syncer.Open(t.Context(), syncer.Config{Backend: store, Dir: t.TempDir(), ShardMaxEntries: max})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// pushPaths writes paths into s's cache and pushes them.
func pushPaths(t *testing.T, s *syncer.Syncer, paths ...string) {
	t.Helper()
	for _, p := range paths {
		abs := filepath.Join(s.Root(), p)
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
		s.MarkDirty(p)
	}
	if _, err := s.Push(t.Context(), syncer.PushOptions{}); err != nil {
		t.Fatal(err)
	}
}

// wantShardLayout checks the bucket's recorded bound and its shards' sizes.
func wantShardLayout(t *testing.T, store backend.Backend, step string, bound int, counts ...int) {
	t.Helper()
	h, err := index.ReadManifest(context.Background(), store, backend.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, r := range h.Manifest.Shards {
		got = append(got, r.Count)
	}
	if h.Manifest.ShardMaxEntries != bound || !slices.Equal(got, counts) {
		t.Errorf("after %s: bound %d, shard sizes %v; want bound %d, sizes %v", step, h.Manifest.ShardMaxEntries, got, bound, counts)
	}
}

// Two caches configured with different bounds push to one bucket in turn:
// both split at the bound the creating cache recorded, so the layout never
// depends on which cache pushed last. Before the bound was the bucket's,
// the cache with 1000 let the shards it touched grow past 4.
func TestSyncer_Push_ShardBoundIsTheBucketsNotTheCaches(t *testing.T) {
	store := mem.New()
	small, large := boundedCache(t, store, 4), boundedCache(t, store, 1000)
	pushPaths(t, small, "a/1", "a/2", "a/3", "a/4", "a/5")
	wantShardLayout(t, store, "the small cache creates the index", 4, 2, 2, 1)
	pushPaths(t, large, "b/1", "b/2", "b/3", "b/4")
	wantShardLayout(t, store, "the large cache's push", 4, 2, 2, 2, 2, 1)
	pushPaths(t, small, "a/6")
	wantShardLayout(t, store, "the small cache's second push", 4, 2, 2, 3, 2, 1)
	pushPaths(t, large, "b/5", "b/6", "b/7", "b/8")
	wantShardLayout(t, store, "the large cache's second push", 4, 2, 2, 3, 2, 2, 2, 1)
}

// The other way round: a bucket created at 1000 is not split at 4 by a
// cache configured so.
func TestSyncer_Push_RecordedLargeBoundWinsOverSmallConfig(t *testing.T) {
	store := mem.New()
	large, small := boundedCache(t, store, 1000), boundedCache(t, store, 4)
	pushPaths(t, large, "a/1", "a/2", "a/3", "a/4", "a/5")
	wantShardLayout(t, store, "the large cache creates the index", 1000, 5)
	pushPaths(t, small, "b/1", "b/2", "b/3")
	wantShardLayout(t, store, "the small cache's push", 1000, 8)
}

// A manifest without the field (a bucket written before it existed) has
// no recorded policy: its next writer records its own bound, as when it
// creates a bucket, and splits by it.
func TestSyncer_Push_UnrecordedBoundIsRecordedByTheNextWriter(t *testing.T) {
	store := mem.New()
	pushPaths(t, boundedCache(t, store, 1000), "a/1", "a/2", "a/3", "a/4", "a/5")
	ctx := context.Background()
	cur, err := index.ReadManifest(ctx, store, backend.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	legacy := func(context.Context, index.Head) (index.Proposal, error) {
		m := *cur.Manifest
		m.Seq++
		m.ShardMaxEntries = 0 // what an older writer's commit leaves
		return index.Proposal{Next: &m}, nil
	}
	if _, err := index.Commit(ctx, store, cur, legacy, index.CommitOptions{Attempts: 1}); err != nil {
		t.Fatal(err)
	}
	wantShardLayout(t, store, "an older writer's commit", 0, 5)
	pushPaths(t, boundedCache(t, store, 4), "a/6")
	wantShardLayout(t, store, "the next writer's push", 4, 2, 2, 2)
}

// A repack rewrites shards without a writer's config: it carries the
// bucket's recorded bound.
func TestGC_Repack_KeepsTheShardBound(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	w := boundedCache(t, store, 8)
	files := packFiles(10)
	pushFiles(t, w, files)
	for i := 2; i < 10; i++ {
		if err := os.Remove(filepath.Join(w.Root(), fmt.Sprintf("data/m/f%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.MarkDirty("data"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Push(ctx, syncer.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rep, err := index.GC(ctx, store, index.GCOptions{OlderThan: time.Hour, Now: func() time.Time { return now }})
	if err != nil || rep.Repack.Written != 1 {
		t.Fatalf("gc: %+v, %v; want one pack rewritten", rep.Repack, err)
	}
	wantShardLayout(t, store, "the repack", 8, 2)
}
