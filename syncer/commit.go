package syncer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
)

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
// read index at each attempt. Every change carries its base: the sha256 this
// cache last synced for the path ("" for a path it believes new).
type changeSet struct {
	upserts  map[string]index.Entry // Seq is filled in at commit
	bases    map[string]string      // the sha256 each upsert replaces
	removals map[string]string      // removed only while still at this sha256
	// proofs maps an upsert deduplicated against an existing object to
	// the path whose entry named it when the push was prepared: it is
	// committed only while the base still names that object there (or
	// elsewhere in that shard), so a GC that reads this base or a later
	// one keeps it.
	proofs map[string]string
}

// commitResult describes a commit.
type commitResult struct {
	head      index.Head        // the manifest written (or read, when noop)
	written   map[string]bool   // ids of the shards this commit wrote
	skipped   map[string]bool   // removals not applied: the entry moved on
	conflicts map[string]string // upserts not applied, with the reason
	noop      bool              // nothing to write: everything applied already or conflicted
	attempts  int               // manifest compare-and-swaps sent
	batch     int               // pushes merged into this commit (group commit)
	pipelined bool              // built on a commit of this cache in flight, and landed on it
	// rebased maps each new shard id to the sync key of the shard it was
	// merged onto: a new shard is as reconciled locally as its base was,
	// since it differs only by this writer's own changes.
	rebased map[string]string
}

// commit merges ch onto the current index by compare-and-swap of the
// manifest. first, when set, is a manifest already read by this operation.
// Every failed attempt leaves only unreferenced shard objects, never a torn
// index.
func (s *Syncer) commit(ctx context.Context, o *op, sh *shards, ch changeSet, first *index.Head, fence *Fence, pl pipeline) (commitResult, error) {
	b := o.backend()
	if caps := b.Capabilities(); !caps.ConditionalPut && !caps.AtomicCreate {
		if s.cfg.CommitLock == nil {
			return commitResult{}, ErrNoConditionalWrite
		}
		// No conditional write: the lock makes the commit exclusive (a
		// create-if-absent is a Stat then a Put under it), and its
		// fencing token keeps a holder that lost it from writing.
		key, token, release, err := s.cfg.CommitLock.LockCommit(ctx)
		if err != nil {
			return commitResult{}, fmt.Errorf("commit lock: %w", err)
		}
		defer release()
		fence = &Fence{Key: key, Token: token}
		first = nil
		b = backend.UnderLock(b)
	}
	if first == nil {
		h, err := s.readManifest(ctx, b)
		if err != nil {
			return commitResult{}, err
		}
		first = &h
	}
	var res commitResult
	var base seen
	build := func(ctx context.Context, head index.Head) (index.Proposal, error) {
		m := head.Manifest
		if fence != nil && m.Fences[fence.Key] > fence.Token {
			return index.Proposal{}, fmt.Errorf("%w: %s holds token %d, ours is %d", ErrFenced, fence.Key, m.Fences[fence.Key], fence.Token)
		}
		r, next, err := s.merge(ctx, sh, m, ch, fence)
		if err != nil {
			return index.Proposal{}, err
		}
		res = r
		if r.noop {
			return index.Proposal{}, nil
		}
		if m.Seq >= index.MaxSeq {
			return index.Proposal{}, fmt.Errorf("commit: %w (seq %d)", ErrSeqExhausted, m.Seq)
		}
		base = s.seenNow()
		// The new shards go up before the log entry that names them.
		p := index.Proposal{Next: next, Write: func(ctx context.Context) error { return s.writeShards(ctx, b, sh, r.written) }}
		p.After, p.Announce = pl.after(head), pl.announce(sh)
		return p, nil
	}
	cr, err := index.Commit(ctx, b, *first, build, index.CommitOptions{
		Attempts: s.cfg.CommitAttempts,
		Read:     func(ctx context.Context) (index.Head, error) { return s.readManifest(ctx, b) },
		Now:      s.cfg.Now,

		CheckpointEvery: s.cfg.CheckpointEvery,
	})
	if err != nil {
		return commitResult{}, err
	}
	res.head, res.attempts = cr.Head, cr.Attempts
	if cr.Noop {
		return res, nil
	}
	// The first attempt is built on pred's speculation (pipeline.first), so
	// landing on it means landing on pred.
	res.pipelined = pl.pred != nil && cr.Attempts == 1
	s.cacheManifest(cr.Head) // our own write's version
	if err := s.accept(cr.Head, base); err != nil {
		return commitResult{}, err
	}
	return res, nil
}

