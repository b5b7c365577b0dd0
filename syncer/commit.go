package syncer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/siltsync/silt/backend"
)

// ErrCommitContention is returned when a commit lost the compare-and-swap
// race on the manifest more times than Config.CommitAttempts allows.
var ErrCommitContention = errors.New("commit: too much contention on the manifest")

// ErrFenced is returned when a commit carries a fencing token lower than
// one already committed under the same lock: the lock was lost meanwhile.
var ErrFenced = errors.New("commit: fencing token is stale (the lock was taken over)")

// ErrNoConditionalWrite is returned when a push needs compare-and-swap and
// the backend cannot do it; such stores must commit under the distributed
// lock.
var ErrNoConditionalWrite = errors.New("backend has no conditional put; commit under a lock")

// Fence identifies the lock a commit is made under, so a holder that lost
// its lock cannot commit after its successor did.
type Fence struct {
	Key   string `json:"key"`
	Token uint64 `json:"token"`
}

// changeSet is one writer's changes: the only thing merged onto the freshly
// read index at each attempt.
type changeSet struct {
	upserts  map[string]Entry           // Seq is filled in at commit
	bases    map[string]backend.Version // the entry version each upsert replaces
	removals map[string]backend.Version // removed only while still at this version
}

// commitResult describes a successful commit.
type commitResult struct {
	snap     snapshot        // the manifest written, with its new version
	replaced map[string]bool // ids of the shards this commit replaced
	written  map[string]string
	skipped  map[string]bool // removals not applied: the entry moved on
	noop     bool            // everything was already committed: nothing written
	// rebased maps each new shard id to the sync key (see syncKey) of the
	// shard it was merged onto: a new shard is as reconciled locally as
	// its base was, since it differs only by this writer's own changes.
	rebased map[string]string
}

// commit merges ch onto the current index by compare-and-swap of the
// manifest. first, when set, is a manifest already read by this operation.
// Every failed attempt leaves only unreferenced shard objects, never a torn
// index.
func (s *Syncer) commit(ctx context.Context, o *op, sh *shards, ch changeSet, first *snapshot, fence *Fence) (commitResult, error) {
	b := o.backend()
	caps := b.Capabilities()
	if !caps.ConditionalPut {
		if s.cfg.CommitLock == nil {
			return commitResult{}, ErrNoConditionalWrite
		}
		// No compare-and-swap: the lock makes read-merge-write exclusive,
		// and its fencing token keeps a holder that lost it from writing.
		key, token, release, err := s.cfg.CommitLock.LockCommit(ctx)
		if err != nil {
			return commitResult{}, fmt.Errorf("commit lock: %w", err)
		}
		defer release()
		fence = &Fence{Key: key, Token: token}
		first = nil
	}
	for attempt := 0; ; attempt++ {
		var snap snapshot
		if attempt == 0 && first != nil {
			snap = *first
		} else {
			var err error
			if snap, err = s.readManifest(ctx, b); err != nil {
				return commitResult{}, err
			}
		}
		if fence != nil && snap.m.Fences[fence.Key] > fence.Token {
			return commitResult{}, fmt.Errorf("%w: %s holds token %d, ours is %d", ErrFenced, fence.Key, snap.m.Fences[fence.Key], fence.Token)
		}
		res, next, err := s.merge(ctx, sh, snap.m, ch, fence)
		if err != nil {
			return commitResult{}, err
		}
		if res.noop {
			res.snap = snap
			return res, nil
		}
		if err := s.writeShards(ctx, b, sh, res.written); err != nil {
			return commitResult{}, err
		}
		data := encodeManifest(next)
		var cond backend.Cond
		switch {
		case !caps.ConditionalPut: // serialised by CommitLock
		case snap.version == "":
			cond = backend.Cond{IfAbsent: true}
		default:
			cond = backend.Cond{IfMatch: snap.version}
		}
		info, err := backend.PutBytes(ctx, b, manifestKey, data, cond)
		if err != nil && !backend.IsPrecondition(err) && ctx.Err() == nil {
			// The outcome is unknown (an ack may be lost): settle it by
			// reading back, never by writing again blindly.
			if cur, curInfo, rerr := backend.ReadAll(ctx, b, manifestKey, backend.GetOptions{}, maxIndexObject); rerr == nil && bytes.Equal(cur, data) {
				info, err = curInfo, nil
			}
		}
		if err == nil {
			res.snap = snapshot{m: next, version: info.Version}
			s.mcache = manifestCache{data: data, version: info.Version} // our own write's version
			return res, nil
		}
		if !backend.IsPrecondition(err) {
			return commitResult{}, fmt.Errorf("write manifest: %w", err)
		}
		if attempt+1 >= s.cfg.CommitAttempts {
			return commitResult{}, fmt.Errorf("%w (%d attempts)", ErrCommitContention, attempt+1)
		}
		if err := sleepCtx(ctx, backoff(attempt, caps.MaxMutationsPerKeyPerSecond)); err != nil {
			return commitResult{}, err
		}
	}
}

