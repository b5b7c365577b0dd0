package syncer

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/siltsync/silt/index"
)

// ErrTooManyDeletes is returned when a push would delete more remote files
// than PushOptions.MaxDelete allows; nothing was changed.
var ErrTooManyDeletes = errors.New("push: too many deletions")

// PushOptions modify a push.
type PushOptions struct {
	// MaxDelete, when positive, refuses a push that would delete more
	// remote files than this, before anything is uploaded.
	MaxDelete int `json:"maxDelete,omitempty"`
	// DryRun plans the push against the remote index and reports what it
	// would do, uploading and committing nothing.
	DryRun bool `json:"dryRun,omitempty"`
	// Fence, when set, is the lock this commit is made under (see Fence).
	Fence *Fence `json:"fence,omitempty"`
	// All walks the whole cache, as if every path were marked: a file this
	// cache synced and that is now absent is deleted remotely. It is the
	// command line's push; hosts that mark their writes do not need it.
	All bool `json:"all,omitempty"`
	// Paths, when set, pushes only these paths (files or directories, as
	// if each were marked), whatever else is marked; marks outside them
	// stay for a later push. A listed path that is absent is a deletion.
	Paths []string `json:"paths,omitempty"`
	// Exclude and Include add gitignore-syntax rules to Config's for
	// this push (see Config.Exclude).
	Exclude []string `json:"exclude,omitempty"`
	Include []string `json:"include,omitempty"`
}

// Push uploads what changed within the dirty set and commits it. With
// nothing dirty it sends no request at all. Bytes the store already holds
// (under their content hash) are not uploaded again.
//
// The push runs in phases, one file each, entered once from this file in
// this order: plan.go (walk the dirty part of the cache and hash),
// check.go (check against the committed index), upload.go (upload, with
// pack.go packing small files), groupcommit.go (batch the commits of
// concurrent pushes, each merged and swapped in commit.go), finish.go
// (record the outcome in the local state, state.go).
func (s *Syncer) Push(ctx context.Context, opts PushOptions) (Stats, error) {
	o, pm, release, err := s.preparePushed(ctx, "push", opts)
	if release == nil {
		return Stats{Op: "push"}, err
	}
	defer release()
	if err != nil || opts.DryRun {
		return o.end(err)
	}
	err = s.commitPrepared(ctx, o, pm, opts.Fence)
	return o.end(err)
}

// prepare runs a push's phases up to its commit, each once and in this
// order: plan (plan.go), the scope narrowing (narrowPush), the check
// against the committed index (check.go) and the upload (upload.go, which
// packs small files in pack.go). It commits nothing.
func (s *Syncer) prepare(ctx context.Context, o *op, opts PushOptions) (*prepared, error) {
	o.dryRun = opts.DryRun
	lp, err := s.planLocal(ctx, o, opts)
	if err != nil {
		return nil, err
	}
	if err := s.narrowPush(o, &lp, opts.DryRun); err != nil {
		return nil, err
	}
	o.mark("walk")
	pm, ts, err := s.checkIndex(ctx, o, lp, opts)
	if err != nil || ts == nil {
		return pm, err
	}
	if err := s.uploadAll(ctx, o, pm, ts.sends, ts.modes); err != nil {
		return nil, err
	}
	o.mark("upload")
	return pm, nil
}

// commitPrepared runs the last phases of a prepared push: the commit
// (groupcommit.go, which merges and swaps in commit.go), then the record
// of its outcome (finish.go). Removals delete no data object: GC does,
// once no snapshot younger than its grace period references it.
func (s *Syncer) commitPrepared(ctx context.Context, o *op, pm *prepared, fence *Fence) error {
	var res *commitResult // nil: nothing to commit
	if !pm.empty() {
		ch := changeSet{upserts: pm.upserts, bases: pm.bases, removals: pm.removals, proofs: pm.proofs}
		r, err := s.commitGrouped(ctx, o, pm.sh, ch, pm.head, fence)
		if err != nil {
			return err
		}
		o.stats.Seq = r.head.Manifest.Seq
		o.stats.Commit = &CommitStats{Attempts: r.attempts, Batch: r.batch, Pipelined: r.pipelined}
		o.mark("commit")
		res = &r
	}
	return s.finishPush(o, pm, res)
}

// errScopeGrew is returned by planLocal when the dirty set holds paths
// outside the scope lock the push took: a mark arrived in between.
var errScopeGrew = errors.New("push: dirty set grew past the scope lock")

// preparePushed takes the push's scope lock (its dirty set, opts.Paths, or
// everything) and prepares the push under it. A release of nil means no
// operation began.
func (s *Syncer) preparePushed(ctx context.Context, name string, opts PushOptions) (*op, *prepared, func(), error) {
	for attempt := 0; ; attempt++ {
		sc, err := s.pushScope(opts, attempt >= 2)
		if err != nil {
			return nil, nil, nil, err
		}
		release, narrow, err := s.enterNarrowable(ctx, sc)
		if err != nil {
			return nil, nil, nil, err
		}
		o := s.begin(ctx, name)
		o.held, o.narrow = sc, narrow
		pm, err := s.prepare(ctx, o, opts)
		if errors.Is(err, errScopeGrew) {
			release()
			continue
		}
		return o, pm, release, err
	}
}

