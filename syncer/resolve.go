package syncer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ConflictRecord is a conflict this cache remembers: what kept the local
// copy, and the remote manifest sequence the operation saw.
type ConflictRecord struct {
	Path   string    `json:"path"`
	Reason string    `json:"reason"`
	Seq    uint64    `json:"seq"`
	Op     string    `json:"op"`
	At     time.Time `json:"at"`
	// Copy is the local copy a pull kept (Conflict.Copy): such a conflict
	// stands until Resolve settles it, whatever later operations find.
	Copy string `json:"copy,omitempty"`
}

// Resolution is how Resolve settles a conflict.
type Resolution int

const (
	// KeepLocal makes the local copy (or its absence) win: the next push
	// of the path overwrites (or deletes) the remote entry seen now.
	KeepLocal Resolution = iota + 1
	// TakeRemote replaces the local copy with the committed one (or
	// removes it when the remote entry is gone), dropping local edits.
	TakeRemote
)

// ErrNoResolution is returned by Resolve when ResolveOptions.Keep is
// neither KeepLocal nor TakeRemote, or no path was given.
var ErrNoResolution = errors.New("resolve: choose KeepLocal or TakeRemote, and at least one path (or All)")

// ResolveOptions select the conflicts to settle and how.
type ResolveOptions struct {
	// Paths are files or directories; a directory settles every
	// remembered conflict under it. A file need not be remembered.
	Paths []string `json:"paths,omitempty"`
	// All settles every remembered conflict.
	All  bool       `json:"all,omitempty"`
	Keep Resolution `json:"keep"`
	// Force lets TakeRemote replace a local copy with unpushed edits and
	// no remembered conflict (ErrUnpushedEdits otherwise). The replaced
	// copy is kept as a backup either way.
	Force bool `json:"force,omitempty"`
}

// Resolve settles conflicts. TakeRemote downloads the committed copy (or
// removes the local one) now; KeepLocal only rewrites this cache's record
// of the path and marks it dirty, so the next push of it wins.
// A path in a file/directory clash (a local file where the remote holds a
// directory, or the reverse) settles the whole clash: TakeRemote puts the
// remote side in place, keeping each displaced local file as a backup;
// KeepLocal marks both sides so the next push of the clash's path sends
// the local side and deletes the remote one.
func (s *Syncer) Resolve(ctx context.Context, opts ResolveOptions) (Stats, error) {
	if (opts.Keep != KeepLocal && opts.Keep != TakeRemote) || (len(opts.Paths) == 0 && !opts.All) {
		return Stats{Op: "resolve"}, ErrNoResolution
	}
	var roots []string
	for _, p := range opts.Paths {
		n, err := normalizePath(p)
		if err != nil {
			return Stats{Op: "resolve"}, err
		}
		roots = append(roots, n)
	}
	sc := scopePaths(roots...)
	if opts.All {
		sc = scopeAll()
	}
	release, err := s.enter(ctx, sc)
	if err != nil {
		return Stats{Op: "resolve"}, err
	}
	defer release()
	o := s.begin(ctx, "resolve")
	recorded, err := s.conflicts()
	if err != nil {
		return o.fail(err), err
	}
	var paths []string
	for _, r := range recorded {
		if opts.All || slices.ContainsFunc(roots, func(q string) bool { return under(r.Path, q) }) {
			paths = append(paths, r.Path)
		}
	}
	for _, q := range roots {
		if q != "" && !slices.ContainsFunc(paths, func(p string) bool { return under(p, q) }) {
			paths = append(paths, q) // a file not remembered: settle it as asked
		}
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	// Emptied directories are pruned only inside the scope this operation
	// holds, so a concurrent operation's directory is never removed.
	within := func(dir string) bool {
		return opts.All || slices.ContainsFunc(roots, func(q string) bool { return under(dir, q) })
	}
	inConflict := map[string]ConflictRecord{}
	for _, r := range recorded {
		inConflict[r.Path] = r
	}
	var clashes []string // roots of file/directory clashes settled so far
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return o.fail(err), err
		}
		if slices.ContainsFunc(clashes, func(c string) bool { return under(p, c) }) {
			continue // settled with its clash
		}
		c, err := s.findClash(ctx, o, p)
		if err == nil && c != nil {
			err = s.resolveClash(ctx, o, c, opts.Keep)
			clashes = append(clashes, c.path)
		}
		if err != nil {
			return o.fail(err), fmt.Errorf("resolve %s: %w", p, err)
		}
		if c != nil {
			continue
		}
		cr, known := inConflict[p]
		if err := s.resolveOne(ctx, o, p, opts, cr, known, within); err != nil {
			return o.fail(err), fmt.Errorf("resolve %s: %w", p, err)
		}
	}
	return o.finish(), nil
}

