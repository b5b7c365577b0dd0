package index

// Migration to DefaultFormat (FORMAT.md, "Migrating a bucket"). A
// migration is one commit: the successor N+1 of the head N, holding the
// same shards and fences, written in DefaultFormat. A pull after it
// downloads nothing.
//
// From format 2 or 3 (the manifest is the commit point) it is a
// manifest compare-and-swap like any commit: the history copy of N, the
// pages and root of the checkpoint N+1, then manifest.json from N's
// version to that root (the commit point: a writer mid-push loses its
// swap, reads the root and commits its change in the log; a silt that
// reads no format 6 refuses the bucket with ErrNewerFormat), then the
// marker. From format 4 or 5 it is the log entry N+1 created if absent,
// a delta whose state is format 6, then its checkpoint and the hint (and
// before it, from format 4, the marker). A silt that reads no format 6
// refuses the bucket from N+1 on with ErrNewerFormat. Every step before the commit point writes only objects no
// reader of the old format looks at; every step after it is repeated by
// a re-run, so a migration killed anywhere is finished by running it
// again. The snapshots the old format kept stay listed and readable:
// history copies (format 3), log entries (formats 4 and 5) and format
// 5's checkpoints are read below the migration's seq until gc removes
// them past its grace period.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/internal/backoff"
)

// ErrNoConditionalWrites: the log formats commit by create-if-absent, which
// the store does not offer.
var ErrNoConditionalWrites = errors.New("the store offers no conditional writes, which the log format commits by")

// MigrateOptions modify a Migrate.
type MigrateOptions struct {
	// DryRun reports what the migration would write, writing nothing.
	DryRun bool
	// Attempts bounds the commits a migration tries when writers commit
	// beside it; 0 means DefaultCommitAttempts.
	Attempts int
	// Now is the clock a log head's observations are measured by; nil
	// means time.Now.
	Now func() time.Time
}

// MigrateReport is what a Migrate found and did.
type MigrateReport struct {
	// From is the format the bucket was in; To the format it is in after.
	From int `json:"from"`
	To   int `json:"to"`
	// Seq is the migration's commit (the head's seq when nothing was to
	// do).
	Seq uint64 `json:"seq"`
	// Entries and Shards are the head's, carried over unchanged.
	Entries int `json:"entries"`
	Shards  int `json:"shards"`
	// Writes lists the keys the migration wrote (or would write), in order.
	Writes []string `json:"writes"`
	// Already says the bucket was in DefaultFormat; Finished that an earlier
	// migration's last steps (the marker) were written now.
	Already  bool `json:"already,omitempty"`
	Finished bool `json:"finished,omitempty"`
	// Empty says there was nothing committed: the next push creates the
	// bucket in the format its cache asks for.
	Empty bool `json:"empty,omitempty"`
	// Attempts counts the commits tried (lost races to other writers
	// included).
	Attempts int  `json:"attempts"`
	DryRun   bool `json:"dry_run,omitempty"`
}

// Migrate turns the bucket at the namespace root b into DefaultFormat,
// online: writers may commit beside it. It is idempotent: on a
// DefaultFormat bucket it only finishes what a killed migration left (the marker).
func Migrate(ctx context.Context, b backend.Backend, opts MigrateOptions) (MigrateReport, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	attempts := opts.Attempts
	if attempts <= 0 {
		attempts = DefaultCommitAttempts
	}
	rep := MigrateReport{DryRun: opts.DryRun, Writes: []string{}}
	for attempt := 0; ; attempt++ {
		h, err := readHead(ctx, b, backend.GetOptions{}, now)
		if err != nil {
			return rep, fmt.Errorf("migrate: %w", err)
		}
		rep.From, rep.To, rep.Seq = h.Manifest.Format, h.Manifest.Format, h.Manifest.Seq
		rep.Entries, rep.Shards = h.Manifest.Entries(), len(h.Manifest.Shards)
		switch {
		case h.Version == "":
			rep.Empty = true
			return rep, nil
		case h.Manifest.Format == DefaultFormat && attempt == 0:
			rep.Already = true
			return rep, finishMigration(ctx, b, h, &rep)
		case h.Manifest.Format == DefaultFormat:
			// Our commit's outcome was unknown and another landed it, or
			// a migration beside ours did: either way it is done.
			return rep, finishMigration(ctx, b, h, &rep)
		}
		// From format 2 or 3 the commit point is the manifest's
		// compare-and-swap; from format 4 the create-if-absent of a log
		// entry, which atomic create settles.
		if caps := b.Capabilities(); !caps.ConditionalPut && (h.Manifest.Format < LogFormat || !caps.AtomicCreate) {
			return rep, fmt.Errorf("migrate: %w", ErrNoConditionalWrites)
		}
		rep.To = DefaultFormat
		rep.Seq = h.Manifest.Seq + 1
		rep.Attempts = attempt + 1
		err = migrateOnce(ctx, b, h, now, &rep)
		switch {
		case err == nil:
			if isDeltaLog(rep.From) {
				// Format 5's checkpoints are snapshots silt log lists.
				return rep, finishMigration(ctx, b, migratedState(h), &rep)
			}
			if err := dropStaleCheckpoints(ctx, b, rep.Seq, &rep); err != nil {
				return rep, err
			}
			return rep, finishMigration(ctx, b, migratedState(h), &rep)
		case ctx.Err() != nil:
			return rep, ctx.Err()
		case !backend.IsPrecondition(err) && !backend.IsRetryable(err) && !errors.Is(err, backend.ErrOutcomeUnknown):
			return rep, fmt.Errorf("migrate: %w", err)
		case attempt+1 >= attempts:
			return rep, fmt.Errorf("migrate: %w (%d attempts; last: %w)", ErrCommitContention, attempt+1, err)
		}
		rep.Writes = rep.Writes[:0]
		if err := backoff.Sleep(ctx, Backoff(attempt, b.Capabilities().MaxMutationsPerKeyPerSecond)); err != nil {
			return rep, err
		}
	}
}