// Reasons a change is not committed.
const (
	reasonChangedRemotely = "changed remotely since this cache synced it; pull first"
	reasonCreatedRemotely = "created remotely by another writer; pull first"
	reasonDeletedRemotely = "deleted remotely since this cache synced it; pull first"
	reasonRemovalMoved    = "deleted locally but changed remotely; the remote copy wins: the next pull installs it"
	reasonUnproven        = "its content was found in the store but no committed entry names it any more; push again"
)

// merge applies ch to the shards of m it touches and returns the next
// manifest. An upsert applies only while the entry is still at its base
// (or already holds the new content); a removal only while the entry is at
// its base; a file where a directory is committed (or the reverse) is a
// conflict. Shards past the bucket's bound (index.Manifest.Split) split into
// parts of half the bound; an emptied shard is dropped and its neighbour's
// range widens.
func (s *Syncer) merge(ctx context.Context, sh *shards, m *index.Manifest, ch changeSet, fence *Fence) (commitResult, *index.Manifest, error) {
	res := commitResult{written: map[string]bool{}, skipped: map[string]bool{}, conflicts: map[string]string{}, rebased: map[string]string{}}
	// The split bound is the bucket's: the one m records, or this cache's
	// own when none is recorded yet (the first commit records it).
	next := &index.Manifest{Format: index.FormatVersion, Seq: m.Seq + 1, Fences: maps.Clone(m.Fences), ShardMaxEntries: m.ShardBound(s.cfg.ShardMaxEntries), ShardMaxBytes: m.ByteBound()}
	if fence != nil {
		if next.Fences == nil {
			next.Fences = map[string]uint64{}
		}
		next.Fences[fence.Key] = fence.Token
	}
	base := m
	if len(m.Shards) == 0 {
		base = &index.Manifest{Format: index.FormatVersion, Shards: []index.ShardRef{{Lo: ""}}}
	}
	// Group the changed paths by the shard that holds them now.
	touched := map[int][]string{}
	for p := range ch.upserts {
		i := base.ShardFor(p)
		touched[i] = append(touched[i], p)
	}
	for p := range ch.removals {
		i := base.ShardFor(p)
		touched[i] = append(touched[i], p)
	}
	var need []int
	for i := range touched {
		if base.Shards[i].ID != "" {
			need = append(need, i)
		}
	}
	if err := sh.prefetch(ctx, base, need, s.cfg.Concurrency); err != nil {
		return res, nil, err
	}
	merged := map[int]map[string]index.Entry{}
	prior := map[string]*index.Entry{} // entries the applied upserts replaced
	removed := false
	for i, paths := range touched {
		entries := map[string]index.Entry{}
		if base.Shards[i].ID != "" {
			cur, err := sh.get(ctx, base, i)
			if err != nil {
				return res, nil, err
			}
			entries = maps.Clone(cur)
		}
		for _, p := range paths {
			cur, exists := entries[p]
			if want, ok := ch.removals[p]; ok {
				switch {
				case exists && cur.SHA256 == want:
					delete(entries, p)
					removed = true
				case exists:
					res.skipped[p] = true
				}
				continue
			}
			e, b := ch.upserts[p], ch.bases[p]
			switch {
			case exists && cur.SHA256 == e.SHA256 && cur.Exec == e.Exec:
				continue // committed already (a retried CommitPush, or the same bytes)
			case exists && b == "":
				res.conflicts[p] = reasonCreatedRemotely
				continue
			case exists && cur.SHA256 != b:
				res.conflicts[p] = reasonChangedRemotely
				continue
			case !exists && b != "":
				res.conflicts[p] = reasonDeletedRemotely
				continue
			}
			if q, ok := ch.proofs[p]; ok && !e.Packed() {
				named, err := baseNames(ctx, sh, base, q, e.SHA256)
				if err != nil {
					return res, nil, err
				}
				if !named {
					res.conflicts[p] = reasonUnproven
					continue
				}
			}
			if exists {
				prior[p] = &cur
			} else {
				prior[p] = nil
			}
			e.Seq = next.Seq
			entries[p] = e
		}
		merged[i] = entries
	}
	// A file and a directory of one name cannot both be committed.
	v := &mergedView{ctx: ctx, sh: sh, m: base, merged: merged, sorted: map[int][]string{}, baseSorted: map[int][]string{}}
	for _, p := range slices.Sorted(maps.Keys(prior)) {
		reason, err := v.clash(p)
		if err != nil {
			return res, nil, err
		}
		if reason == "" {
			continue
		}
		res.conflicts[p] = reason
		i := base.ShardFor(p)
		if old := prior[p]; old != nil {
			merged[i][p] = *old
		} else {
			delete(merged[i], p)
		}
		delete(prior, p)
	}
	if len(prior) == 0 && !removed && (fence == nil || m.Fences[fence.Key] == fence.Token) {
		res.noop = true
		return res, m, nil
	}
	from := map[string]int{} // new shard id -> the base shard it was merged onto
	for i, ref := range base.Shards {
		entries, ok := merged[i]
		if !ok {
			next.Shards = append(next.Shards, ref)
			continue
		}
		for _, part := range next.Split(ref.Lo, entries) {
			data, id := index.EncodeFreshShard(part.Entries)
			sh.remember(id, data, part.Entries)
			res.written[id] = true
			if ref.ID != "" {
				res.rebased[id] = base.SyncKey(i)
				from[id] = i
			}
			next.Shards = append(next.Shards, index.ShardRef{Lo: part.Lo, ID: id, Count: len(part.Entries), Bytes: int64(len(data))})
		}
	}
	next.Shards = dropEmpty(next.Shards)
	// A new shard is as reconciled as its base only inside the base's
	// range: one widened over an emptied, dropped neighbour now also holds
	// that neighbour's range, whose removals this cache may never have
	// seen (F15).
	for j, ref := range next.Shards {
		if i, ok := from[ref.ID]; ok && !base.Range(i).Covers(next.Range(j)) {
			delete(res.rebased, ref.ID)
		}
	}
	return res, next, nil
}

