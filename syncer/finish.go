package syncer

import (
	"maps"
	"slices"
)

// finishPush counts the commit's outcome per path (res nil: nothing was
// committed) and stores what the push established: records of committed
// files, shards known to be reconciled, and the dirty marks it settled.
func (s *Syncer) finishPush(o *op, pm *prepared, res *commitResult) error {
	if res != nil {
		for _, p := range slices.Sorted(maps.Keys(res.conflicts)) {
			pm.keep[p] = true
			delete(pm.records, p)
			o.retract(p, pm.counted[p])
			o.conflict(p, res.conflicts[p])
		}
		for p := range pm.removals {
			if res.skipped[p] {
				o.change(Change{Path: p, Action: ActionSkip, Reason: reasonRemovalMoved}) // finishPush keeps its record
				continue
			}
			o.add(func(st *Stats) { st.Files.Deleted++ })
			o.change(Change{Path: p, Action: ActionDelete})
		}
	}
	return s.st.update(func(t stx) error {
		if err := t.putRecords(pm.touch); err != nil {
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
			}
			for p := range pm.removals {
				if res.skipped[p] {
					// The entry moved on: the remote copy wins, the next
					// pull installs it, and the record stays what this
					// cache had synced (see prepare).
					continue
				}
				if err := t.deleteFile(p); err != nil {
					return err
				}
			}
			if err := s.saveRemote(t); err != nil {
				return err
			}
			m := res.head.Manifest
			for j, ref := range m.Shards {
				if base, ok := res.rebased[ref.ID]; ok && t.synced(base) {
					if err := t.setSynced(m.SyncKey(j)); err != nil {
						return err
					}
				}
			}
			// This push changed local records, so a claim "every entry of
			// shard S is reconciled here" made before it no longer holds for
			// any S but those just vouched for. Shards are named by content:
			// a later commit can bring an older shard back (a file added,
			// then removed), and a stale claim would make a pull skip the
			// removal (F12).
			if err := t.keepSyncedOnly(m); err != nil {
				return err
			}
			if err := pm.sh.save(t); err != nil {
				return err
			}
		}
		return t.clearDirty(pm.d, len(pm.keep) == 0, pm.keep)
	})
}