// migratedState is the DefaultFormat state of seq h+1 holding h's shards
// (they stay as they are stored: a reader opens plain shards and frames
// alike). A format-5 bucket's byte bound, when it is format 5's default,
// becomes format 6's: the shards a later commit writes are frames.
func migratedState(h Head) Head {
	m := h.Manifest
	n := &Manifest{Format: DefaultFormat, Seq: m.Seq + 1, Shards: m.Shards, Fences: m.Fences, ShardMaxEntries: m.ShardMaxEntries, ShardMaxBytes: m.ShardMaxBytes}
	if m.Format == DeltaFormat && m.ShardMaxBytes == DefaultShardMaxBytes {
		n.ShardMaxBytes = DefaultShardMaxBytes6
	}
	if n.Shards == nil {
		n.Shards = []ShardRef{}
	}
	if len(n.Fences) == 0 {
		n.Fences = nil
	}
	if m.Format >= LogFormat {
		// The log continues: the state names its predecessor's.
		n.Prev = h.stateHash()
	}
	return Head{Manifest: n, Data: EncodeManifest(n)}
}

// migrateOnce writes the migration commit on the head h; a lost race is
// a precondition error.
func migrateOnce(ctx context.Context, b backend.Backend, h Head, now func() time.Time, rep *MigrateReport) error {
	s := migratedState(h)
	seq := s.Manifest.Seq
	r, _ := rootOf(s)
	root := encodeRoot(r)
	if h.Manifest.Format < LogFormat {
		rep.Writes = append(rep.Writes, HistoryKey(h.Manifest.Seq))
		for _, p := range r.Pages {
			rep.Writes = append(rep.Writes, PageKey(p.ID))
		}
		rep.Writes = append(rep.Writes, CheckpointKey(seq), HistoryKey(genesisSeq), ManifestKey, LogKey(seq))
		if rep.DryRun {
			return nil
		}
		// Before the commit point only what no format-3 reader reads:
		// N's history copy (what every format-3 commit writes), the
		// checkpoint of N+1, the marker (a reader that finds the root as
		// the hint and no log entry reads checkpoints only when the
		// marker says so).
		if err := WriteHistory(ctx, b, h); err != nil {
			return err
		}
		if _, _, err := writeCheckpoint(ctx, b, s, nil); err != nil {
			return err
		}
		if err := writeMarker(ctx, b); err != nil {
			return err
		}
		_, err := backend.PutBytes(ctx, b, ManifestKey, root, backend.Cond{IfMatch: h.Version})
		if err != nil && !backend.IsPrecondition(err) && ctx.Err() == nil {
			// Unknown outcome: our root there means it landed.
			data, _, rerr := readBounded(ctx, b, ManifestKey, backend.GetOptions{}, MaxManifestBytes)
			if rerr == nil && string(data) == string(root) {
				err = nil
			}
		}
		if backend.IsPrecondition(err) {
			// Lost the race to a format-3 commit: the checkpoint of N+1
			// holds a state no commit made, and a reader that lists
			// checkpoints must not start from it. (A migration killed
			// right here leaves it; the next migration's success deletes
			// every checkpoint below its seq.)
			if derr := b.Delete(ctx, CheckpointKey(seq), backend.Cond{}); derr != nil && !backend.IsNotExist(derr) {
				return errors.Join(err, fmt.Errorf("migrate: delete the checkpoint of the lost attempt: %w", derr))
			}
			return err
		}
		if err != nil {
			return err
		}
		return writeResetEntry(ctx, b, s)
	}
	// Formats 4 and 5: the log entry N+1 is the commit point; its delta
	// carries nothing but the format (and a format-5 bucket's new byte
	// bound).
	d, _ := diffState(h, s.Manifest, s.Data, 0)
	d.Checkpoint = true // its checkpoint is written below
	entry := encodeDelta(d)
	// A format-5 bucket's marker is a root already, which every reader of
	// the log of deltas reads as such; a format-4 one becomes one.
	marker := h.Manifest.Format == LogFormat
	if marker {
		rep.Writes = append(rep.Writes, HistoryKey(genesisSeq))
	}
	rep.Writes = append(rep.Writes, LogKey(seq))
	for _, p := range r.Pages {
		rep.Writes = append(rep.Writes, PageKey(p.ID))
	}
	rep.Writes = append(rep.Writes, CheckpointKey(seq), ManifestKey)
	if rep.DryRun {
		return nil
	}
	if marker {
		if err := writeMarker(ctx, b); err != nil {
			return err
		}
	}
	if !h.fresh(now()) {
		// An old observation of the head: read it again first.
		return fmt.Errorf("migrate: %w", backend.ErrPrecondition)
	}
	_, err := backend.PutBytes(ctx, b, LogKey(seq), entry, backend.Cond{IfAbsent: true})
	if err != nil && !backend.IsPrecondition(err) && ctx.Err() == nil {
		got, _, ok, rerr := readLogRaw(ctx, b, seq)
		if rerr == nil && ok && string(got) == string(entry) {
			err = nil
		}
	}
	if err != nil {
		return err
	}
	// After the commit point: best effort here, finished by a re-run.
	if _, _, err := writeCheckpoint(ctx, b, s, nil); err != nil {
		return err
	}
	_, err = backend.PutBytes(ctx, b, ManifestKey, root, backend.Cond{})
	return err
}

