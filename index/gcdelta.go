package index

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/siltsync/silt/backend"
)

// gcDelta is GC of a DeltaFormat bucket. It is gcLog's, with one more rule
// for what may leave the log: entries are deleted only as the prefix up to
// a checkpoint c that reads (c's state is what they made), and only when
// every one of them, and c's root, is older than max(grace, MinLogGrace)
// by the store's clock and below the head read first. Then roots below c
// go, then pages no remaining root names that are as old. The roots it
// marks are every state from the lowest it can read (a checkpoint or the
// genesis the log continues) up to the head read after the listings, and
// the state of every older root it keeps. Before deleting anything it
// writes a checkpoint of that head and points the hint at it.
func gcDelta(ctx context.Context, b backend.Backend, opts GCOptions, now func() time.Time, start time.Time, young func(time.Time) bool, rep GCReport, first Head, marks *gcMarks) (GCReport, error) {
	var cps []uint64
	var cpAt map[uint64]backend.ObjectInfo
	var pages []backend.ObjectInfo
	l, err := listLogBucket(ctx, b, first, now, func() error {
		var err error
		if cps, cpAt, err = listCheckpoints(ctx, b); err != nil {
			return err
		}
		pages, err = listAll(ctx, b, PagesPrefix)
		return err
	})
	if err != nil {
		return rep, err
	}
	seqs, at, objects, packs, shards, second := l.seqs, l.at, l.objects, l.packs, l.shards, l.second
	rep.Seq = second.Manifest.Seq
	storeNow := start
	var written []PageRef // the pages of the checkpoint this gc writes
	if !opts.DryRun {
		// Every page written again (a plain write): this gc relies on
		// no page it did not write itself. The genesis needs none.
		root, _ := genesisDelta(second.Manifest.Format)
		if second.Manifest.Seq != genesisSeq {
			var r *checkpointRoot
			if r, root, err = writeCheckpoint(ctx, b, second, nil); err != nil {
				return rep, fmt.Errorf("gc: %w", err)
			}
			written = r.Pages
		}
		if storeNow, err = pointHint(ctx, b, second.Manifest.Seq, root, start); err != nil {
			return rep, err
		}
	}
	logCut := storeNow.Add(-max(opts.OlderThan, MinLogGrace))
	old := func(t time.Time) bool { return !t.IsZero() && t.Before(logCut) }

	// The cut: the newest checkpoint below the first head whose root and
	// every entry up to it (and its successor) are old, and that reads.
	cutHead, haveCut, _, err := firstThatReads(ctx, b, slices.Backward(cps), func(c uint64) bool {
		// A root the log does not continue to the head is none of its
		// states (a migration that lost its race wrote it).
		if c >= first.Manifest.Seq || !old(cpAt[c].ModTime) || !continuedTo(at, c, first.Manifest.Seq) {
			return false
		}
		for _, k := range seqs {
			if k > c {
				break
			}
			if next, listed := at[k+1]; !listed || !old(next.ModTime) {
				return false
			}
		}
		return true
	})
	if err != nil {
		return rep, fmt.Errorf("gc: %w", err)
	}
	var cut uint64
	if haveCut {
		cut = cutHead.Manifest.Seq
	}

	// The lowest state the log continues up to the second head: the cut,
	// else the lowest checkpoint (or the genesis) that reads and whose
	// successors are all listed.
	cur, found := cutHead, haveCut
	if !found {
		cur, found, _, err = firstThatReads(ctx, b, slices.All(append([]uint64{genesisSeq}, cps...)), func(c uint64) bool {
			return c <= first.Manifest.Seq && continuedTo(at, c, first.Manifest.Seq)
		})
		if err != nil {
			return rep, fmt.Errorf("gc: %w", err)
		}
	}
	if !found {
		return rep, fmt.Errorf("gc: %w", corrupt(LogPrefix, "no checkpoint that reads is continued by the log up to seq %d", first.Manifest.Seq))
	}
	low := cur.Manifest.Seq
	for {
		if err := marks.add(ctx, b, cur); err != nil {
			return rep, err
		}
		if cur.Manifest.Seq >= second.Manifest.Seq {
			break
		}
		next, ok, err := readNext(ctx, b, cur, time.Time{})
		if err != nil {
			return rep, fmt.Errorf("gc: %w", err)
		}
		if !ok {
			return rep, fmt.Errorf("gc: %w", corrupt(LogKey(cur.Manifest.Seq+1), "missing below the head %d", second.Manifest.Seq))
		}
		cur = next
	}

	// What goes: the entries up to the cut, the roots below it; what
	// stays of the roots is read for the pages it names (and below the
	// lowest replayed state, for the shards it holds).
	var delLog, delRoots []backend.ObjectInfo
	if haveCut {
		for _, k := range seqs {
			if k > cut {
				break
			}
			delLog = append(delLog, at[k])
		}
		for _, c := range cps {
			if c < cut {
				delRoots = append(delRoots, cpAt[c])
			}
		}
	}
	named := map[string]bool{}
	for _, c := range cps {
		if haveCut && c < cut {
			continue
		}
		data, _, err := readBounded(ctx, b, CheckpointKey(c), backend.GetOptions{}, MaxManifestBytes)
		if backend.IsNotExist(err) {
			continue // collected by a gc beside this one
		}
		if err != nil {
			return rep, fmt.Errorf("gc: read checkpoint %d: %w", c, err)
		}
		r, err := decodeRoot(CheckpointKey(c), data)
		if err != nil {
			continue // names nothing a reader can use
		}
		for _, p := range r.Pages {
			named[PageKey(p.ID)] = true
		}
		if c < low {
			h, err := loadRoot(ctx, b, CheckpointKey(c), r, backend.ObjectInfo{})
			if err == nil {
				err = marks.add(ctx, b, h)
			}
			if err != nil && !unreadable(err) {
				return rep, err
			}
		}
	}
	for _, p := range written {
		named[PageKey(p.ID)] = true
	}
	oldHist, err := markLegacy(ctx, b, young, cpAt, low, marks)
	if err != nil {
		return rep, err
	}
	oldLog, err := markLegacyLog(ctx, b, young, old, seqs, at, cpAt, low, marks)
	if err != nil {
		return rep, err
	}
	oldHist = append(oldHist, oldLog...)
	for seq := range marks.seqs {
		rep.Roots = append(rep.Roots, seq)
	}
	slices.Sort(rep.Roots)
	never := func(time.Time) bool { return false }
	none := func(string) bool { return false }
	// Log entries lowest first, then the roots the cut makes unneeded,
	// then pages: what a reader may still be reading goes last.
	if err := rep.sweep(ctx, b, opts.DryRun, young, oldHist, none, &rep.History); err != nil {
		return rep, err
	}
	if err := rep.sweep(ctx, b, opts.DryRun, never, delLog, none, &rep.History); err != nil {
		return rep, err
	}
	if err := rep.sweep(ctx, b, opts.DryRun, never, delRoots, none, &rep.History); err != nil {
		return rep, err
	}
	pageYoung := func(t time.Time) bool { return !old(t) }
	if err := rep.sweep(ctx, b, opts.DryRun, pageYoung, pages, func(k string) bool { return named[k] }, &rep.History); err != nil {
		return rep, err
	}
	return rep, rep.sweepData(ctx, b, opts.DryRun, young, marks, shards, objects, packs)
}

