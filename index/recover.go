package index

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/siltsync/silt/backend"
)

// ErrNoSnapshot is returned by Recover when the snapshot it was asked for,
// or every snapshot when none was named, cannot be read.
var ErrNoSnapshot = errors.New("no readable snapshot to recover")

// RecoverOptions select what Recover re-commits.
type RecoverOptions struct {
	// Seq is the snapshot to re-commit (the current manifest or a history
	// copy); 0 means the newest readable one.
	Seq uint64
	// DryRun reports what would be committed and writes nothing.
	DryRun bool
}

// RecoverSkip is a snapshot Recover passed over, and why.
type RecoverSkip struct {
	Seq    uint64 `json:"seq"`
	Reason string `json:"reason"`
}

// RecoverReport is what Recover found and did.
type RecoverReport struct {
	// Manifest is the state of the manifest as found: "ok", "missing" or
	// "unreadable: ...".
	Manifest string `json:"manifest"`
	// Current is the seq of the manifest as found (0 unless "ok").
	Current uint64 `json:"current"`
	// History counts the history copies listed; Newest is the newest one.
	History int    `json:"history"`
	Newest  uint64 `json:"newest_history"`
	// From is the snapshot re-committed (or, with NoOp, the one current).
	From uint64 `json:"from"`
	// Seq is the new commit's seq (0 when nothing was written).
	Seq uint64 `json:"seq"`
	// Entries and Shards describe the snapshot re-committed.
	Entries int `json:"entries"`
	Shards  int `json:"shards"`
	// Skipped are newer snapshots that could not be read.
	Skipped []RecoverSkip `json:"skipped"`
	// NoOp is true when the current manifest already is the snapshot
	// asked for (or the newest readable one): nothing was written.
	NoOp bool `json:"noop"`
	// DryRun is true when nothing was written.
	DryRun bool `json:"dry_run"`
}

// Recover re-commits a snapshot as a new commit: the newest readable one
// (the current manifest when it is whole, else the newest history copy
// whose shards all read), or opts.Seq. The new manifest lists that
// snapshot's shards (they are immutable) at a seq above every seq the
// bucket shows, so a lost, damaged or replaced manifest, or a bad push, is
// undone in one commit and every cache sees it as newer than anything it
// saw. Nothing else is written or removed. It commits through Commit,
// once, and needs a store with compare-and-swap. When the manifest is
// missing or older than the history, the new seq skips the one the lost
// manifest must have held (the newest history copy's seq + 1), so no cache
// that saw that manifest takes the new one for a fork of it.
func Recover(ctx context.Context, b backend.Backend, opts RecoverOptions) (RecoverReport, error) {
	rep := RecoverReport{DryRun: opts.DryRun, Skipped: []RecoverSkip{}}
	cur, curErr := readCurrentRaw(ctx, b)
	if curErr == nil && cur.IsLog() {
		return recoverLog(ctx, b, opts, rep)
	}
	if curErr == nil && cur.Version == "" || errors.Is(curErr, errUnreadable) {
		// A log bucket whose hint is gone or damaged: its marker says so,
		// or, if that is gone too, its log entries do (one listing, paid
		// only by recover).
		if log, err := isLogMarker(ctx, b); err == nil && log {
			return recoverLog(ctx, b, opts, rep)
		}
		if seqs, _, err := logSeqs(ctx, b); err == nil && len(seqs) > 0 {
			return recoverLog(ctx, b, opts, rep)
		}
	}
	switch {
	case curErr == nil && cur.Version == "":
		rep.Manifest = "missing"
	case curErr == nil:
		rep.Manifest, rep.Current = "ok", cur.Manifest.Seq
	case errors.Is(curErr, errUnreadable):
		rep.Manifest = "unreadable: " + curErr.Error()
	default:
		return rep, fmt.Errorf("recover: %w", curErr)
	}
	seqs, err := historySeqs(ctx, b)
	if err != nil {
		return rep, fmt.Errorf("recover: %w", err)
	}
	rep.History = len(seqs)
	if len(seqs) > 0 {
		rep.Newest = seqs[len(seqs)-1]
	}
	curOK := curErr == nil && cur.Version != ""
	cands := slices.Clone(seqs)
	if curOK {
		cands = append(cands, cur.Manifest.Seq)
	}
	slices.Sort(cands)
	cands = slices.Compact(cands)
	if opts.Seq != 0 {
		if !slices.Contains(cands, opts.Seq) {
			return rep, fmt.Errorf("recover: snapshot %d: %w (neither the manifest nor a history copy holds it)", opts.Seq, ErrNoSnapshot)
		}
		cands = []uint64{opts.Seq}
	}
	from, found := newestReadable(ctx, b, cands, &rep, func(seq uint64) (Head, error) {
		if curOK && seq == cur.Manifest.Seq {
			return cur, nil
		}
		return ReadHistory(ctx, b, seq)
	})
	if !found {
		if opts.Seq == 0 && len(cands) == 0 {
			rep.NoOp = true // a fresh bucket (or one whose history is gone too): nothing to recover
			return rep, nil
		}
		return rep, fmt.Errorf("recover: %w (%d tried, see skipped)", ErrNoSnapshot, len(rep.Skipped))
	}
	m := from.Manifest
	rep.From, rep.Entries, rep.Shards = m.Seq, m.Entries(), len(m.Shards)
	if curOK && m.Seq == cur.Manifest.Seq {
		rep.NoOp = true
		return rep, nil
	}
	top := max(rep.Current, rep.Newest, m.Seq)
	if len(seqs) > 0 && (!curOK || rep.Current <= rep.Newest) {
		top = max(top, rep.Newest+1) // the lost manifest's seq
	}
	if top >= MaxSeq {
		return rep, fmt.Errorf("recover: seq %d is at MaxSeq: %w", top, ErrCorruptIndex)
	}
	var curM *Manifest
	if curOK {
		curM = cur.Manifest
	}
	next := recovered(m, curM, top+1)
	if opts.DryRun {
		return rep, nil
	}
	if !b.Capabilities().ConditionalPut {
		// Commit would write unconditionally, which is safe only under the
		// commit lock; recover takes none.
		return rep, fmt.Errorf("recover: the store has no compare-and-swap: %w", backend.ErrNotSupported)
	}
	if _, err := recoverCommit(ctx, b, cur, next); err != nil {
		return rep, fmt.Errorf("recover: %w", err)
	}
	rep.Seq = next.Seq
	return rep, nil
}

