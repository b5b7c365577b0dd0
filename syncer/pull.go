package syncer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/siltsync/silt/backend"
)

// PullOptions select what a pull brings in.
type PullOptions struct {
	// Scope limits the pull to these paths (files or directories,
	// cache-relative). Empty means everything. A scoped pull reads only the
	// index shards that cover its paths and stats only files inside them.
	Scope []string
	// MetadataOnly records the files selected by Config.Lazy without
	// downloading them; HydrateFile or a later full pull fetches them.
	MetadataOnly bool
}

// maxPullRounds bounds how often a pull restarts after finding objects that
// moved on under the manifest it read.
const maxPullRounds = 3

// Pull brings remote changes within the scope into the cache. It keeps local
// edits (reporting conflicts), removes local copies of files a peer deleted
// only when they are unchanged since sync and not marked dirty, and never
// touches pending dirty state.
func (s *Syncer) Pull(ctx context.Context, opts PullOptions) (Stats, error) {
	sc, err := newScope(opts.Scope)
	if err != nil {
		return Stats{Op: "pull"}, err
	}
	if err := s.lock(); err != nil {
		return Stats{Op: "pull"}, err
	}
	defer s.mu.Unlock()
	o := s.begin("pull")
	for round := 1; ; round++ {
		again, err := s.pullOnce(ctx, o, sc, opts)
		if err != nil || !again {
			return o.finish(), err
		}
		if round == maxPullRounds {
			return o.finish(), fmt.Errorf("pull: the index kept moving under %d rounds", round)
		}
	}
}

type pullKind int

const (
	pullDownload pullKind = iota
	pullRecord            // the local file already holds the entry: record it
	pullLazy              // record without downloading
	pullRemove            // a peer deleted it and the local copy is unchanged
	pullForget            // drop the record only
)

type pullAction struct {
	kind  pullKind
	path  string
	entry Entry
	local localFile
	shard int
}

// pullPlan is what one round decided, per shard.
type pullPlan struct {
	actions []pullAction
	dirty   map[int]bool // shards that cannot be recorded as reconciled
}

func (s *Syncer) pullOnce(ctx context.Context, o *op, sc scope, opts PullOptions) (again bool, err error) {
	b := o.backend()
	snap, err := s.readManifest(ctx, b)
	if err != nil {
		return false, err
	}
	m := snap.m
	o.stats.Seq = m.Seq
	o.mark("manifest")

	var need []int
	var d dirtySet
	_ = s.st.view(func(t stx) error {
		for _, i := range m.cover(sc) {
			if !t.synced(syncKey(m, i)) {
				need = append(need, i)
			}
		}
		d = t.dirty()
		return nil
	})
	sh := s.newShards(b)
	ids := make([]string, len(need))
	for k, i := range need {
		ids[k] = m.Shards[i].ID
	}
	if err := sh.prefetch(ctx, ids, s.cfg.Concurrency); err != nil {
		return false, err
	}
	o.mark("shards")

	plan := pullPlan{dirty: map[int]bool{}}
	for _, i := range need {
		if err := s.planShard(ctx, o, m, i, sh, sc, d, opts, &plan); err != nil {
			return false, err
		}
	}
	o.mark("walk")

	done, stale, execErr := s.execPull(ctx, o, plan)
	o.mark("transfer")

	err = s.st.update(func(t stx) error {
		if err := t.setMetaUint(metaSeenSeq, m.Seq); err != nil {
			return err
		}
		if err := t.saveManifest(s.mcache); err != nil {
			return err
		}
		if err := applyPull(t, done); err != nil {
			return err
		}
		if err := sh.save(t); err != nil {
			return err
		}
		if execErr != nil || len(stale) > 0 {
			return nil // a shard with a failed action is not reconciled
		}
		for _, i := range need {
			if !plan.dirty[i] && m.within(i, sc) {
				if err := t.setSynced(syncKey(m, i)); err != nil {
					return err
				}
			}
		}
		if sc.all() {
			keepIDs, keepSynced := map[string]bool{}, map[string]bool{}
			for i, ref := range m.Shards {
				keepIDs[ref.ID] = true
				keepSynced[syncKey(m, i)] = true
			}
			return t.forgetShards(keepIDs, keepSynced)
		}
		return nil
	})
	if execErr != nil {
		return false, execErr
	}
	if err != nil {
		return false, fmt.Errorf("pull: save local state: %w", err)
	}
	if len(stale) == 0 {
		return false, nil
	}
	// Objects moved on under the manifest we read: read it again, never
	// install bytes the index does not vouch for.
	now, err := s.readManifest(ctx, b)
	if err != nil {
		return false, err
	}
	if now.version != snap.version {
		return true, nil
	}
	for _, p := range stale {
		o.conflict(p, "object does not match the committed index (an interrupted write?)")
	}
	return false, nil
}