// baseNames reports whether the shard of m holding path q has an unpacked
// entry naming the object sha: the proof that a deduplicated object is
// still referenced by the manifest a commit replaces. A commit that lands
// on m superseded it no earlier than the compare-and-swap, so a GC whose
// last read came before saw m (or an earlier manifest still naming it)
// and keeps the object.
func baseNames(ctx context.Context, sh *shards, m *index.Manifest, q, sha string) (bool, error) {
	i := m.ShardFor(q)
	if m.Shards[i].ID == "" {
		return false, nil
	}
	entries, err := sh.get(ctx, m, i)
	if err != nil {
		return false, err
	}
	if e, ok := entries[q]; ok && !e.Packed() && e.SHA256 == sha {
		return true, nil
	}
	for _, e := range entries {
		if !e.Packed() && e.SHA256 == sha {
			return true, nil
		}
	}
	return false, nil
}

// mergedView answers questions about the index as it would be after the
// merge: touched shards as merged, the others as committed.
type mergedView struct {
	ctx    context.Context
	sh     *shards
	m      *index.Manifest
	merged map[int]map[string]index.Entry
	sorted map[int][]string
	// baseSorted are the committed keys of shards, before the merge.
	baseSorted map[int][]string
}

func (v *mergedView) shard(i int) (map[string]index.Entry, []string, error) {
	entries, ok := v.merged[i]
	if !ok {
		if v.m.Shards[i].ID == "" {
			return nil, nil, nil
		}
		var err error
		if entries, err = v.sh.get(v.ctx, v.m, i); err != nil {
			return nil, nil, err
		}
	}
	keys, ok := v.sorted[i]
	if !ok {
		keys = slices.Sorted(maps.Keys(entries))
		v.sorted[i] = keys
	}
	return entries, keys, nil
}

