package index_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
)

// scalePath names file i of a bucket laid out as silt-bench's peers
// layout: models of 11 files under one model type.
func scalePath(i int) string {
	return fmt.Sprintf("data/aws/ec2/vpc/m%07d/%d.yaml", i/11, i%11)
}

// scaleShard returns the entries of a shard of n packed files from file
// first on, as a push of small files writes them.
func scaleShard(first, n int, seq uint64) map[string]index.Entry {
	entries := make(map[string]index.Entry, n)
	for i := first; i < first+n; i++ {
		entries[scalePath(i)] = index.Entry{Size: 5120, SHA256: sum(scalePath(i)), Seq: seq, Pack: sum(fmt.Sprint("pack", i/400)), Off: int64(i%400) * 5120}
	}
	return entries
}

// The index bytes a one-file commit uploads in DeltaFormat at a million
// and at ten million entries, measured on a synthetic index of that size
// (shards at the bucket's byte bound, the changed one written whole): the
// shard, the log entry, and the checkpoint every DefaultCheckpointEvery
// commits, amortised. The goal (issue 23) is at most 64 KiB at 10M: a
// minute under -race, so ten million only with SILT_SCALE_10M=1 (.ci/run
// sets it, without -race).
func TestDelta_IndexBytesPerOneFileCommit_AtScale(t *testing.T) {
	sizes := []int{1_000_000}
	if os.Getenv("SILT_SCALE_10M") != "" {
		sizes = append(sizes, 10_000_000)
	}
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			m := &index.Manifest{Format: index.DeltaFormat, ShardMaxEntries: index.DefaultShardMaxEntries, ShardMaxBytes: index.DefaultShardMaxBytes}
			// A full shard is split into parts of at most three quarters
			// of the byte bound, so shards hold between three quarters and
			// a whole bound: a bucket of shards seven eighths full, the
			// changed one full.
			refs, per, full := scaleRefs(m, n)
			ctx := context.Background()
			store := wrap.Count(mem.New())
			commit := func(base index.Head, shards []index.ShardRef, write func(context.Context) error) index.Head {
				t.Helper()
				return scaleCommit(t, store, m, base, shards, write, index.DefaultCheckpointEvery)
			}
			head, err := index.ReadHead(ctx, store, time.Now)
			if err != nil {
				t.Fatal(err)
			}
			head = commit(head, refs, nil)
			rng := rand.New(rand.NewPCG(1, uint64(n)))
			oneFile := func() index.Head {
				i := rng.IntN(len(refs))
				shards := slices.Clone(head.Manifest.Shards)
				entries := scaleShard(i*per, full, head.Manifest.Seq+1)
				data, id := index.EncodeFreshShard(entries)
				shards[i].ID, shards[i].Count, shards[i].Bytes = id, len(entries), int64(len(data))
				return commit(head, shards, func(ctx context.Context) error {
					_, err := backend.PutBytes(ctx, store, index.ShardKey(id), data, backend.Cond{})
					return err
				})
			}
			// Up to the first checkpoint, which writes every page: a
			// bucket's first, once.
			for head.Manifest.Seq < index.DefaultCheckpointEvery {
				head = oneFile()
			}
			var perCommit []int64
			var total, maxOne int64
			commits := index.DefaultCheckpointEvery
			for k := range commits {
				before := store.Counts()
				head = oneFile()
				d := store.Counts().Sub(before)
				perCommit = append(perCommit, d.BytesUp)
				total += d.BytesUp
				if k < commits-1 {
					maxOne = max(maxOne, d.BytesUp)
				}
			}
			last := perCommit[len(perCommit)-1]
			avg := total / int64(commits)
			t.Logf("%d entries: %d shards of %d-%d entries; a one-file commit uploads at most %d B of index (shard and entry); the checkpoint's commit %d B; over the %d commits from one checkpoint to the next %d B a commit", n, len(refs), per, full, maxOne, last, commits, avg)
			if avg > 64<<10 {
				t.Errorf("%d entries: %d B of index a one-file commit on average, goal 64 KiB", n, avg)
			}
			if got := readHead(t, store); !got.Same(head) {
				t.Fatalf("a fresh reader reads seq %d, want %d", got.Manifest.Seq, head.Manifest.Seq)
			}
		})
	}
}

