package syncer

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/siltsync/silt/backend"
)

// Snapshot is a read-only view of one committed index: what `silt ls`,
// `silt cat` and consistency checks read. It never lists the bucket.
type Snapshot struct {
	b    backend.Backend
	snap snapshot
}

// OpenSnapshot reads the manifest of the namespace root b (apply a
// namespace with backend.Prefixed first). An empty bucket is an empty
// snapshot.
func OpenSnapshot(ctx context.Context, b backend.Backend) (*Snapshot, error) {
	snap, err := readManifest(ctx, b)
	if err != nil {
		return nil, err
	}
	return &Snapshot{b: b, snap: snap}, nil
}

// Manifest returns the manifest as read.
func (s *Snapshot) Manifest() *Manifest { return s.snap.m }

// Walk calls fn in path order for every committed entry under prefix (a
// file or directory path; "" for all), reading only the covering shards.
func (s *Snapshot) Walk(ctx context.Context, prefix string, fn func(path string, e Entry) error) error {
	sc, err := newScope([]string{prefix})
	if err != nil {
		return err
	}
	m := s.snap.m
	for _, i := range m.cover(sc) {
		entries, err := s.shard(ctx, m.Shards[i].ID)
		if err != nil {
			return err
		}
		for _, p := range slices.Sorted(maps.Keys(entries)) {
			if sc.contains(p) {
				if err := fn(p, entries[p]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (s *Snapshot) shard(ctx context.Context, id string) (map[string]Entry, error) {
	data, _, err := backend.ReadAll(ctx, s.b, shardKey(id), backend.GetOptions{}, maxIndexObject)
	if backend.IsNotExist(err) {
		return nil, corrupt(shardKey(id), "listed in the manifest but missing")
	}
	if err != nil {
		return nil, err
	}
	return decodeShard(id, data)
}

// Check verifies the snapshot: every shard exists and matches its hash, its
// entries lie inside its range, its count is right, and, when data is
// true, every entry's object exists at the committed version and size.
// (Between a writer's upload and its commit, an overwritten path's object
// is ahead of its entry; check data only when no push is in flight.)
func (s *Snapshot) Check(ctx context.Context, data bool) error {
	m := s.snap.m
	for i, ref := range m.Shards {
		entries, err := s.shard(ctx, ref.ID)
		if err != nil {
			return err
		}
		if len(entries) != ref.Count {
			return corrupt(shardKey(ref.ID), "manifest says %d entries, shard has %d", ref.Count, len(entries))
		}
		if len(entries) == 0 && len(m.Shards) > 1 {
			return corrupt(shardKey(ref.ID), "empty shard beside others in the manifest")
		}
		rng := keyRange{ref.Lo, m.hi(i)}
		for p, e := range entries {
			if p < rng.lo || (rng.hi != "" && p >= rng.hi) {
				return corrupt(shardKey(ref.ID), "entry %q outside the shard's range [%q, %q)", p, rng.lo, rng.hi)
			}
			if !data {
				continue
			}
			info, err := s.b.Stat(ctx, p)
			if err != nil {
				return fmt.Errorf("entry %q: %w", p, err)
			}
			if info.Version != e.Version || info.Size != e.Size {
				return fmt.Errorf("entry %q: object is at version %s size %d, index says %s size %d", p, info.Version, info.Size, e.Version, e.Size)
			}
		}
	}
	return nil
}
