package syncer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// ErrTooManyDeletes is returned when a push would delete more remote files
// than PushOptions.MaxDelete allows; nothing was changed.
var ErrTooManyDeletes = errors.New("push: too many deletions")

// PushOptions modify a push.
type PushOptions struct {
	// MaxDelete, when positive, refuses a push that would delete more
	// remote files than this, before anything is uploaded.
	MaxDelete int
	// DryRun plans the push against the remote index and reports what it
	// would do, uploading and committing nothing.
	DryRun bool
	// Fence, when set, is the lock this commit is made under (see Fence).
	Fence *Fence
	// All walks the whole cache, as if every path were marked: a file this
	// cache synced and that is now absent is deleted remotely. It is the
	// command line's push; hosts that mark their writes do not need it.
	All bool
}

// Push uploads what changed within the dirty set and commits it. With
// nothing dirty it sends no request at all. Files whose content equals what
// the remote already has are not uploaded.
func (s *Syncer) Push(ctx context.Context, opts PushOptions) (Stats, error) {
	if err := s.lock(); err != nil {
		return Stats{Op: "push"}, err
	}
	defer s.mu.Unlock()
	o := s.begin("push")
	pm, err := s.prepare(ctx, o, opts)
	if err != nil || opts.DryRun {
		return o.finish(), err
	}
	err = s.commitPrepared(ctx, o, pm, opts.Fence)
	return o.finish(), err
}

// upload is one file to send: its content as hashed while planning.
type upload struct {
	path   string
	sha    string
	local  localFile
	rec    fileRecord
	hasRec bool
}

// removal is one remote entry to delete: this cache held it at rec.Version
// and its local copy is gone.
type removal struct {
	path string
	rec  fileRecord
}

// localPlan is what the dirty set and the cache say, before any request.
type localPlan struct {
	d       dirtySet
	uploads []upload
	removes []removal
	touch   []pullDone // unchanged files whose records need a fresh mtime
}

// planLocal walks the dirty part of the cache. It sends no request.
func (s *Syncer) planLocal(ctx context.Context, o *op, all bool) (localPlan, error) {
	var lp localPlan
	err := s.st.view(func(t stx) error {
		lp.d = t.dirty()
		if all {
			lp.d.overflow = true // a walk of everything, with deletions
		}
		if lp.d.empty() {
			return nil
		}
		roots := []string{""}
		if !lp.d.overflow && !lp.d.bulk {
			roots = topmost(slices.Collect(maps.Keys(lp.d.paths)))
		}
		for _, r := range roots {
			if err := s.planRoot(ctx, o, t, r, &lp); err != nil {
				return err
			}
		}
		return nil
	})
	return lp, err
}

func (s *Syncer) planRoot(ctx context.Context, o *op, t stx, root string, lp *localPlan) error {
	seen := map[string]bool{}
	err := s.local.walk(root, func(p string, lf localFile) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		seen[p] = true
		o.add(func(st *Stats) { st.Local.Examined++ })
		rec, hasRec := t.file(p)
		if hasRec && rec.unchanged(lf) {
			return nil // unchanged since this machine verified it
		}
		sum, hashed, err := s.local.hash(p)
		if err != nil {
			return fmt.Errorf("push: %w", err)
		}
		if hasRec && rec.Hydrated && sum == rec.SHA256 {
			rec.MtimeNs, rec.Size, rec.VerifiedNs = hashed.mtimeNs, hashed.size, now()
			lp.touch = append(lp.touch, pullDone{p, &rec})
			return nil
		}
		lp.uploads = append(lp.uploads, upload{path: p, sha: sum, local: hashed, rec: rec, hasRec: hasRec})
		return nil
	})
	var pe *PathError
	if errors.As(err, &pe) {
		return err // a marked path that escapes through a symlink: refuse
	}
	if err != nil {
		return err
	}
	// Deletions need positive evidence: a file this cache held, now absent,
	// under an explicit mark (or after the mark set overflowed).
	rng := keyRange{root, successor(root + "/")}
	if root == "" {
		rng = keyRange{"", ""}
	}
	return t.filesIn(rng, func(p string, rec fileRecord) error {
		if seen[p] || !under(p, root) || !rec.Hydrated || !(lp.d.overflow || lp.d.marked(p)) {
			return nil
		}
		lf, err := s.local.stat(p)
		if err != nil || lf.exists {
			return nil // present (seen via another root) or unusable: not a deletion
		}
		lp.removes = append(lp.removes, removal{path: p, rec: rec})
		return nil
	})
}

// topmost drops paths that lie under another path of the set.
func topmost(paths []string) []string {
	slices.Sort(paths)
	var out []string
	for _, p := range paths {
		if len(out) > 0 && under(p, out[len(out)-1]) {
			continue
		}
		out = append(out, p)
	}
	return out
}
