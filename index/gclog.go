package index

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/siltsync/silt/backend"
)

// gcLog is GC of a LogFormat bucket. The roots are every log entry it
// keeps, from the lowest kept up to the head read after the listings. It
// deletes log entries only as a prefix, lowest first and one at a time,
// each only when its successor is older than max(grace, MinLogGrace) and
// it is below the head read first: a reader that finds entry K after an
// absent K+1 knows K+1 was never written (walkLog), and a reader's
// observation younger than LogTrust cannot be undone by a deletion.
// Before it deletes any entry it points the hint at the head, so a reader
// starting from the hint lands above what is deleted, and takes the
// store's time from that write.
func gcLog(ctx context.Context, b backend.Backend, opts GCOptions, now func() time.Time, start time.Time, young func(time.Time) bool, rep GCReport, first Head, marks *gcMarks) (GCReport, error) {
	if isDeltaLog(first.Manifest.Format) {
		return gcDelta(ctx, b, opts, now, start, young, rep, first, marks)
	}
	l, err := listLogBucket(ctx, b, first, now, nil)
	if err != nil {
		return rep, err
	}
	seqs, at, objects, packs, shards, second := l.seqs, l.at, l.objects, l.packs, l.shards, l.second
	rep.Seq = second.Manifest.Seq
	// Ages of log entries are measured on the store's clock too, the one
	// that stamped them: the hint's write gives its time now. A gc whose
	// own clock runs ahead would otherwise delete an entry a reader may
	// still take as absent-so-unwritten (the reader measures LogTrust on
	// its own clock, as an elapsed time, so no skew enters there).
	storeNow := start
	if !opts.DryRun {
		if storeNow, err = pointHint(ctx, b, second.Manifest.Seq, second.Data, start); err != nil {
			return rep, err
		}
	}
	// The earlier of the two clocks: a gc paused before the hint's write
	// still keeps every snapshot current within the grace of its start.
	logCut := storeNow.Add(-max(opts.OlderThan, MinLogGrace))
	var del []backend.ObjectInfo
	for _, seq := range seqs {
		next, ok := at[seq+1]
		if seq >= first.Manifest.Seq || !ok || next.ModTime.IsZero() || !next.ModTime.Before(logCut) {
			break
		}
		del = append(del, at[seq])
	}
	keepFrom := first.Manifest.Seq
	if len(del) < len(seqs) {
		keepFrom = min(keepFrom, seqs[len(del)])
	}
	for seq := keepFrom; seq <= second.Manifest.Seq; seq++ {
		h := first
		switch seq {
		case first.Manifest.Seq:
		case second.Manifest.Seq:
			h = second
		default:
			var ok bool
			if h, ok, err = readLogEntry(ctx, b, seq, time.Time{}); err != nil {
				return rep, fmt.Errorf("gc: %w", err)
			}
			if !ok {
				if seq < first.Manifest.Seq {
					continue // collected by a gc beside this one
				}
				return rep, fmt.Errorf("gc: %w", corrupt(LogKey(seq), "missing below the head %d", second.Manifest.Seq))
			}
		}
		if err := marks.add(ctx, b, h); err != nil {
			return rep, err
		}
		if seq == MaxSeq {
			break
		}
	}
	for seq := range marks.seqs {
		rep.Roots = append(rep.Roots, seq)
	}
	slices.Sort(rep.Roots)
	// Log entries first, as in version 3's history copies: a snapshot
	// leaves the log before any data only it references.
	if err := rep.sweep(ctx, b, opts.DryRun, func(time.Time) bool { return false }, del, func(string) bool { return false }, &rep.History); err != nil {
		return rep, err
	}
	return rep, rep.sweepData(ctx, b, opts.DryRun, young, marks, shards, objects, packs)
}

