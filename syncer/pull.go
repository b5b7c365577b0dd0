package syncer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
)

// PullOptions select what a pull brings in.
type PullOptions struct {
	// Scope limits the pull to these paths (files or directories,
	// cache-relative). Empty means everything. A scoped pull reads only the
	// index shards that cover its paths and stats only files inside them.
	Scope []string `json:"scope,omitempty"`
	// MetadataOnly records the files selected by Config.Lazy without
	// downloading them; HydrateFile or a later full pull fetches them.
	MetadataOnly bool `json:"metadataOnly,omitempty"`
	// Lazy, when set, selects by these globs (LazyGlobs' syntax) the files
	// this MetadataOnly pull records without their bytes, instead of
	// Config.Lazy: a caller that does not own the Syncer's Config (a
	// client of silt serve) chooses them per pull.
	Lazy []string `json:"lazy,omitempty"`
	// KeepLazy leaves a file this cache recorded without its bytes (and
	// still absent) lazy, instead of downloading it: a sync after a
	// metadata-only pull stays metadata-only.
	KeepLazy bool `json:"keepLazy,omitempty"`
	// Exclude and Include add gitignore-syntax rules to Config's for
	// this pull (see Config.Exclude).
	Exclude []string `json:"exclude,omitempty"`
	Include []string `json:"include,omitempty"`
	// Reanchor takes the manifest as it is now as this cache's highest
	// seen, instead of refusing one older than it with ErrRollback: the
	// explicit way out for a cache that pulled a mistaken or hostile seq
	// (or a manifest the bucket's owner has since undone). Stats.Reanchor
	// names both seqs. The pull then reconciles against that manifest as
	// any pull does: local edits stay, conflicts are reported.
	Reanchor bool `json:"reanchor,omitempty"`

	lazy func(string) bool // Lazy compiled, or Config.Lazy
}

// Pull brings remote changes within the scope into the cache. It keeps local
// edits (reporting conflicts), removes local copies of files a peer deleted
// only when they are unchanged since sync and not marked dirty, and never
// touches pending dirty state.
func (s *Syncer) Pull(ctx context.Context, opts PullOptions) (Stats, error) {
	sc, err := newScope(opts.Scope)
	if err != nil {
		return Stats{Op: "pull"}, err
	}
	opts.lazy = s.cfg.Lazy
	if len(opts.Lazy) > 0 {
		if opts.lazy, err = LazyGlobs(opts.Lazy...); err != nil {
			return Stats{Op: "pull"}, fmt.Errorf("%w: PullOptions.Lazy: %v", ErrInvalidOption, err)
		}
	}
	release, err := s.enter(ctx, sc.lock())
	if err != nil {
		return Stats{Op: "pull"}, err
	}
	defer release()
	o := s.begin(ctx, "pull")
	o.scope = &sc
	if o.ex, err = s.rules(opts.Exclude, opts.Include); err != nil {
		return o.end(err)
	}
	err = s.pullOnce(ctx, o, sc, opts)
	s.notePull(sc, err)
	return o.end(err)
}

// notePull keeps Status.PullIncomplete: set by a pull that failed (of
// any scope), cleared only by a whole pull that succeeded, the one
// operation that makes the cache hold the snapshot again.
func (s *Syncer) notePull(sc scope, err error) {
	if err == nil && sc.paths != nil {
		return
	}
	failed := uint64(0)
	if err != nil {
		failed = 1
	}
	// Read first: an unchanged flag costs no write transaction (no fsync)
	// on the pull that finds nothing to do.
	var cur uint64
	_ = s.st.view(func(t stx) error { cur = t.metaUint(metaPullFailed); return nil })
	if cur == failed {
		return
	}
	_ = s.st.update(func(t stx) error { return t.setMetaUint(metaPullFailed, failed) })
}

type pullKind int

const (
	pullDownload pullKind = iota
	pullRecord            // the local file already holds the entry: record it
	pullLazy              // record without downloading
	pullRemove            // a peer deleted it and the local copy is unchanged
	pullForget            // drop the record only
	pullChmod             // the local file holds the entry's bytes: set its executable bit
	pullBlocked           // the other kind is in the way locally: see pullPlan.blocked
)