// clash returns why the file p cannot be committed beside the others: a
// parent is a committed file, or p is a committed directory. A parent in
// an untouched shard is read only when nothing proves it a directory: a
// committed entry below it in p's own shard does (the index never holds a
// file and a directory of one name), which keeps a one-file push from
// reading its parents' shards.
func (v *mergedView) clash(p string) (string, error) {
	home := v.m.ShardFor(p)
	for j := strings.IndexByte(p, '/'); j >= 0; j = nextSlash(p, j) {
		parent := p[:j]
		i := v.m.ShardFor(parent)
		if _, touched := v.merged[i]; !touched && i != home {
			proven, err := v.committedBelow(home, parent)
			if err != nil {
				return "", err
			}
			if proven {
				continue
			}
		}
		entries, _, err := v.shard(i)
		if err != nil {
			return "", err
		}
		if _, ok := entries[parent]; ok {
			return fmt.Sprintf(reasonLocalDirRemoteFile, parent+"/", parent), nil
		}
	}
	dir := p + "/"
	for _, i := range v.m.Cover(p) {
		_, keys, err := v.shard(i)
		if err != nil {
			return "", err
		}
		k := sort.SearchStrings(keys, dir)
		if k < len(keys) && strings.HasPrefix(keys[k], dir) {
			return fmt.Sprintf(reasonLocalFileRemoteDir, p, dir, keys[k]), nil
		}
	}
	return "", nil
}

// committedBelow reports whether shard i, as committed, holds an entry
// below the directory dir.
func (v *mergedView) committedBelow(i int, dir string) (bool, error) {
	if v.m.Shards[i].ID == "" {
		return false, nil
	}
	keys, ok := v.baseSorted[i]
	if !ok {
		entries, err := v.sh.get(v.ctx, v.m, i)
		if err != nil {
			return false, err
		}
		keys = slices.Sorted(maps.Keys(entries))
		v.baseSorted[i] = keys
	}
	d := dir + "/"
	k := sort.SearchStrings(keys, d)
	return k < len(keys) && strings.HasPrefix(keys[k], d), nil
}

func nextSlash(p string, j int) int {
	k := strings.IndexByte(p[j+1:], '/')
	if k < 0 {
		return -1
	}
	return j + 1 + k
}

// dropEmpty removes empty shards; the range passes to the previous shard
// (or the next, when the first is empty). An index whose every entry was
// removed keeps one empty shard, so that pulls still read the removals.
func dropEmpty(refs []index.ShardRef) []index.ShardRef {
	out := make([]index.ShardRef, 0, len(refs))
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

// writeShards uploads new shard objects. Each is salted (a name no store
// holds yet), so create-if-absent losing to an existing object can only
// be this commit's own write, retried after a lost acknowledgement.
func (s *Syncer) writeShards(ctx context.Context, b backend.Backend, sh *shards, written map[string]bool) error {
	cond := backend.Cond{IfAbsent: true, ContentNamed: true}
	if caps := b.Capabilities(); !caps.ConditionalPut && !caps.AtomicCreate {
		cond = backend.Cond{ContentNamed: true} // same name, same bytes: overwriting is harmless
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(s.cfg.Concurrency)
	for id := range written {
		g.Go(func() error {
			_, err := backend.PutBytes(ctx, b, index.ShardKey(id), sh.bytes(id), cond)
			if err != nil && !backend.IsPrecondition(err) {
				return fmt.Errorf("write shard %s: %w", id, err)
			}
			return nil
		})
	}
	return g.Wait()
}