// markLegacy marks the snapshots a bucket migrated from format 3 keeps as
// history copies below low, the lowest state the log holds, as format 3's
// gc does: a copy superseded within the grace period is a root, an older
// one is returned to be deleted (before any data only it names). The
// newest was superseded by the migration, whose checkpoint is its
// successor.
func markLegacy(ctx context.Context, b backend.Backend, young func(time.Time) bool, cpAt map[uint64]backend.ObjectInfo, low uint64, marks *gcMarks) ([]backend.ObjectInfo, error) {
	hist, err := legacyHistory(ctx, b, low)
	if err != nil {
		return nil, err
	}
	histAt := map[uint64]backend.ObjectInfo{}
	for _, o := range hist {
		seq, _ := ParseHistoryKey(o.Key)
		histAt[seq] = o
	}
	var old []backend.ObjectInfo
	for _, o := range hist {
		seq, _ := ParseHistoryKey(o.Key)
		next, ok := successor(histAt, cpAt, seq, low)
		// A successor of unknown age keeps it, as young does.
		if young(o.ModTime) || !ok || young(next.ModTime) {
			h, err := ReadHistory(ctx, b, seq)
			if backend.IsNotExist(err) {
				continue // collected by a gc beside this one
			}
			if err == nil {
				err = marks.add(ctx, b, h)
			}
			if err != nil {
				return nil, fmt.Errorf("gc: %w", err)
			}
			continue
		}
		old = append(old, o)
	}
	return old, nil
}

// markLegacyLog is markLegacy for a bucket migrated from format 4: its
// entries below low are whole states, listed by Log, so one superseded
// within the grace period is a root and an older one is returned to be
// deleted, lowest first and only as a prefix (readers rely on gc deleting
// the log in seq order). They are log entries still: a reader holding one
// takes an absent successor for "none written" for LogTrust, so one goes
// only when its successor is old by the log's rule too (old: older than
// max(grace, MinLogGrace) by the store's clock), as in gcLog, whatever the
// grace (F30). Deltas below low are left as they are.
func markLegacyLog(ctx context.Context, b backend.Backend, young, old func(time.Time) bool, seqs []uint64, at, cpAt map[uint64]backend.ObjectInfo, low uint64, marks *gcMarks) ([]backend.ObjectInfo, error) {
	var gone []backend.ObjectInfo
	prefix := true
	for _, k := range seqs {
		if k >= low {
			break
		}
		if k == genesisSeq {
			continue
		}
		data, _, ok, err := readLogRaw(ctx, b, k)
		if err != nil {
			return nil, fmt.Errorf("gc: %w", err)
		}
		if !ok || isDelta(data) {
			prefix = prefix && !ok
			continue
		}
		next, ok := successor(at, cpAt, k, low)
		if prefix && !young(at[k].ModTime) && ok && !young(next.ModTime) && old(next.ModTime) {
			gone = append(gone, at[k])
			continue
		}
		prefix = false
		h, err := decodeLogEntry(k, data, at[k], time.Time{})
		if err == nil {
			err = marks.add(ctx, b, h)
		}
		if err != nil && !unreadable(err) {
			return nil, fmt.Errorf("gc: %w", err)
		}
	}
	return gone, nil
}

// successor is what superseded the legacy snapshot seq of a migrated
// bucket, for its age: the next legacy snapshot, else the migration's
// checkpoint, else (that checkpoint gone) the lowest root the log holds,
// written after it and so no older.
func successor(legacy, cpAt map[uint64]backend.ObjectInfo, seq, low uint64) (backend.ObjectInfo, bool) {
	if o, ok := legacy[seq+1]; ok {
		return o, true
	}
	if o, ok := cpAt[seq+1]; ok {
		return o, true
	}
	o, ok := cpAt[low]
	return o, ok
}
