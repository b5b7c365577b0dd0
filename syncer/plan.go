package syncer

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"maps"
	"slices"
	"sync"

	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/internal/ignore"
)

// The plan phase of a push: walk the dirty part of the cache and hash what
// the walk cannot settle by a stat. It sends no request.

// upload is one file to send: its content as hashed while planning.
type upload struct {
	path   string
	sha    string
	local  localFile
	rec    fileRecord
	hasRec bool
	proved bool // the operation's clock stamp proves local (clockStamp)
}

// record is the record of u's hashed bytes, with the executable bit x.

// RefusedReason begins the Conflict.Reason of a path no store key can
// hold (index.ValidPath refused it: not UTF-8, say): resolve cannot
// settle such a conflict, only a rename or an exclude rule can.
const RefusedReason = "refused: "

func (u upload) record(x bool) fileRecord {
	return fileRecord{Size: u.local.size, SHA256: u.sha, MtimeNs: u.local.mtimeNs, Hydrated: true, VerifiedNs: verifiedNs(u.local, u.proved), Exec: x}
}

// base is the sha256 this cache last synced for the path ("" = new).
func (u upload) base() string {
	if u.hasRec {
		return u.rec.SHA256
	}
	return ""
}

// removal is one remote entry to delete: this cache synced it at
// rec.SHA256 and its local copy is gone.
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
	refused map[string]string
}

// planLocal walks the dirty part of the cache (or opts.Paths). It sends no
// request.
func (s *Syncer) planLocal(ctx context.Context, o *op, opts PushOptions) (localPlan, error) {
	lp := localPlan{refused: map[string]string{}}
	ex, err := s.rules(opts.Exclude, opts.Include)
	if err != nil {
		return lp, err
	}
	o.ex = ex
	var only []string
	for _, p := range opts.Paths {
		n, err := normalizePath(p)
		if err != nil {
			return lp, err
		}
		only = append(only, n)
	}
	var roots []string
	err = s.st.view(func(t stx) error {
		lp.d = t.dirty()
		switch {
		case len(only) > 0:
			lp.d = lp.d.restrict(only)
			lp.d.overflow = slices.Contains(only, "") // the whole cache, listed
		case opts.All:
			lp.d.overflow = true // a walk of everything, with deletions
		}
		if !o.held.covers(lp.d.lock()) {
			return errScopeGrew
		}
		if lp.d.empty() {
			return nil
		}
		roots = []string{""}
		if !lp.d.overflow && !lp.d.bulk {
			roots = topmost(slices.Collect(maps.Keys(lp.d.paths)))
		}
		return nil
	})
	if err != nil {
		return lp, err
	}
	// The records under each root are read after its walk, merged with it
	// in path order. They cannot change in between: the scope lock this
	// push holds covers every root.
	for _, r := range roots {
		if err := s.planRoot(ctx, o, r, &lp); err != nil {
			return lp, err
		}
	}
	if len(roots) == 1 && roots[0] == "" {
		s.recordWalk(o)
	}
	return lp, nil
}