// planShard decides what to do for every entry and local record of shard i
// inside the scope.
func (s *Syncer) planShard(ctx context.Context, o *op, m *Manifest, i int, sh *shards, sc scope, d dirtySet, opts PullOptions, plan *pullPlan) error {
	entries, err := sh.get(ctx, m.Shards[i].ID)
	if err != nil {
		return err
	}
	rng := keyRange{m.Shards[i].Lo, m.hi(i)}
	recs := map[string]fileRecord{}
	err = s.st.view(func(t stx) error {
		return t.filesIn(rng, func(p string, r fileRecord) error {
			if sc.contains(p) {
				recs[p] = r
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	for _, p := range slices.Sorted(maps.Keys(entries)) {
		if !sc.contains(p) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rec, hasRec := recs[p]
		a, reason := s.decideEntry(o, p, entries[p], rec, hasRec, d, opts)
		a.shard = i
		switch {
		case reason != "":
			o.conflict(p, reason)
			plan.dirty[i] = true
		case a.kind == pullLazy:
			plan.dirty[i] = true // a later full pull must hydrate it
			plan.actions = append(plan.actions, a)
		case a.kind >= 0:
			plan.actions = append(plan.actions, a)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(recs)) {
		if _, ok := entries[p]; ok {
			continue
		}
		a, reason := s.decideRemoved(o, p, recs[p], d)
		a.shard = i
		if reason != "" {
			o.conflict(p, reason)
			plan.dirty[i] = true
		}
		plan.actions = append(plan.actions, a)
	}
	return nil
}

// noAction marks a decision that needs nothing done.
const noAction pullKind = -1

// decideEntry compares one committed entry with the local copy. A non-empty
// reason is a conflict: the local copy is kept as it is.
func (s *Syncer) decideEntry(o *op, p string, e Entry, rec fileRecord, hasRec bool, d dirtySet, opts PullOptions) (pullAction, string) {
	a := pullAction{kind: noAction, path: p, entry: e}
	lf, err := s.local.stat(p)
	o.add(func(st *Stats) { st.Local.Examined++ })
	if err != nil {
		return a, "local path unusable: " + err.Error()
	}
	a.local = lf
	synced := hasRec && rec.Hydrated
	if lf.exists {
		sum, err := s.localSHA(p, lf, rec, synced)
		if err != nil {
			return a, "cannot read local file: " + err.Error()
		}
		switch {
		case sum == e.SHA256:
			o.add(func(st *Stats) { st.Files.Unchanged++ })
			if !synced || rec.SHA256 != sum || rec.Version != e.Version || rec.MtimeNs != lf.mtimeNs {
				a.kind = pullRecord
			}
			return a, ""
		case d.marked(p):
			return a, "marked dirty locally and changed remotely"
		case synced && sum == rec.SHA256:
			a.kind = pullDownload
			return a, ""
		case synced:
			return a, "changed locally and remotely"
		default:
			return a, "local file differs from the remote and was never synced"
		}
	}
	switch {
	case synced && (d.marked(p) || d.overflow):
		if rec.SHA256 != e.SHA256 {
			return a, "deleted locally and changed remotely"
		}
		return a, "" // a deletion waiting for push
	case opts.MetadataOnly && s.cfg.Lazy(p):
		a.kind = pullLazy // even an up-to-date lazy record keeps its shard unreconciled
		return a, ""
	}
	a.kind = pullDownload
	return a, ""
}

// decideRemoved handles a local record whose entry the shard no longer has:
// a committed removal, the only evidence a pull acts on.
func (s *Syncer) decideRemoved(o *op, p string, rec fileRecord, d dirtySet) (pullAction, string) {
	a := pullAction{kind: pullForget, path: p}
	if !rec.Hydrated {
		return a, ""
	}
	lf, err := s.local.stat(p)
	o.add(func(st *Stats) { st.Local.Examined++ })
	if err != nil || !lf.exists {
		return a, ""
	}
	sum, err := s.localSHA(p, lf, rec, true)
	switch {
	case err != nil:
		return a, "deleted remotely; cannot read local file: " + err.Error()
	case sum != rec.SHA256:
		return a, "deleted remotely and changed locally"
	case d.marked(p):
		return a, "deleted remotely and marked dirty locally"
	}
	a.kind = pullRemove
	return a, ""
}

// localSHA returns the content hash of the local file, trusting the record
// only when size and mtime still match what this machine verified.
func (s *Syncer) localSHA(p string, lf localFile, rec fileRecord, synced bool) (string, error) {
	if synced && rec.unchanged(lf) {
		return rec.SHA256, nil
	}
	sum, _, err := s.local.hash(p)
	return sum, err
}

// pullDone is an action carried out, with the record to store.
type pullDone struct {
	path   string
	record *fileRecord // nil: delete the record
}

// execPull carries out the plan: downloads in parallel, each conditional on
// the entry's version and checked against its sha256. It returns what was
// done (even on error, so the state can record it), and the paths whose
// objects no longer match the index.
func (s *Syncer) execPull(ctx context.Context, o *op, plan pullPlan) ([]pullDone, []string, error) {
	var done []pullDone
	var stale []string
	var mu = &o.mu
	record := func(dn pullDone) {
		mu.Lock()
		done = append(done, dn)
		mu.Unlock()
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.cfg.Concurrency)
	total, moved := 0, 0
	for _, a := range plan.actions {
		if a.kind == pullDownload {
			total++
		}
	}
	for _, a := range plan.actions {
		switch a.kind {
		case pullRecord:
			record(pullDone{a.path, &fileRecord{Size: a.local.size, SHA256: a.entry.SHA256, MtimeNs: a.local.mtimeNs, Version: a.entry.Version, Hydrated: true, VerifiedNs: now()}})
		case pullLazy:
			record(pullDone{a.path, &fileRecord{Size: a.entry.Size, SHA256: a.entry.SHA256, Version: a.entry.Version}})
		case pullForget:
			record(pullDone{a.path, nil})
		case pullRemove:
			if err := s.local.remove(a.path); err != nil {
				o.conflict(a.path, "deleted remotely; cannot remove local copy: "+err.Error())
				continue
			}
			o.add(func(st *Stats) { st.Files.Removed++ })
			record(pullDone{a.path, nil})
		case pullDownload:
			g.Go(func() error {
				lf, err := s.download(gctx, o.backend(), a.path, a.entry)
				switch {
				case errors.Is(err, errChecksum) || backend.IsPrecondition(err) || backend.IsNotExist(err):
					mu.Lock()
					stale = append(stale, a.path)
					mu.Unlock()
					return nil
				case err != nil:
					return fmt.Errorf("pull %s: %w", a.path, err)
				}
				o.add(func(st *Stats) { st.Files.Downloaded++; st.Bytes.Down += lf.size })
				o.progress(a.path, lf.size, &moved, total)
				record(pullDone{a.path, &fileRecord{Size: lf.size, SHA256: a.entry.SHA256, MtimeNs: lf.mtimeNs, Version: a.entry.Version, Hydrated: true, VerifiedNs: now()}})
				return nil
			})
		}
	}
	err := g.Wait()
	return done, stale, err
}

// download fetches exactly the committed version of p into the cache.
func (s *Syncer) download(ctx context.Context, b backend.Backend, p string, e Entry) (localFile, error) {
	rc, _, err := b.Get(ctx, p, backend.GetOptions{IfMatch: e.Version})
	if err != nil {
		return localFile{}, err
	}
	defer rc.Close()
	return s.local.install(p, rc, e.SHA256)
}

func applyPull(t stx, done []pullDone) error {
	// Sorted: bbolt appends cheaply and splits pages dearly.
	slices.SortFunc(done, func(a, b pullDone) int { return strings.Compare(a.path, b.path) })
	for _, dn := range done {
		var err error
		if dn.record == nil {
			err = t.deleteFile(dn.path)
		} else {
			err = t.putFile(dn.path, *dn.record)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