type pullAction struct {
	kind  pullKind
	path  string
	entry index.Entry
	local localFile
	sum   string // local's content hash, when the plan knows it
	shard int
	// won is set when the remote edit wins over a local deletion: it is
	// installed and reported as settled, not as a conflict.
	won bool
	// proved is set when the operation's clock stamp proves the hash of
	// local (clockStamp): its record is trusted by stat from now on.
	proved bool
}

// want is what installing a's download may replace: the file the plan saw.
func (a pullAction) want() want { return want{local: a.local, sum: a.sum} }

// pullPlan is what one round decided, per shard.
type pullPlan struct {
	actions []pullAction
	dirty   map[int]bool // shards that cannot be recorded as reconciled
	sc      scope        // what the pull may touch
	// clash maps each file a damaged index also holds as a directory to
	// an entry below it (see fileDirClashes).
	clash map[string]string
	// blocked are downloads a local file or directory of the other kind
	// is in the way of (a file where its directory should be). They are
	// tried once this pull's removals ran, since a peer that replaced a
	// file by a directory (or the reverse) removed what is in the way;
	// what still blocks is a conflict naming both sides.
	blocked []pullAction
}

func (s *Syncer) pullOnce(ctx context.Context, o *op, sc scope, opts PullOptions) error {
	b := o.backend()
	read := s.readManifest
	if opts.Reanchor {
		read = func(ctx context.Context, b backend.Backend) (index.Head, error) { return s.reanchor(ctx, o, b) }
	}
	head, err := read(ctx, b)
	if err != nil {
		return err
	}
	m := head.Manifest
	o.stats.Seq = m.Seq
	o.mark("manifest")

	var need []int
	var d dirtySet
	_ = s.st.view(func(t stx) error {
		for _, i := range sc.cover(m) {
			if !t.synced(m.SyncKey(i)) {
				need = append(need, i)
			}
		}
		d = t.dirty()
		return nil
	})
	sh := s.newShards(b)
	if err := sh.prefetch(ctx, m, need, s.cfg.Concurrency); err != nil {
		return err
	}
	o.mark("shards")

	plan := pullPlan{dirty: map[int]bool{}, sc: sc, clash: fileDirClashes(m, need, sh, sc)}
	for _, i := range need {
		if err := s.planShard(ctx, o, m, i, sh, sc, d, opts, &plan); err != nil {
			return err
		}
	}
	o.mark("walk")

	done, landed, execErr := s.execPull(ctx, o, plan)
	o.mark("transfer")

	err = s.st.update(func(t stx) error {
		if err := s.saveRemote(t); err != nil {
			return err
		}
		if err := t.putRecords(done); err != nil {
			return err
		}
		// The downloads are durable and recorded: their intents are void.
		if err := t.dropIntents(landed); err != nil {
			return err
		}
		// Claims on shards the manifest no longer has are void: a later
		// commit can bring such a shard back by content, after this pull
		// changed records in its range (F13; pushes: F12).
		if err := t.keepSyncedOnly(m); err != nil {
			return err
		}
		if err := sh.save(t); err != nil {
			return err
		}
		if execErr != nil {
			return nil // a shard with a failed action is not reconciled
		}
		for _, i := range need {
			if !plan.dirty[i] && sc.within(m, i) {
				if err := t.setSynced(m.SyncKey(i)); err != nil {
					return err
				}
			}
		}
		if sc.all() {
			keepIDs, keepSynced := map[string]bool{}, map[string]bool{}
			for i, ref := range m.Shards {
				keepIDs[ref.ID] = true
				keepSynced[m.SyncKey(i)] = true
			}
			return t.forgetShards(keepIDs, keepSynced)
		}
		return nil
	})
	if execErr != nil {
		return execErr
	}
	if err != nil {
		return fmt.Errorf("pull: save local state: %w", err)
	}
	return nil
}