// pointHint writes data, the hint of seq, and returns the store's time
// from that write, or start if it is earlier.
func pointHint(ctx context.Context, b backend.Backend, seq uint64, data []byte, start time.Time) (time.Time, error) {
	if _, err := backend.PutBytes(ctx, b, ManifestKey, data, backend.Cond{}); err != nil {
		return start, fmt.Errorf("gc: point the hint at seq %d: %w", seq, err)
	}
	st, err := b.Stat(ctx, ManifestKey)
	if err != nil {
		return start, fmt.Errorf("gc: %w", err)
	}
	if !st.ModTime.IsZero() && st.ModTime.Before(start) {
		return st.ModTime, nil
	}
	return start, nil
}

// logListing is what gc of a log bucket lists, and the head it reads
// after the listings.
type logListing struct {
	seqs                   []uint64
	at                     map[uint64]backend.ObjectInfo
	objects, packs, shards []backend.ObjectInfo
	second                 Head
}

// listLogBucket lists the log, then whatever more lists (the checkpoints
// of a delta log), then objects, packs and shards, then reads the head
// again: a commit that lands during the listings is in that head.
func listLogBucket(ctx context.Context, b backend.Backend, first Head, now func() time.Time, more func() error) (logListing, error) {
	var l logListing
	var err error
	if l.seqs, l.at, err = logSeqs(ctx, b); err != nil {
		return l, err
	}
	if more != nil {
		if err := more(); err != nil {
			return l, err
		}
	}
	for _, p := range []struct {
		prefix string
		into   *[]backend.ObjectInfo
	}{{ObjectsPrefix, &l.objects}, {PacksPrefix, &l.packs}, {ShardsPrefix, &l.shards}} {
		if *p.into, err = listAll(ctx, b, p.prefix); err != nil {
			return l, err
		}
	}
	if l.second, err = readHead(ctx, b, backend.GetOptions{}, now); err != nil {
		return l, fmt.Errorf("gc: %w", err)
	}
	if !l.second.IsLog() || l.second.Manifest.Seq < first.Manifest.Seq {
		return l, fmt.Errorf("gc: the log went from seq %d to %d during the listing: %w", first.Manifest.Seq, l.second.Manifest.Seq, ErrCorruptIndex)
	}
	return l, nil
}