// scaleRefs returns the shard list of a synthetic index of n entries, as
// TestDelta_IndexBytesPerOneFileCommit_AtScale lays it out.
func scaleRefs(m *index.Manifest, n int) (refs []index.ShardRef, per, full int) {
	part := len(m.Split("", scaleShard(0, 2000, 1))[0].Entries)
	full = part * 4 / 3
	per = (part + full) / 2
	for first := 0; first < n; first += per {
		lo := scalePath(first)
		if first == 0 {
			lo = ""
		}
		refs = append(refs, index.ShardRef{Lo: lo, ID: fmt.Sprintf("%032x", rand.Uint64()), Count: min(per, n-first), Bytes: 24 << 10})
	}
	return refs, per, full
}

// scaleCommit commits shards, with m's bounds, as the successor of base
// (write stores what they name first), checkpointing every every seqs.
func scaleCommit(tb testing.TB, store backend.Backend, m *index.Manifest, base index.Head, shards []index.ShardRef, write func(context.Context) error, every int) index.Head {
	tb.Helper()
	res, err := index.Commit(context.Background(), store, base, func(context.Context, index.Head) (index.Proposal, error) {
		return index.Proposal{Next: &index.Manifest{Seq: base.Manifest.Seq + 1, Shards: shards, ShardMaxEntries: m.ShardMaxEntries, ShardMaxBytes: m.ShardMaxBytes}, Write: write}, nil
	}, index.CommitOptions{CheckpointEvery: every})
	if err != nil {
		tb.Fatal(err)
	}
	return res.Head
}

// BenchmarkDelta_CPU_AtScale is the client CPU of the one format at 100k,
// 1M and 10M entries (synthetic index, mem store): a one-file commit
// (the entry's state built, hashed and diffed; the shard's upload not
// counted), a reader one commit behind catching up (the delta applied and
// the state re-hashed), and an unchanged pull (one absent read). Issue
// 34's target is flat (ratio <= 1.5 from 100k to 10M); format 5 is not:
// the state a delta makes is the whole shard list, hashed whole.
// Checkpoints are off, so no op pays one.
func BenchmarkDelta_CPU_AtScale(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000, 10_000_000} {
		m := &index.Manifest{Format: index.DeltaFormat, ShardMaxEntries: index.DefaultShardMaxEntries, ShardMaxBytes: index.DefaultShardMaxBytes}
		refs, _, _ := scaleRefs(m, n)
		ctx := context.Background()
		store := mem.New()
		commit := func(tb testing.TB, base index.Head, shards []index.ShardRef) index.Head {
			return scaleCommit(tb, store, m, base, shards, nil, 1<<30) // no checkpoints
		}
		head, err := index.ReadHead(ctx, store, time.Now)
		if err != nil {
			b.Fatal(err)
		}
		head = commit(b, head, refs)
		rng := rand.New(rand.NewPCG(1, uint64(n)))
		oneFile := func(tb testing.TB) index.Head {
			shards := slices.Clone(head.Manifest.Shards)
			i := rng.IntN(len(shards))
			shards[i].ID = fmt.Sprintf("%032x", rng.Uint64())
			return commit(tb, head, shards)
		}
		name := fmt.Sprintf("%dk", n/1000)
		b.Run("commit/"+name, func(b *testing.B) {
			for b.Loop() {
				head = oneFile(b)
			}
		})
		b.Run("catch-up/"+name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				known := head
				head = oneFile(b)
				b.StartTimer()
				if h, err := index.ReadHeadSince(ctx, store, known, time.Now); err != nil || !h.Same(head) {
					b.Fatalf("caught up to %v, %v", h.Manifest.Seq, err)
				}
			}
		})
		b.Run("unchanged/"+name, func(b *testing.B) {
			for b.Loop() {
				if _, err := index.ReadHeadSince(ctx, store, head, time.Now); !errors.Is(err, backend.ErrNotModified) {
					b.Fatalf("an unchanged read: %v, want backend.ErrNotModified", err)
				}
			}
		})
	}
}