func (s *Syncer) resolveOne(ctx context.Context, o *op, p string, opts ResolveOptions, cr ConflictRecord, known bool, within func(dir string) bool) error {
	keep := opts.Keep
	if keep == KeepLocal && cr.Copy != "" {
		// The local copy a pull kept goes back in place first.
		if err := s.restore(o, p, "resolve --keep-local"); err != nil {
			return err
		}
	}
	e, inRemote, err := s.lookup(ctx, o, p)
	if err != nil {
		return err
	}
	lf, err := s.local.stat(p)
	if err != nil {
		return err
	}
	var old fileRecord
	var hasRec bool
	_ = s.st.view(func(t stx) error { old, hasRec = t.file(p); return nil })
	sum := ""
	if keep == TakeRemote && lf.exists {
		if sum, _, err = s.localSHA(o, p, lf, old, hasRec && old.Hydrated); err != nil {
			return err
		}
		edited := !hasRec || sum != old.SHA256
		if edited && !known && !opts.Force && (!inRemote || sum != e.SHA256) {
			return fmt.Errorf("%w (%s)", ErrUnpushedEdits, p)
		}
	}
	var rec *fileRecord
	var backup string
	reason := "kept the local copy; push it to win"
	switch {
	case keep == TakeRemote && inRemote && lf.exists && sum == e.SHA256:
		rec = &fileRecord{Size: lf.size, SHA256: e.SHA256, MtimeNs: lf.mtimeNs, Hydrated: true, VerifiedNs: now()}
		reason = "took the remote copy (already in place)"
	case keep == TakeRemote && inRemote:
		got, err := s.download(ctx, o.backend(), p, e, want{local: lf, backup: true})
		if err != nil {
			return err
		}
		backup = got.kept
		rec = &fileRecord{Size: got.lf.size, SHA256: e.SHA256, MtimeNs: got.lf.mtimeNs, Hydrated: true, VerifiedNs: now()}
		o.add(func(st *Stats) { st.Files.Downloaded++; st.Bytes.Down += got.lf.size })
		reason = "took the remote copy"
	case keep == TakeRemote:
		if backup, err = s.local.removeAs(p, want{backup: true}); err != nil {
			return err
		}
		s.local.pruneDirs(p, within)
		reason = "deleted remotely: removed the local copy"
	case inRemote:
		// The base becomes the entry seen now; MtimeNs 0 makes the next
		// push hash the file rather than trust the record.
		size := e.Size
		if lf.exists {
			size = lf.size
		}
		rec = &fileRecord{Size: size, SHA256: e.SHA256, Hydrated: true}
	}
	if backup != "" {
		reason += "; the local copy is kept as a backup: " + backup
	}
	o.change(Change{Path: p, Action: ActionResolve, Reason: reason})
	return s.st.update(func(t stx) error {
		// The head lookup read: a later process reads on from it, as a
		// service that holds it in memory does.
		if err := s.saveRemote(t); err != nil {
			return err
		}
		if rec != nil {
			if err := t.putFile(p, *rec); err != nil {
				return err
			}
		} else if err := t.deleteFile(p); err != nil {
			return err
		}
		at := time.Now().UTC()
		if backup != "" {
			if err := t.putBackup(Backup{Path: p, Copy: backup, Reason: "replaced by resolve --take-remote", Op: "resolve", At: at}); err != nil {
				return err
			}
		}
		if keep == TakeRemote && cr.Copy != "" {
			// The copy the conflict kept stays, listed and restorable.
			if err := t.putBackup(Backup{Path: p, Copy: cr.Copy, Reason: cr.Reason, Op: cr.Op, At: cr.At}); err != nil {
				return err
			}
		}
		if keep == KeepLocal {
			if err := t.markDirty(p, s.cfg.DirtyCap); err != nil {
				return err
			}
		} else if err := t.unmarkDirty(p); err != nil {
			return err
		}
		return t.forgetConflict(p)
	})
}