// planRoot walks root, then merges what it found with the records under
// root, both in path order, in one read transaction: a file whose size
// and mtime match its record (and are not racily close to its
// verification) costs no more than its stat. The others are hashed after
// the transaction, in parallel, and planned in path order.
func (s *Syncer) planRoot(ctx context.Context, o *op, root string, lp *localPlan) error {
	tree, prefix, excluded, err := s.local.tree(ctx, root, o.ex)
	if err != nil {
		return err
	}
	o.add(func(st *Stats) { st.Files.Excluded += excluded })
	var (
		check     []upload  // walked files the stat does not settle
		gone      []removal // records without a walked file
		unchanged int
		walked    bool
	)
	missing := func(k []byte, fc *fileCursor) {
		if !under(string(k), root) {
			return // a neighbour of root in key order ("a/b-c" next to "a/b")
		}
		rec, ok := fc.record()
		if !ok || !rec.Hydrated {
			return
		}
		if o.ex.Excluded(string(k)) {
			return // never walked, so never evidence of a deletion
		}
		if p := string(k); lp.d.overflow || lp.d.marked(p) {
			gone = append(gone, removal{path: p, rec: rec})
		}
	}
	err = s.st.view(func(t stx) error {
		fc := t.fileCursor(index.PrefixRange(root))
		err := tree.each([]byte(prefix), func(pb []byte, e *dirEnt) error {
			if e.kind == entSkip {
				o.skipped(string(pb), e.mode)
				return nil
			}
			for k := fc.key(); k != nil && bytes.Compare(k, pb) < 0; k = fc.key() {
				missing(k, fc)
				fc.next()
			}
			recorded := bytes.Equal(fc.key(), pb)
			if recorded && fc.unchanged(e.lf) {
				// Unchanged since this machine verified it. A record names
				// a path that was valid when recorded (a push checks it, a
				// pull took it from a checked shard), so this needs
				// neither the check nor a string of the path: the strings
				// of a million unchanged files were a third of a no-op
				// push's peak heap.
				walked = true
				o.examined(func() string { return string(pb) })
				unchanged++
				fc.next()
				return nil
			}
			p := string(pb)
			if err := index.ValidPath(p); err != nil {
				lp.refused[p] = RefusedReason + err.Error()
				return nil
			}
			walked = true
			o.examined(func() string { return p })
			if recorded {
				rec, ok := fc.record()
				check = append(check, upload{path: p, local: e.lf, rec: rec, hasRec: ok})
				fc.next()
				return nil
			}
			check = append(check, upload{path: p, local: e.lf})
			return nil
		})
		for k := fc.key(); err == nil && k != nil; k = fc.key() {
			missing(k, fc)
			fc.next()
		}
		return err
	})
	if err != nil {
		return err
	}
	unreadable, err := s.hashAll(ctx, o, check)
	if err != nil {
		return err
	}
	for i, u := range check {
		if reason := unreadable[i]; reason != "" {
			lp.refused[u.path] = reason
			continue
		}
		if u.hasRec && u.rec.Hydrated && u.sha == u.rec.SHA256 && !u.local.execDiffers(u.rec.Exec) {
			rec := u.rec
			rec.MtimeNs, rec.Size, rec.VerifiedNs = u.local.mtimeNs, u.local.size, verifiedNs(u.local, u.proved)
			lp.touch = append(lp.touch, pullDone{u.path, &rec})
			unchanged++
			continue
		}
		lp.uploads = append(lp.uploads, u)
	}
	o.add(func(st *Stats) { st.Files.Unchanged += unchanged })
	// Deletions need positive evidence: a file this cache held, now absent,
	// under an explicit mark (or after the mark set overflowed).
	removes := len(lp.removes)
	for _, r := range gone {
		lf, err := s.local.stat(r.path)
		if err != nil && s.local.displaced(r.path) {
			err = nil // the other kind took its place: the file is gone
		}
		if err != nil || lf.exists {
			continue // present (seen via another root) or unusable: not a deletion
		}
		lp.removes = append(lp.removes, r)
	}
	switch {
	case root == "" || walked || len(lp.removes) != removes:
	case excluded > 0 && o.ex.Path(root, true) == ignore.Excluded:
		o.change(Change{Path: root, Action: ActionSkip, Reason: "excluded by an exclude rule"})
	default:
		o.change(Change{Path: root, Action: ActionSkip, Reason: "matches no file in the cache and none this cache synced"})
	}
	return nil
}

// hashAll hashes the files of us in parallel, setting each one's sha and
// local (the size, mtime and mode of the bytes hashed). A file that cannot
// be read (permission denied, gone since the walk, a directory now) has
// its reason at its index in unreadable, and the others are hashed: one
// such file never aborts a push. The error is the context's.
func (s *Syncer) hashAll(ctx context.Context, o *op, us []upload) (unreadable []string, err error) {
	unreadable = make([]string, len(us))
	if len(us) == 0 {
		return unreadable, nil
	}
	stamp := o.clock.get(&s.local)
	var wg sync.WaitGroup
	sem := make(chan struct{}, walkWorkers())
	for i := range us {
		if err = ctx.Err(); err != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			sum, hashed, proved, err := s.local.hash(us[i].path, stamp)
			if err != nil {
				unreadable[i] = unreadableReason(err)
				return
			}
			us[i].sha, us[i].local, us[i].proved = sum, hashed, proved
		})
	}
	wg.Wait()
	return unreadable, err
}

// unreadableReason is the conflict reason of a file a push could not read.
func unreadableReason(err error) string {
	const stays = "; it stays dirty for the next push"
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "vanished while being read" + stays
	case errors.Is(err, fs.ErrPermission):
		return "cannot read: permission denied" + stays
	}
	return "cannot read: " + err.Error() + stays
}