// pushScope is what a push will touch: opts.Paths, or everything with
// opts.All, an overflowed or bulk mark set, or all set; otherwise the
// marked paths.
func (s *Syncer) pushScope(opts PushOptions, all bool) (lockScope, error) {
	if len(opts.Paths) > 0 {
		var ps []string
		for _, p := range opts.Paths {
			n, err := normalizePath(p)
			if err != nil {
				return lockScope{}, err
			}
			ps = append(ps, n)
		}
		return scopePaths(ps...), nil
	}
	if opts.All || all {
		return scopeAll(), nil
	}
	var d dirtySet
	if err := s.st.view(func(t stx) error { d = t.dirty(); return nil }); err != nil {
		return lockScope{}, err
	}
	return d.lock(), nil
}

// lock is the scope lock a push of d takes.
func (d dirtySet) lock() lockScope {
	if d.overflow || d.bulk {
		return scopeAll()
	}
	return scopePaths(slices.Collect(maps.Keys(d.paths))...)
}

// narrowPush makes a push that walked everything hold, from here on, only
// the paths its plan changes: a scoped pull or push elsewhere in the cache
// (another process's, through this one's service) runs beside its uploads
// and commit instead of waiting for them (issue 20). The unchanged files
// the walk re-hashed are re-recorded first, at once, since that holds
// whatever the push's outcome, so it need not hold them (a freshly pulled
// file is re-hashed by the next walk: its mtime is racily close to its
// verification). Nothing outside the plan is read or written again by
// this push: its marks are cleared by number, so one made meanwhile stays.
func (s *Syncer) narrowPush(o *op, lp *localPlan, dryRun bool) error {
	if o.narrow == nil || !o.held.all {
		return nil
	}
	if !dryRun && len(lp.touch) > 0 {
		if err := s.st.update(func(t stx) error { return t.putRecords(lp.touch) }); err != nil {
			return err
		}
		lp.touch = nil
	}
	var ps []string
	for _, u := range lp.uploads {
		ps = append(ps, u.path)
	}
	for _, r := range lp.removes {
		ps = append(ps, r.path)
	}
	for _, d := range lp.touch {
		ps = append(ps, d.path)
	}
	for p := range lp.refused {
		ps = append(ps, p)
	}
	sc := lockScope{mode: o.held.mode, paths: topmost(ps)}
	o.narrow(sc)
	o.held = sc
	return nil
}

// prepared is a push whose data is uploaded and whose index change is
// decided but not committed.
type prepared struct {
	d        dirtySet
	upserts  map[string]index.Entry // committed as they are
	bases    map[string]string      // sha256 each upsert replaces ("" = none)
	records  map[string]fileRecord  // records of upserts, stored once committed
	removals map[string]string      // sha256 of the entries to remove
	keep     map[string]bool        // marks that must survive this push
	forget   []string               // records to drop whatever happens
	touch    []pullDone             // records refreshed whatever happens
	head     *index.Head            // the manifest read while preparing
	sh       *shards
	// refs maps the sha256 of each unpacked entry of the shards read
	// while preparing to one path holding it: an object they name may be
	// deduplicated against.
	refs map[string]string
	// proofs maps each upsert deduplicated against an existing object to
	// the path whose committed entry names that object; the commit checks
	// it still does (see merge).
	proofs map[string]string
	// counted is the outcome each upsert was counted under while
	// preparing (ActionUpload or ActionDedup), so a commit that turns it
	// into a conflict counts it once, as that (see retract). It never
	// leaves the process: a PushManifest's commit has stats of its own.
	counted map[string]Action
}

func (pm *prepared) empty() bool { return len(pm.upserts) == 0 && len(pm.removals) == 0 }

// normalize gives every map a value, so a decoded manifest is usable.
func (pm *prepared) normalize() *prepared {
	if pm.upserts == nil {
		pm.upserts = map[string]index.Entry{}
	}
	if pm.bases == nil {
		pm.bases = map[string]string{}
	}
	if pm.records == nil {
		pm.records = map[string]fileRecord{}
	}
	if pm.removals == nil {
		pm.removals = map[string]string{}
	}
	if pm.keep == nil {
		pm.keep = map[string]bool{}
	}
	if pm.d.paths == nil {
		pm.d.paths = map[string]uint64{}
	}
	if pm.refs == nil {
		pm.refs = map[string]string{}
	}
	if pm.proofs == nil {
		pm.proofs = map[string]string{}
	}
	if pm.counted == nil {
		pm.counted = map[string]Action{}
	}
	return pm
}