// conflicts returns the remembered conflicts, sorted by path.
func (s *Syncer) conflicts() ([]ConflictRecord, error) {
	out := []ConflictRecord{}
	err := s.st.view(func(t stx) error {
		cs, err := t.conflicts()
		out = append(out, cs...)
		return err
	})
	return out, err
}

// loadPending notes which paths have a remembered conflict, so that
// change can tell which of them an operation settles.
func (o *op) loadPending(t stx) {
	t.conflictPaths(func(p string) {
		if o.pending == nil {
			o.pending = map[string]bool{}
		}
		o.pending[p] = true
	})
}

// settle notes that c synced a path with a remembered conflict. o.mu is
// held.
func (o *op) settle(c Change) {
	switch c.Action {
	case ActionConflict, ActionSkip, ActionLazy:
		return
	}
	if o.pending[c.Path] && !c.DryRun {
		o.settled = append(o.settled, c.Path)
	}
}

// end finishes the operation and remembers its conflicts (see remember).
func (o *op) end(err error) (Stats, error) {
	st := o.fail(err)
	if rerr := o.remember(err != nil); rerr != nil {
		err = errors.Join(err, fmt.Errorf("syncer: remember conflicts: %w", rerr))
	}
	o.logEnd(st, err)
	return st, err
}

// remember stores the conflicts an operation reported and forgets those of
// paths it has since synced: any it changed, and, after a pull without
// error, any in its scope it no longer found in conflict.
func (o *op) remember(failed bool) error {
	if o.dryRun {
		return nil
	}
	st := &o.stats
	if len(st.Conflicts) == 0 && len(o.settled) == 0 && (o.scope == nil || len(o.pending) == 0) {
		return nil
	}
	at := time.Now().UTC()
	return o.s.st.update(func(t stx) error {
		now := map[string]bool{}
		for _, c := range st.Conflicts {
			now[c.Path] = true
		}
		var drop []string
		if o.scope != nil && !failed {
			for p := range o.pending {
				if o.scope.contains(p) && !now[p] {
					drop = append(drop, p)
				}
			}
		}
		for _, p := range o.settled {
			if !now[p] {
				drop = append(drop, p)
			}
		}
		for _, p := range drop {
			if r, ok := t.conflict(p); ok && r.Copy != "" {
				continue // a kept copy waits for Resolve
			}
			if err := t.forgetConflict(p); err != nil {
				return err
			}
		}
		for _, c := range st.Conflicts {
			if old, ok := t.conflict(c.Path); ok && old.Copy != "" {
				if c.Copy == "" {
					continue // the conflict with a kept copy stays as it was
				}
				if old.Copy != c.Copy {
					// A newer copy takes the conflict; the older one stays
					// listed, as a backup.
					if err := t.putBackup(Backup{Path: old.Path, Copy: old.Copy, Reason: old.Reason, Op: old.Op, At: old.At}); err != nil {
						return err
					}
				}
			}
			if err := t.putConflict(ConflictRecord{Path: c.Path, Reason: c.Reason, Seq: st.Seq, Op: st.Op, At: at, Copy: c.Copy}); err != nil {
				return err
			}
		}
		return nil
	})
}