// backoff is full jitter over an exponential bound, never faster than the
// store's per-key mutation limit allows.
func backoff(attempt int, perKeyPerSec float64) time.Duration {
	bound := min(10*time.Millisecond<<min(attempt, 8), 2*time.Second)
	d := time.Duration(rand.Int64N(int64(bound)) + 1)
	if perKeyPerSec > 0 {
		d = max(d, time.Duration(float64(time.Second)/perKeyPerSec))
	}
	return d
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// merge applies ch to the shards of m it touches and returns the next
// manifest. Shards past ShardMaxEntries split at their median key; an
// emptied shard is dropped and its neighbour's range widens.
func (s *Syncer) merge(ctx context.Context, sh *shards, m *Manifest, ch changeSet, fence *Fence) (commitResult, *Manifest, error) {
	res := commitResult{replaced: map[string]bool{}, written: map[string]string{}, skipped: map[string]bool{}, rebased: map[string]string{}}
	next := &Manifest{Format: FormatVersion, Seq: m.Seq + 1, Fences: maps.Clone(m.Fences)}
	if fence != nil {
		if next.Fences == nil {
			next.Fences = map[string]uint64{}
		}
		next.Fences[fence.Key] = fence.Token
	}
	// Group the changed paths by the shard that holds them now.
	touched := map[int][]string{}
	base := m
	if len(m.Shards) == 0 {
		base = &Manifest{Shards: []ShardRef{{Lo: ""}}}
	}
	for p := range ch.upserts {
		i := base.shardFor(p)
		touched[i] = append(touched[i], p)
	}
	for p := range ch.removals {
		i := base.shardFor(p)
		touched[i] = append(touched[i], p)
	}
	ids := make([]string, 0, len(touched))
	for i := range touched {
		if base.Shards[i].ID != "" {
			ids = append(ids, base.Shards[i].ID)
		}
	}
	if err := sh.prefetch(ctx, ids, s.cfg.Concurrency); err != nil {
		return res, nil, err
	}
	changed := false
	for i, ref := range base.Shards {
		paths, ok := touched[i]
		if !ok {
			next.Shards = append(next.Shards, ref)
			continue
		}
		entries := map[string]Entry{}
		if ref.ID != "" {
			cur, err := sh.get(ctx, ref.ID)
			if err != nil {
				return res, nil, err
			}
			entries = maps.Clone(cur)
			res.replaced[ref.ID] = true
		}
		for _, p := range paths {
			cur, exists := entries[p]
			if want, ok := ch.removals[p]; ok {
				switch {
				case exists && cur.Version == want:
					delete(entries, p)
					changed = true
				case exists:
					res.skipped[p] = true
				}
				continue
			}
			e := ch.upserts[p]
			switch {
			case exists && cur.Version == e.Version && cur.SHA256 == e.SHA256:
				continue // committed already (a retried CommitPush)
			case exists && cur.Version != ch.bases[p]:
				return res, nil, fmt.Errorf("%w: %s", ErrStalePush, p)
			}
			e.Seq = next.Seq
			entries[p] = e
			changed = true
		}
		for _, part := range split(ref.Lo, entries, s.cfg.ShardMaxEntries) {
			data, id := encodeShard(part.entries)
			sh.remember(id, data, part.entries)
			res.written[id] = shardKey(id)
			if ref.ID != "" {
				res.rebased[id] = syncKey(base, i)
			}
			next.Shards = append(next.Shards, ShardRef{Lo: part.lo, ID: id, Count: len(part.entries), Bytes: int64(len(data))})
		}
	}
	next.Shards = dropEmpty(next.Shards)
	if !changed && (fence == nil || m.Fences[fence.Key] == fence.Token) {
		return commitResult{noop: true, skipped: res.skipped}, m, nil
	}
	return res, next, nil
}

type shardPart struct {
	lo      string
	entries map[string]Entry
}

// split cuts entries into parts of at most max/2 entries when they exceed
// max, so a freshly split shard has room to grow before it splits again.
// An empty shard stays one (empty) part for dropEmpty to remove.
func split(lo string, entries map[string]Entry, max int) []shardPart {
	if len(entries) <= max {
		return []shardPart{{lo, entries}}
	}
	keys := slices.Sorted(maps.Keys(entries))
	size := max / 2
	var parts []shardPart
	for start := 0; start < len(keys); start += size {
		end := min(start+size, len(keys))
		part := shardPart{lo: keys[start], entries: make(map[string]Entry, end-start)}
		if start == 0 {
			part.lo = lo
		}
		for _, k := range keys[start:end] {
			part.entries[k] = entries[k]
		}
		parts = append(parts, part)
	}
	return parts
}

// dropEmpty removes empty shards; the range passes to the previous shard
// (or the next, when the first is empty). An index whose every entry was
// removed keeps one empty shard, so that pulls still read the removals.
func dropEmpty(refs []ShardRef) []ShardRef {
	out := make([]ShardRef, 0, len(refs))
	for _, r := range refs {
		if r.Count > 0 {
			out = append(out, r)
		}
	}
	if len(out) == 0 && len(refs) > 0 {
		out = append(out, refs[0])
	}
	if len(out) > 0 {
		out[0].Lo = ""
	}
	return out
}

// writeShards uploads new shard objects. Their names are content hashes,
// so create-if-absent losing to an existing object means the same bytes
// are already there.
func (s *Syncer) writeShards(ctx context.Context, b backend.Backend, sh *shards, written map[string]string) error {
	cond := backend.Cond{IfAbsent: true}
	if caps := b.Capabilities(); !caps.ConditionalPut && !caps.AtomicCreate {
		cond = backend.Cond{} // same name, same bytes: overwriting is harmless
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(s.cfg.Concurrency)
	for id, key := range written {
		g.Go(func() error {
			sh.mu.Lock()
			data := sh.fetched[id]
			sh.mu.Unlock()
			_, err := backend.PutBytes(ctx, b, key, data, cond)
			if err != nil && !backend.IsPrecondition(err) {
				return fmt.Errorf("write shard %s: %w", id, err)
			}
			return nil
		})
	}
	return g.Wait()
}