// newestReadable returns the newest of cands (ascending) that read reads
// and whose shards all read, recording the others in rep.Skipped.
func newestReadable(ctx context.Context, b backend.Backend, cands []uint64, rep *RecoverReport, read func(seq uint64) (Head, error)) (Head, bool) {
	for _, seq := range slices.Backward(cands) {
		h, err := read(seq)
		if err == nil {
			err = readShards(ctx, b, h.Manifest)
		}
		if err != nil {
			rep.Skipped = append(rep.Skipped, RecoverSkip{Seq: seq, Reason: err.Error()})
			continue
		}
		return h, true
	}
	return Head{}, false
}

// recovered is the manifest at seq that re-commits snapshot m over cur
// (nil when there is no readable current manifest).
func recovered(m, cur *Manifest, seq uint64) *Manifest {
	next := &Manifest{Format: FormatVersion, Seq: seq, Shards: slices.Clone(m.Shards), Fences: maps.Clone(m.Fences), ShardMaxEntries: m.ShardMaxEntries, ShardMaxBytes: m.ShardMaxBytes}
	if cur == nil {
		return next
	}
	if next.ShardMaxBytes == 0 {
		next.ShardMaxBytes = cur.ShardMaxBytes
	}
	if next.ShardMaxEntries == 0 {
		// A snapshot from before the bound was recorded keeps the
		// bucket's policy: the one its current manifest records.
		next.ShardMaxEntries = cur.ShardMaxEntries
	}
	// A lock holder fenced out before the recovery stays fenced out.
	for k, tok := range cur.Fences {
		if tok > next.Fences[k] {
			if next.Fences == nil {
				next.Fences = map[string]uint64{}
			}
			next.Fences[k] = tok
		}
	}
	return next
}

// errUnreadable marks a manifest that is there but cannot be decoded.
var errUnreadable = errors.New("unreadable manifest")

// readCurrentRaw reads the manifest for Recover: a missing one is a Head
// without a version (history or not), an undecodable one a Head with its
// version only and an error matching errUnreadable, so the new commit can
// replace it by compare-and-swap.
func readCurrentRaw(ctx context.Context, b backend.Backend) (Head, error) {
	data, info, err := readBounded(ctx, b, ManifestKey, backend.GetOptions{}, MaxManifestBytes)
	if backend.IsNotExist(err) {
		return Head{Manifest: Empty()}, nil
	}
	if err != nil && info.Version == "" {
		return Head{}, fmt.Errorf("read manifest: %w", err)
	}
	if err == nil {
		var m *Manifest
		if m, err = DecodeManifest(ManifestKey, data); err == nil {
			return Head{Manifest: m, Data: data, Version: info.Version, Info: info}, nil
		}
	}
	return Head{Manifest: Empty(), Version: info.Version, Info: info}, fmt.Errorf("%w: %w", errUnreadable, err)
}

// readShards reads and verifies every shard of m.
func readShards(ctx context.Context, b backend.Backend, m *Manifest) error {
	for i := range m.Shards {
		if _, err := ReadShard(ctx, b, m, i); err != nil {
			return err
		}
	}
	return nil
}

// recoverCommit supersedes prev (the manifest as read; without a version
// when missing) with next, once, as a format-3 commit did: the history
// copy of the manifest being superseded, then next by compare-and-swap
// on its version. It is the one write silt still makes in a bucket whose
// manifest is its commit point, and it only re-commits a snapshot the
// bucket already holds. A lost race is an error, since the bucket moved
// while recover ran and recovering again decides on what it holds now.
// The manifest being replaced gets no history copy when it is not the
// tip of the history (an older copy put back, bytes that do not decode):
// the copy would be a lie, and the copy of the seq it holds is already
// there or gone for good.
func recoverCommit(ctx context.Context, b backend.Backend, prev Head, next *Manifest) (Head, error) {
	if prev.Version != "" && prev.Data != nil && prev.Manifest.Seq+1 == next.Seq {
		if err := WriteHistory(ctx, b, prev); err != nil {
			return Head{}, err
		}
	}
	data := EncodeManifest(next)
	var cond backend.Cond
	switch {
	case !b.Capabilities().ConditionalPut: // serialised by the caller's lock
	case prev.Version == "":
		cond = backend.Cond{IfAbsent: true}
	default:
		cond = backend.Cond{IfMatch: prev.Version}
	}
	info, err := backend.PutBytes(ctx, b, ManifestKey, data, cond)
	if err != nil && !backend.IsPrecondition(err) && ctx.Err() == nil {
		// Unknown outcome: our bytes there mean it landed.
		if got, ginfo, rerr := readBounded(ctx, b, ManifestKey, backend.GetOptions{}, MaxManifestBytes); rerr == nil && bytes.Equal(got, data) {
			info, err = ginfo, nil
		}
	}
	if err != nil {
		return Head{}, fmt.Errorf("write manifest: %w", err)
	}
	return Head{Manifest: next, Data: data, Version: info.Version, Info: info}, nil
}