// dropStaleCheckpoints deletes the checkpoints below seq, the migration's
// commit: a bucket that was in format 2, 3 or 4 until seq has no state of
// the log of deltas below it, so any there was written by an attempt that
// lost its race and was killed before it could delete it.
func dropStaleCheckpoints(ctx context.Context, b backend.Backend, seq uint64, rep *MigrateReport) error {
	if rep.DryRun {
		return nil
	}
	cps, _, err := listCheckpoints(ctx, b)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, c := range cps {
		if c >= seq {
			break
		}
		if err := b.Delete(ctx, CheckpointKey(c), backend.Cond{}); err != nil && !backend.IsNotExist(err) {
			return fmt.Errorf("migrate: delete a stale checkpoint: %w", err)
		}
	}
	return nil
}

// writeResetEntry creates the log entry of the state s, a reset (its
// whole shard list, needing no entry before it), unless one is there. A
// migration from format 2 or 3 commits by the manifest's swap, so its seq
// has no entry otherwise, and a cold reader, which checks that the entry
// of the checkpoint it starts from is still there, would take the slow
// path (list the log and the checkpoints) until the next commit.
func writeResetEntry(ctx context.Context, b backend.Backend, s Head) error {
	d, _ := diffState(Head{Manifest: &Manifest{Seq: s.Manifest.Seq - 1}}, s.Manifest, s.Data, 0)
	_, err := backend.PutBytes(ctx, b, LogKey(s.Manifest.Seq), encodeDelta(d), backend.Cond{IfAbsent: true})
	if err != nil && !backend.IsPrecondition(err) {
		return fmt.Errorf("migrate: write the log entry of seq %d: %w", s.Manifest.Seq, err)
	}
	return nil
}

// finishMigration writes what follows a migration's commit point: the
// log entry of a migration from format 3, when the head is still the
// migration's and has none, and the marker of a DeltaFormat bucket (a
// root), which tells a reader that finds no hint and no log entry to read
// checkpoints.
func finishMigration(ctx context.Context, b backend.Backend, h Head, rep *MigrateReport) error {
	if isDeltaLog(h.Manifest.Format) && h.Manifest.Prev == "" && h.Data != nil {
		seqs, _, err := logSeqs(ctx, b)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if !slices.Contains(seqs, h.Manifest.Seq) && (len(seqs) == 0 || seqs[len(seqs)-1] < h.Manifest.Seq) {
			rep.Writes = append(rep.Writes, LogKey(h.Manifest.Seq))
			rep.Finished = rep.Already
			if !rep.DryRun {
				if err := writeResetEntry(ctx, b, Head{Manifest: h.Manifest, Data: EncodeManifest(h.Manifest)}); err != nil {
					return err
				}
			}
		}
	}
	data, _, err := readBounded(ctx, b, HistoryKey(genesisSeq), backend.GetOptions{}, MaxManifestBytes)
	if err == nil && isRoot(data) {
		return nil
	}
	if err != nil && !backend.IsNotExist(err) && !errors.Is(err, ErrCorruptIndex) {
		return fmt.Errorf("migrate: read the marker: %w", err)
	}
	rep.Writes = append(rep.Writes, HistoryKey(genesisSeq))
	rep.Finished = rep.Already
	if rep.DryRun {
		return nil
	}
	return writeMarker(ctx, b)
}

// writeMarker writes the marker of a DeltaFormat bucket. Every such marker
// is the same bytes: a plain write replaces a format-4 marker, and two
// migrations write the same.
func writeMarker(ctx context.Context, b backend.Backend) error {
	marker, _ := genesisDelta(DefaultFormat)
	if _, err := backend.PutBytes(ctx, b, HistoryKey(genesisSeq), marker, backend.Cond{ContentNamed: true}); err != nil {
		return fmt.Errorf("migrate: write the marker: %w", err)
	}
	return nil
}
