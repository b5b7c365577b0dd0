package syncer

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/siltsync/silt/index"
)

// The check phase of a push: read the committed index where the plan
// touches it and decide, path by path, what to upload, what to delete and
// what is a conflict. A dry run ends here, having listed what it would do.

// toSend is what the upload phase sends: new contents, and entries whose
// executable bit alone changed (their bytes stay where they are).
type toSend struct {
	sends, modes []upload
}

// checkIndex checks the local plan lp against the committed index and
// returns the push's prepared change, and what to upload (nil: nothing,
// or a dry run). With nothing planned it sends no request.
func (s *Syncer) checkIndex(ctx context.Context, o *op, lp localPlan, opts PushOptions) (*prepared, *toSend, error) {
	pm := (&prepared{d: lp.d, touch: lp.touch, sh: s.newShards(o.backend())}).normalize()
	for p, reason := range lp.refused {
		pm.keep[p] = true
		o.conflict(p, reason)
	}
	if len(lp.uploads) == 0 && len(lp.removes) == 0 {
		return pm, nil, nil // nothing to send: no request at all
	}
	remote, err := s.remoteEntries(ctx, o, pm, lp)
	if err != nil {
		return nil, nil, err
	}
	o.mark("index")

	var sends, modes []upload
	for _, u := range lp.uploads {
		e, inRemote := remote[u.path]
		switch {
		case inRemote && e.SHA256 == u.sha && e.Exec != u.exec() && u.base() == e.SHA256:
			// The bytes this cache synced, with the executable bit flipped:
			// the entry changes, its bytes stay where they are.
			ne := e
			ne.Exec, ne.Seq = u.exec(), 0
			pm.upserts[u.path] = ne
			pm.bases[u.path] = e.SHA256
			pm.records[u.path] = u.record(ne.Exec)
			modes = append(modes, u)
		case inRemote && e.SHA256 == u.sha:
			// Recorded with the committed bit: a local bit that differs
			// (the same bytes created on both sides) is pushed next time.
			rec := u.record(e.Exec)
			pm.touch = append(pm.touch, pullDone{u.path, &rec})
			o.add(func(st *Stats) { st.Files.Unchanged++ })
		case inRemote && u.base() == "":
			pm.keep[u.path] = true
			o.conflict(u.path, reasonCreatedRemotely)
		case inRemote && e.SHA256 != u.base():
			pm.keep[u.path] = true
			o.conflict(u.path, reasonChangedRemotely)
		case !inRemote && u.base() != "":
			pm.keep[u.path] = true
			o.conflict(u.path, reasonDeletedRemotely)
		default:
			sends = append(sends, u)
		}
	}
	for _, r := range lp.removes {
		e, inRemote := remote[r.path]
		switch {
		case !inRemote:
			pm.forget = append(pm.forget, r.path) // already gone
		case e.SHA256 != r.rec.SHA256:
			// The remote copy wins: the next pull installs it (a deletion
			// never wins over an edit it did not see). The record stays as
			// it was, the evidence of what this cache synced, so a file
			// that appears meanwhile is never mistaken for a new one, and
			// the next pull, KeepLazy or not, downloads the entry.
			o.change(Change{Path: r.path, Action: ActionSkip, Reason: reasonRemovalMoved})
		default:
			pm.removals[r.path] = e.SHA256
		}
	}
	tooMany := opts.MaxDelete > 0 && len(pm.removals) > opts.MaxDelete
	if opts.DryRun {
		// A dry run lists every planned action, past the guard too.
		for _, u := range sends {
			o.change(Change{Path: u.path, Action: ActionUpload, Bytes: u.local.size, DryRun: true})
		}
		for _, u := range modes {
			o.change(Change{Path: u.path, Action: ActionDedup, Reason: modeReason(u.exec()), DryRun: true})
		}
		for _, p := range slices.Sorted(maps.Keys(pm.removals)) {
			o.change(Change{Path: p, Action: ActionDelete, DryRun: true})
		}
		if !tooMany {
			o.add(func(st *Stats) { st.Files.Uploaded = len(sends) + len(modes); st.Files.Deleted = len(pm.removals) })
		}
	}
	if tooMany {
		return nil, nil, fmt.Errorf("%w: %d planned, limit %d", ErrTooManyDeletes, len(pm.removals), opts.MaxDelete)
	}
	if opts.DryRun {
		return pm, nil, nil
	}
	return pm, &toSend{sends: sends, modes: modes}, nil
}

// remoteEntries reads the manifest and the shards that hold the planned
// paths, and returns the committed entries of those paths.
func (s *Syncer) remoteEntries(ctx context.Context, o *op, pm *prepared, lp localPlan) (map[string]index.Entry, error) {
	head, err := s.readManifest(ctx, o.backend())
	if err != nil {
		return nil, err
	}
	if err := index.Writable(head); err != nil {
		return nil, err // before any upload: a bucket of an older format is migrated first
	}
	pm.head = &head
	m := head.Manifest
	o.stats.Seq = m.Seq
	out := map[string]index.Entry{}
	if len(m.Shards) == 0 {
		return out, nil
	}
	byShard := map[int][]string{}
	for _, u := range lp.uploads {
		i := m.ShardFor(u.path)
		byShard[i] = append(byShard[i], u.path)
	}
	for _, r := range lp.removes {
		i := m.ShardFor(r.path)
		byShard[i] = append(byShard[i], r.path)
	}
	is := make([]int, 0, len(byShard))
	for i := range byShard {
		is = append(is, i)
	}
	if err := pm.sh.prefetch(ctx, m, is, s.cfg.Concurrency); err != nil {
		return nil, err
	}
	for i, ps := range byShard {
		entries, err := pm.sh.get(ctx, m, i)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if e, ok := entries[p]; ok {
				out[p] = e
			}
		}
		for p, e := range entries {
			if !e.Packed() {
				pm.refs[e.SHA256] = p
			}
		}
	}
	return out, nil
}
