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
	seqs, at, err := logSeqs(ctx, b)
	if err != nil {
		return rep, err
	}
	cps, cpAt, err := listCheckpoints(ctx, b)
	if err != nil {
		return rep, err
	}
	pages, err := listAll(ctx, b, PagesPrefix)
	if err != nil {
		return rep, err
	}
	objects, err := listAll(ctx, b, ObjectsPrefix)
	if err != nil {
		return rep, err
	}
	packs, err := listAll(ctx, b, PacksPrefix)
	if err != nil {
		return rep, err
	}
	shards, err := listAll(ctx, b, ShardsPrefix)
	if err != nil {
		return rep, err
	}
	second, err := readHead(ctx, b, backend.GetOptions{}, now)
	if err != nil {
		return rep, fmt.Errorf("gc: %w", err)
	}
	if !second.IsLog() || second.Manifest.Seq < first.Manifest.Seq {
		return rep, fmt.Errorf("gc: the log went from seq %d to %d during the listing: %w", first.Manifest.Seq, second.Manifest.Seq, ErrCorruptIndex)
	}
	rep.Seq = second.Manifest.Seq
	storeNow := start
	if !opts.DryRun {
		// Every page written again (a plain write): this gc relies on
		// no page it did not write itself. The genesis needs none.
		root, _ := genesis5()
		if second.Manifest.Seq != genesisSeq {
			if root, err = writeCheckpoint(ctx, b, second, nil); err != nil {
				return rep, fmt.Errorf("gc: %w", err)
			}
		}
		if _, err := backend.PutBytes(ctx, b, ManifestKey, root, backend.Cond{}); err != nil {
			return rep, fmt.Errorf("gc: point the hint at seq %d: %w", second.Manifest.Seq, err)
		}
		st, err := b.Stat(ctx, ManifestKey)
		if err != nil {
			return rep, fmt.Errorf("gc: %w", err)
		}
		if !st.ModTime.IsZero() && st.ModTime.Before(start) {
			storeNow = st.ModTime
		}
	}
	logCut := storeNow.Add(-max(opts.OlderThan, MinLogGrace))
	old := func(t time.Time) bool { return !t.IsZero() && t.Before(logCut) }

	// The cut: the newest checkpoint below the first head whose root and
	// every entry up to it (and its successor) are old, and that reads.
	cut, haveCut := uint64(0), false
	var cutHead Head
	for _, c := range slices.Backward(cps) {
		if c >= first.Manifest.Seq || !old(cpAt[c].ModTime) {
			continue
		}
		ok := true
		for _, k := range seqs {
			if k > c {
				break
			}
			if next, listed := at[k+1]; !listed || !old(next.ModTime) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		h, err := startAt(ctx, b, c)
		if unreadable(err) {
			continue
		}
		if err != nil {
			return rep, fmt.Errorf("gc: %w", err)
		}
		cut, haveCut, cutHead = c, true, h
		break
	}

	// The lowest state the log continues up to the second head: the cut,
	// else the lowest checkpoint (or the genesis) that reads and whose
	// successors are all listed.
	listed := func(from uint64) bool {
		for k := from + 1; k <= first.Manifest.Seq; k++ {
			if _, ok := at[k]; !ok {
				return false
			}
		}
		return true
	}
	cur, found := cutHead, haveCut
	if !found {
		for _, c := range append([]uint64{genesisSeq}, cps...) {
			if c > first.Manifest.Seq || !listed(c) {
				continue
			}
			h, err := startAt(ctx, b, c)
			if unreadable(err) {
				continue
			}
			if err != nil {
				return rep, fmt.Errorf("gc: %w", err)
			}
			cur, found = h, true
			break
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
	if !opts.DryRun && second.Manifest.Seq != genesisSeq {
		// The checkpoint this gc wrote names its pages too.
		r, _ := rootOf(second)
		for _, p := range r.Pages {
			named[PageKey(p.ID)] = true
		}
	}
	for seq := range marks.seqs {
		rep.Roots = append(rep.Roots, seq)
	}
	slices.Sort(rep.Roots)
	never := func(time.Time) bool { return false }
	none := func(string) bool { return false }
	// Log entries lowest first, then the roots the cut makes unneeded,
	// then pages: what a reader may still be reading goes last.
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
