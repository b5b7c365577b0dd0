package syncer

import (
	"context"
	"maps"
	"slices"

	"github.com/siltsync/silt/backend"
)

// commitPrepared commits a prepared push, deletes the data objects it
// unreferenced, and records the outcome locally.
func (s *Syncer) commitPrepared(ctx context.Context, o *op, pm *prepared, fence *Fence) error {
	if pm.empty() {
		return s.finishPush(pm, nil)
	}
	ch := changeSet{upserts: pm.upserts, bases: pm.bases, removals: pm.removals}
	res, err := s.commit(ctx, o, pm.sh, ch, pm.snap, fence)
	if err != nil {
		return err
	}
	o.stats.Seq = res.snap.m.Seq
	o.mark("commit")
	// Data goes only after the commit that unreferences it, so readers of
	// the previous snapshot never miss a committed object. A failure here
	// leaves garbage for gc, not a broken index.
	conditional := o.backend().Capabilities().ConditionalDelete
	for p, v := range pm.removals {
		if res.skipped[p] || res.noop {
			o.conflict(p, "deleted locally but changed remotely; the remote copy wins")
			continue
		}
		c := backend.Cond{}
		if conditional {
			c.IfMatch = v
		}
		if err := o.backend().Delete(ctx, p, c); err != nil && ctx.Err() != nil {
			break
		}
		o.add(func(st *Stats) { st.Files.Deleted++ })
	}
	o.mark("delete")
	return s.finishPush(pm, &res)
}

// finishPush stores what the push established: records of committed
// files, shards known to be reconciled, and the dirty marks it settled.
func (s *Syncer) finishPush(pm *prepared, res *commitResult) error {
	return s.st.update(func(t stx) error {
		if err := applyPull(t, pm.touch); err != nil {
			return err
		}
		for _, p := range pm.forget {
			if err := t.deleteFile(p); err != nil {
				return err
			}
		}
		if res != nil {
			// Sorted: bbolt appends cheaply and splits pages dearly.
			for _, p := range slices.Sorted(maps.Keys(pm.records)) {
				if err := t.putFile(p, pm.records[p]); err != nil {
					return err
				}
				if err := t.clearIntent(p); err != nil {
					return err
				}
			}
			for p := range pm.removals {
				if err := t.deleteFile(p); err != nil {
					return err
				}
			}
			if err := t.setMetaUint(metaSeenSeq, res.snap.m.Seq); err != nil {
				return err
			}
			if err := t.saveManifest(s.mcache); err != nil {
				return err
			}
			m := res.snap.m
			for j, ref := range m.Shards {
				if base, ok := res.rebased[ref.ID]; ok && t.synced(base) {
					if err := t.setSynced(syncKey(m, j)); err != nil {
						return err
					}
				}
			}
			if err := pm.sh.save(t); err != nil {
				return err
			}
		}
		return t.clearDirty(pm.d, len(pm.keep) == 0, func(q string) bool {
			for k := range pm.keep {
				if under(k, q) {
					return false
				}
			}
			return true
		})
	})
}