// logSeqs lists the seqs of the log entries, ascending.
func logSeqs(ctx context.Context, b backend.Backend) ([]uint64, map[uint64]backend.ObjectInfo, error) {
	entries, err := listAll(ctx, b, LogPrefix)
	if err != nil {
		return nil, nil, err
	}
	at := map[uint64]backend.ObjectInfo{}
	var seqs []uint64
	for _, o := range entries {
		if seq, ok := ParseLogKey(o.Key); ok {
			at[seq] = o
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	return seqs, at, nil
}

// recoverLog is Recover in a LogFormat bucket. A lost or damaged hint
// needs no recovery (readers find the head from the log); what is left to
// undo is a bad commit or a snapshot whose shards are gone, and the new
// commit is the head's successor, like any other.
func recoverLog(ctx context.Context, b backend.Backend, opts RecoverOptions, rep RecoverReport) (RecoverReport, error) {
	cur, err := readHead(ctx, b, backend.GetOptions{}, time.Now)
	if err != nil || !cur.IsLog() {
		// The hint (and the marker) gone or damaged: the log's newest
		// entry is the head.
		rep.Manifest = "missing"
		if err != nil {
			rep.Manifest = "unreadable: " + err.Error()
		}
		if cur, _, err = resolveByList(ctx, b, time.Now); err != nil {
			// A DeltaFormat log whose newest state does not read (every
			// checkpoint the log continues lost a page): recover commits
			// a reset on the newest entry.
			stub, serr := unreadHead(ctx, b, time.Now)
			if serr != nil {
				return rep, fmt.Errorf("recover: %w", err)
			}
			rep.Manifest = "unreadable: " + err.Error()
			cur = stub
		}
	} else {
		rep.Manifest = "ok"
	}
	rep.Current = cur.Manifest.Seq
	seqs, _, err := logSeqs(ctx, b)
	if err != nil {
		return rep, fmt.Errorf("recover: %w", err)
	}
	rep.History = len(seqs)
	if len(seqs) > 0 {
		rep.Newest = seqs[len(seqs)-1]
	}
	cands := slices.Clone(seqs)
	if cur.sum == "" {
		cands = append(cands, cur.Manifest.Seq)
	} else { // the head's state does not read: no candidate
		cands = slices.DeleteFunc(cands, func(s uint64) bool { return s == cur.Manifest.Seq })
	}
	if isDeltaLog(cur.Manifest.Format) {
		// A snapshot gc took out of the log may still be a checkpoint.
		cps, _, err := listCheckpoints(ctx, b)
		if err != nil {
			return rep, fmt.Errorf("recover: %w", err)
		}
		cands = append(cands, cps...)
	}
	slices.Sort(cands)
	cands = slices.Compact(cands)
	if opts.Seq != 0 {
		if !slices.Contains(cands, opts.Seq) {
			return rep, fmt.Errorf("recover: snapshot %d: %w (the log does not hold it)", opts.Seq, ErrNoSnapshot)
		}
		cands = []uint64{opts.Seq}
	}
	h, found := newestReadable(ctx, b, cands, &rep, func(seq uint64) (Head, error) {
		if seq == cur.Manifest.Seq {
			return cur, nil
		}
		return ReadLogEntry(ctx, b, seq)
	})
	if !found {
		return rep, fmt.Errorf("recover: %w (%d tried, see skipped)", ErrNoSnapshot, len(rep.Skipped))
	}
	from := h.Manifest
	rep.From, rep.Entries, rep.Shards = from.Seq, from.Entries(), len(from.Shards)
	// The head already lists the snapshot's shards (a recover run again
	// after its commit landed): nothing to commit.
	if from.Seq == cur.Manifest.Seq || cur.sum == "" && slices.Equal(from.Shards, cur.Manifest.Shards) {
		rep.NoOp = true
		if opts.DryRun || rep.Manifest == "ok" {
			return rep, nil
		}
		return rep, repairLog(ctx, b, cur)
	}
	if cur.Manifest.Seq >= MaxSeq {
		return rep, fmt.Errorf("recover: seq %d is at MaxSeq: %w", cur.Manifest.Seq, ErrCorruptIndex)
	}
	next := recovered(from, cur.Manifest, cur.Manifest.Seq+1)
	if opts.DryRun {
		return rep, nil
	}
	res, err := Commit(ctx, b, cur, func(context.Context, Head) (Proposal, error) {
		return Proposal{Next: next}, nil
	}, CommitOptions{Attempts: 1})
	if err != nil {
		return rep, fmt.Errorf("recover: %w", err)
	}
	rep.Seq = next.Seq
	return rep, repairLog(ctx, b, res.Head)
}

// repairLog writes the marker back (if gone) and points the hint at head:
// after a recover the bucket reads as a log for every silt again.
func repairLog(ctx context.Context, b backend.Backend, head Head) error {
	g, _ := genesisOf(head.Manifest.Format)
	if _, err := backend.PutBytes(ctx, b, HistoryKey(genesisSeq), g, backend.Cond{IfAbsent: true, ContentNamed: true}); err != nil && !backend.IsPrecondition(err) {
		return fmt.Errorf("recover: write the log's marker: %w", err)
	}
	hint := head.Data
	if isDeltaLog(head.Manifest.Format) {
		_, root, err := writeCheckpoint(ctx, b, head, nil)
		if err != nil {
			return fmt.Errorf("recover: %w", err)
		}
		hint = root
	}
	if _, err := backend.PutBytes(ctx, b, ManifestKey, hint, backend.Cond{}); err != nil {
		return fmt.Errorf("recover: point the hint at seq %d: %w", head.Manifest.Seq, err)
	}
	return nil
}