// planShard decides what to do for every entry and local record of shard i
// inside the scope.
func (s *Syncer) planShard(ctx context.Context, o *op, m *index.Manifest, i int, sh *shards, sc scope, d dirtySet, opts PullOptions, plan *pullPlan) error {
	entries, err := sh.get(ctx, m, i)
	if err != nil {
		return err
	}
	rng := m.Range(i)
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
	excluded := 0
	defer func() { o.add(func(st *Stats) { st.Files.Excluded += excluded }) }()
	for _, p := range slices.Sorted(maps.Keys(entries)) {
		if !sc.contains(p) {
			continue
		}
		if o.ex.Excluded(p) {
			// Never written or recorded here; the shard stays unreconciled
			// so a pull without the rule brings the file.
			excluded++
			plan.dirty[i] = true
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if below, ok := plan.clash[p]; ok {
			o.conflict(p, fmt.Sprintf(reasonFileDirClash, below))
			plan.dirty[i] = true
			continue
		}
		rec, hasRec := recs[p]
		a, reason := s.decideEntry(o, p, entries[p], rec, hasRec, d, opts)
		a.shard = i
		switch {
		case reason != "":
			o.conflict(p, reason)
			plan.dirty[i] = true
		case a.kind == pullBlocked:
			plan.blocked = append(plan.blocked, a)
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
		if o.ex.Excluded(p) {
			plan.dirty[i] = true // its local copy and record stay
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
func (s *Syncer) decideEntry(o *op, p string, e index.Entry, rec fileRecord, hasRec bool, d dirtySet, opts PullOptions) (pullAction, string) {
	a := pullAction{kind: noAction, path: p, entry: e}
	lf, err := s.local.stat(p)
	o.examined(func() string { return p })
	if err != nil {
		if s.local.clashReason(p) != "" {
			a.kind = pullBlocked
			return a, ""
		}
		return a, "local path unusable: " + err.Error()
	}
	a.local = lf
	synced := hasRec && rec.Hydrated
	if lf.exists {
		sum, proved, err := s.localSHA(o, p, lf, rec, synced)
		if err != nil {
			return a, "cannot read local file: " + err.Error()
		}
		switch {
		case sum == e.SHA256:
			// The bytes agree; the executable bit follows the entry unless
			// the local one changed since this cache synced (a pending push).
			if lf.execDiffers(e.Exec) && !(synced && lf.execDiffers(rec.Exec)) {
				a.kind = pullChmod
				return a, ""
			}
			o.add(func(st *Stats) { st.Files.Unchanged++ })
			// A proved hash is recorded too, so the next operation trusts
			// the stat instead of hashing the file again.
			if !synced || rec.SHA256 != sum || rec.MtimeNs != lf.mtimeNs || rec.Exec != e.Exec || proved {
				a.kind, a.proved = pullRecord, proved
			}
			return a, ""
		case synced && rec.SHA256 == e.SHA256:
			return a, "" // edited locally, unchanged remotely: a pending push
		case d.marked(p):
			return a, "marked dirty locally and changed remotely"
		case synced && sum == rec.SHA256:
			a.kind = pullDownload
			a.sum = sum
			return a, ""
		case synced:
			return a, "changed locally and remotely"
		default:
			return a, "local file differs from the remote and was never synced"
		}
	}
	switch {
	case synced && rec.SHA256 == e.SHA256:
		// Deleted locally since this cache synced it, unchanged remotely:
		// a pending local change, not something to restore.
		return a, ""
	case synced:
		// A deletion never wins over an edit it did not see: the remote
		// copy is installed, whatever KeepLazy says (the file was never
		// asked to be lazy), and reported once as settled.
		a.kind, a.won = pullDownload, true
		return a, ""
	case opts.KeepLazy && hasRec && !rec.Hydrated, opts.MetadataOnly && opts.lazy != nil && opts.lazy(p):
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
	lf, err := s.local.stat(p)
	o.examined(func() string { return p })
	if err != nil || !lf.exists {
		return a, ""
	}
	// A lazy record with a file in its place is judged by content like a
	// hydrated one: forgetting the record would let the next push
	// re-create what the peer deleted.
	sum, _, err := s.localSHA(o, p, lf, rec, rec.Hydrated)
	reason := ""
	switch {
	case err != nil:
		reason = "deleted remotely; cannot read local file: " + err.Error()
	case sum != rec.SHA256:
		reason = "deleted remotely and changed locally"
	case d.marked(p):
		reason = "deleted remotely and marked dirty locally"
	default:
		a.kind, a.local, a.sum = pullRemove, lf, sum
		return a, ""
	}
	// The local copy stays, and so does its record: it is the evidence that
	// this cache synced the version the peer deleted, so a later push of
	// the copy is a conflict, never a silent re-creation.
	a.kind = noAction
	return a, reason
}

// localSHA returns the content hash of the local file, trusting the record
// only when size and mtime still match what this machine verified, and
// whether the operation's clock stamp proves a hash made of the file the
// stat lf saw (clockStamp).
func (s *Syncer) localSHA(o *op, p string, lf localFile, rec fileRecord, synced bool) (sum string, proved bool, err error) {
	if synced && rec.unchanged(lf) {
		return rec.SHA256, false, nil
	}
	sum, hashed, proved, err := s.local.hash(p, o.clock.get(&s.local))
	return sum, proved && hashed.same(lf), err
}

// pullDone is an action carried out, with the record to store.
type pullDone struct {
	path   string
	record *fileRecord // nil: delete the record
}

// execPull carries out the plan: downloads in parallel, each of the object
// the entry names, checked against its sha256; then local removals and the
// pruning of emptied directories, once no download can still be renaming
// into them. It returns what was done (even on error, so the state can
// record it). A corrupt or missing object is never installed: it is
// reported with its path (an *index.ObjectError), and the other downloads
// go on.
//
// The downloads are one installBatch: their install intents are written
// before the first of them, and they are made durable together at the
// end. landed lists the paths whose intents the state transaction
// recording done must delete (none when the batch could not be made
// durable: its downloads are then left out of done, for the next Open to
// verify).
func (s *Syncer) execPull(ctx context.Context, o *op, plan pullPlan) (done []pullDone, landed []string, err error) {
	var bad []error
	late := map[int]bool{} // shards with a path edited after the plan
	var mu = &o.mu
	record := func(dn pullDone) {
		mu.Lock()
		done = append(done, dn)
		mu.Unlock()
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.cfg.Concurrency)
	total, moved := 0, 0
	var bytes int64
	for _, a := range plan.actions {
		if a.kind == pullDownload {
			total++
			bytes += a.entry.Size
		}
	}
	o.planned(bytes)
	bt, landed, err := s.beginBatch(plan)
	if err != nil {
		return nil, nil, err
	}
	defer bt.close()
	fetched := map[string]bool{} // paths installed by a download
	// settle records the outcome of one download: a corrupt or missing
	// object is reported and the others go on.
	settle := func(a pullAction, in installed, err error) error {
		var oe *index.ObjectError
		var pe *index.PathError
		var le *LocalEditError
		switch {
		case errors.As(err, &oe):
			mu.Lock()
			bad = append(bad, err)
			mu.Unlock()
			return nil
		case errors.As(err, &pe):
			// The local tree cannot take the file (a file where its
			// directory should be, a symlinked parent): the local copy
			// stays, and so does the shard's claim to be unreconciled.
			reason := "local path unusable: " + pe.Reason
			if r := s.local.clashReason(a.path); r != "" {
				reason = r
			}
			o.conflict(a.path, reason)
			mu.Lock()
			plan.dirty[a.shard] = true
			mu.Unlock()
			return nil
		case errors.As(err, &le):
			// Edited after the plan: left in place, its shard not
			// reconciled, so the next pull judges it again.
			o.conflict(a.path, le.Reason)
			mu.Lock()
			late[a.shard] = true
			mu.Unlock()
			return nil
		case err != nil:
			return fmt.Errorf("pull %s: %w", a.path, err)
		}
		lf := in.lf
		o.add(func(st *Stats) { st.Files.Downloaded++; st.Bytes.Down += lf.size })
		reason := ""
		if a.won {
			reason = reasonRemoteWins
		}
		o.change(Change{Path: a.path, Action: ActionDownload, Bytes: lf.size, Reason: reason})
		if in.kept != "" {
			o.conflictCopy(a.path, reasonEditKept, in.kept)
		}
		o.progress(a.path, lf.size, &moved, total)
		record(pullDone{a.path, &fileRecord{Size: lf.size, SHA256: a.entry.SHA256, MtimeNs: lf.mtimeNs, Hydrated: true, VerifiedNs: now(), Exec: a.entry.Exec}})
		mu.Lock()
		fetched[a.path] = true
		mu.Unlock()
		return nil
	}
	var removes, packed []pullAction
	for _, a := range plan.actions {
		switch a.kind {
		case pullRecord:
			record(pullDone{path: a.path, record: &fileRecord{Size: a.local.size, SHA256: a.entry.SHA256, MtimeNs: a.local.mtimeNs, Hydrated: true, VerifiedNs: verifiedNs(a.local, a.proved), Exec: a.entry.Exec}})
		case pullChmod:
			lf, err := s.local.chmod(a.path, a.entry.Exec)
			if err != nil {
				o.conflict(a.path, "cannot set the executable bit: "+err.Error())
				continue
			}
			o.add(func(st *Stats) { st.Files.Downloaded++ })
			o.change(Change{Path: a.path, Action: ActionDownload, Reason: modeReason(a.entry.Exec)})
			record(pullDone{path: a.path, record: &fileRecord{Size: lf.size, SHA256: a.entry.SHA256, MtimeNs: lf.mtimeNs, Hydrated: true, VerifiedNs: now(), Exec: a.entry.Exec}})
		case pullLazy:
			record(pullDone{path: a.path, record: &fileRecord{Size: a.entry.Size, SHA256: a.entry.SHA256, Pack: a.entry.Pack, Off: a.entry.Off, Exec: a.entry.Exec, Z: a.entry.Z, ZN: a.entry.ZN, In: a.entry.In}})
			o.change(Change{Path: a.path, Action: ActionLazy, Bytes: a.entry.Size})
		case pullForget:
			record(pullDone{path: a.path})
		case pullRemove:
			removes = append(removes, a)
		case pullDownload:
			if a.entry.Packed() {
				packed = append(packed, a)
				continue
			}
			g.Go(func() error {
				in, err := s.downloadIn(gctx, o.backend(), bt, a.path, a.entry, a.want())
				return settle(a, in, err)
			})
		}
	}
	for _, run := range packRuns(packed) {
		g.Go(func() error { return s.downloadRun(gctx, o.backend(), bt, run, settle) })
	}
	err = g.Wait()
	for _, a := range removes {
		kept, rerr := s.local.removeAs(a.path, a.want())
		var le *LocalEditError
		switch {
		case errors.As(rerr, &le):
			o.conflict(a.path, le.Reason)
			plan.dirty[a.shard] = true
			continue
		case rerr != nil:
			o.conflict(a.path, "deleted remotely; cannot remove local copy: "+rerr.Error())
			continue
		}
		o.add(func(st *Stats) { st.Files.Removed++ })
		o.change(Change{Path: a.path, Action: ActionRemove})
		if kept != "" {
			o.conflictCopy(a.path, reasonRemovedEditKept, kept)
		}
		record(pullDone{path: a.path})
	}
	for _, a := range removes {
		s.local.pruneDirs(a.path, plan.sc.contains)
	}
	clashed := map[string]bool{}
	for _, a := range plan.blocked {
		if err != nil {
			break
		}
		if root, reason := s.local.clashAt(a.path); reason != "" {
			// One conflict per local path in the way, however many
			// remote files it blocks.
			if !clashed[root] {
				clashed[root] = true
				o.conflict(root, reason)
			}
			plan.dirty[a.shard] = true
			continue
		}
		a.kind = pullDownload
		in, derr := s.downloadIn(ctx, o.backend(), bt, a.path, a.entry, a.want())
		err = settle(a, in, derr)
	}
	if len(landed) > 0 {
		if serr := s.endBatch(); serr != nil {
			// Not durable: record none of the downloads, and keep their
			// intents for the next Open to verify.
			done = slices.DeleteFunc(done, func(dn pullDone) bool { return fetched[dn.path] })
			landed = nil
			err = errors.Join(err, fmt.Errorf("pull: make the downloads durable: %w", serr))
		}
	}
	if err == nil && len(bad) > 0 {
		err = errors.Join(bad...)
	}
	for i := range late {
		plan.dirty[i] = true
	}
	return done, landed, err
}

// download fetches the bytes of entry e (its object, or one ranged read of
// its pack) into the cache at p, replacing what w allows, durably.
func (s *Syncer) download(ctx context.Context, b backend.Backend, p string, e index.Entry, w want) (installed, error) {
	return s.downloadIn(ctx, b, nil, p, e, w)
}

// downloadIn is download as part of batch bt (nil: alone).
func (s *Syncer) downloadIn(ctx context.Context, b backend.Backend, bt *installBatch, p string, e index.Entry, w want) (installed, error) {
	rc, err := index.OpenRaw(ctx, b, p, e)
	if err != nil {
		return installed{}, err
	}
	defer rc.Close()
	return s.local.installIn(bt, p, rc, e, w)
}
