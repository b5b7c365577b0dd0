package index

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/internal/backoff"
)

// ErrCommitContention is returned (wrapped, with the attempts and why each
// failed) when a commit did not land within its bounded attempts.
var ErrCommitContention = errors.New("commit: too much contention on the manifest")

// DefaultCommitAttempts bounds the manifest writes of one Commit when
// CommitOptions.Attempts is zero.
const DefaultCommitAttempts = 12

// DefaultPacedWait is CommitOptions.PacedWait when zero. A race lost in
// the log is another writer's commit landing: the bucket made progress,
// so a writer among many keeps retrying for its turn. A minute is a turn
// for hundreds of writers; past it something is failing, not racing.
const DefaultPacedWait = time.Minute

// Proposal is what one commit attempt proposes on top of its base.
type Proposal struct {
	// Next is the manifest to write: its Seq must be the base's plus one.
	// Nil means nothing to commit (everything is there already).
	Next *Manifest
	// Write, when set, stores what Next references that is not stored yet
	// (new shards). It runs before the log entry is created; an error
	// ends the commit with nothing committed.
	Write func(ctx context.Context) error
	// After, when set, runs once Write has stored the
	// shards and before the entry is created. It is for a proposal built
	// on a predecessor still in flight (Announce, pipelined commits): it
	// waits for that predecessor and returns the head it landed as. A head
	// of other bytes than the base, or an error, is a lost race: the base
	// is read again and the proposal rebuilt, so an entry is never created
	// on a predecessor that did not land.
	After func(ctx context.Context) (Head, error)
	// Announce, when set, is called once the entry's predecessor is
	// settled (After returned), just before the entry is created, with the
	// head the entry makes if it lands: a writer hands it to the commit
	// that will build on it (pipelined commits). It is the state the entry
	// is encoded from, built once for both.
	Announce func(spec Head)
}

// CommitOptions modify a Commit.
type CommitOptions struct {
	// Attempts bounds the attempts that failed other than by a lost race
	// (unknown outcomes); 0 means DefaultCommitAttempts.
	Attempts int
	// PacedWait bounds the time spent retrying lost races, which do not
	// count against Attempts. 0 means DefaultPacedWait.
	PacedWait time.Duration
	// Read re-reads the base after a lost race or an unsettled outcome;
	// nil means ReadManifest. The engine passes its own, which checks for
	// rollback and answers from its cache when nothing changed.
	Read func(ctx context.Context) (Head, error)
	// Now is the clock log observations are measured by; nil means
	// time.Now.
	Now func() time.Time
	// CheckpointEvery: in a DeltaFormat bucket, a commit of a seq that is
	// a multiple of it writes a checkpoint (a writer's choice, not the
	// format's); 0 means DefaultCheckpointEvery.
	CheckpointEvery int
}

// CommitResult is what a Commit did.
type CommitResult struct {
	// Head is the manifest written or, when Noop, the base last read.
	Head Head
	// Attempts counts the manifest writes sent.
	Attempts int
	// Noop is true when build proposed nothing.
	Noop bool
}

// Commit is the one way a bucket's state is superseded: the
// create-if-absent of the log entry that follows base (FORMAT.md, "The
// commit"). Each attempt calls build with a base (first the given one,
// then a fresh read), stores the proposal's own objects, then creates the
// entry. A write whose outcome is unknown (an error that is not a clean
// precondition failure) is settled by reading the entry back, never by
// writing again blindly: our bytes there mean it landed. A lost race or
// an unsettled outcome is retried after a short jittered backoff, with
// build re-invoked on the fresh base, so build must merge only its own
// changes and be safe to repeat (a change already in the base is not a
// change). Lost races are bounded by CommitOptions.PacedWait, other
// failures by the attempts; past either the error wraps
// ErrCommitContention and says how many attempts failed and why.
//
// A bucket with no state yet is created in the format this silt writes
// (DefaultFormat). A bucket in an older format is refused with a
// *MigrateRequiredError before anything is written. On a store with
// neither compare-and-swap nor create-if-absent the caller must hold the
// commit lock and pass the store through SerializedCreate.
func Commit(ctx context.Context, b backend.Backend, base Head, build func(ctx context.Context, base Head) (Proposal, error), opts CommitOptions) (CommitResult, error) {
	attempts := opts.Attempts
	if attempts <= 0 {
		attempts = DefaultCommitAttempts
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	read := opts.Read
	if read == nil {
		read = func(ctx context.Context) (Head, error) { return readHead(ctx, b, backend.GetOptions{}, now) }
	}
	caps := b.Capabilities()
	pacedWait := opts.PacedWait
	if pacedWait <= 0 {
		pacedWait = DefaultPacedWait
	}
	start := time.Now()
	var lost, unknown int
	var last error
	for attempt := 0; ; attempt++ {
		if attempt > 0 || base.IsLog() && !base.fresh(now()) {
			var err error
			if base, err = read(ctx); err != nil {
				return CommitResult{Attempts: attempt}, err
			}
		}
		if base.Version == "" {
			if !caps.ConditionalPut && !caps.AtomicCreate {
				return CommitResult{Attempts: attempt}, fmt.Errorf("commit: %w", ErrNoConditionalWrites)
			}
			g, err := createLog(ctx, b, now)
			switch {
			case backend.IsPrecondition(err): // another writer created the bucket
				lost++
				last = err
				if attempt+1 >= attempts {
					return CommitResult{Attempts: attempt + 1}, fmt.Errorf("%w (%d attempts; last: %w)", ErrCommitContention, attempt+1, last)
				}
				if err := backoff.Sleep(ctx, Backoff(attempt, 0)); err != nil {
					return CommitResult{Attempts: attempt + 1}, err
				}
				continue
			case err != nil:
				return CommitResult{Attempts: attempt}, err
			}
			base = g
		}
		if err := Writable(base); err != nil {
			return CommitResult{Attempts: attempt}, err
		}
		p, err := build(ctx, base)
		if err != nil {
			return CommitResult{Attempts: attempt}, err
		}
		if p.Next == nil {
			return CommitResult{Head: base, Attempts: attempt, Noop: true}, nil
		}
		if want := base.Manifest.Seq + 1; p.Next.Seq != want {
			return CommitResult{Attempts: attempt}, fmt.Errorf("commit: proposed seq %d on base %d (want %d)", p.Next.Seq, base.Manifest.Seq, want)
		}
		if p.Write != nil {
			if err := p.Write(ctx); err != nil {
				return CommitResult{Attempts: attempt}, err
			}
		}
		var h Head
		base, err = landed(ctx, p, base)
		if err == nil {
			h, err = commitLog(ctx, b, base, p.Next, now, opts.CheckpointEvery, p.Announce)
		}
		switch {
		case err == nil:
			return CommitResult{Head: h, Attempts: attempt + 1}, nil
		case ctx.Err() != nil:
			return CommitResult{Attempts: attempt + 1}, ctx.Err()
		case backend.IsPrecondition(err) || errors.Is(err, errLogStale) || errors.Is(err, errNotLanded):
			lost++
		case backend.IsRetryable(err) || errors.Is(err, backend.ErrOutcomeUnknown):
			unknown++
		default:
			return CommitResult{Attempts: attempt + 1}, fmt.Errorf("write log entry %d: %w", p.Next.Seq, err)
		}
		last = err
		// A race lost in the log is another writer's commit landing:
		// the bucket made progress, and the retry is cheap (the new
		// head is one entry). So lost races are bounded by time, as a
		// paced store's refusals are, and only other failures by the
		// attempts; a writer among many keeps its turn coming.
		if attempt+1-lost >= attempts || time.Since(start) >= pacedWait {
			why := fmt.Sprintf("%d attempts over %s: %d lost races, %d unknown outcomes", attempt+1, time.Since(start).Round(time.Millisecond), lost, unknown)
			return CommitResult{Attempts: attempt + 1}, fmt.Errorf("%w (%s; last: %w)", ErrCommitContention, why, last)
		}
		// Each seq is its own key: no per-key limit paces the retries.
		if err := backoff.Sleep(ctx, logBackoff.Wait(attempt)); err != nil {
			return CommitResult{Attempts: attempt + 1}, err
		}
	}
}

// errNotLanded: the predecessor a proposal was built on did not land as
// speculated. It is a lost race.
var errNotLanded = errors.New("the predecessor the commit was built on did not land")

// landed returns the base a log proposal commits on: base itself, or, for
// a proposal built on a speculated predecessor (Proposal.After), that
// predecessor as it landed, which must be base's bytes; errNotLanded when
// it did not land so.
func landed(ctx context.Context, p Proposal, base Head) (Head, error) {
	if p.After == nil {
		return base, nil
	}
	h, err := p.After(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		return base, ctx.Err()
	case err != nil:
		return base, fmt.Errorf("%w: %w", errNotLanded, err)
	case !h.Same(base):
		return base, fmt.Errorf("%w: it landed as another entry", errNotLanded)
	}
	return h, nil
}

// Backoff is the wait before retry attempt+1 of a manifest write: full
// jitter over an exponential bound (10 ms doubling, at most 2 s), never
// shorter than the store's per-key mutation limit allows.
func Backoff(attempt int, perKeyPerSec float64) time.Duration {
	d := commitBackoff.Wait(attempt)
	if perKeyPerSec > 0 {
		d = max(d, time.Duration(float64(time.Second)/perKeyPerSec))
	}
	return d
}

// logBackoff bounds the waits between log commit attempts: a lost race
// there has already shown the new head, so the retry only needs to fall
// out of step with the other losers, not to wait for a slot.
var logBackoff = backoff.Exp{Base: 2 * time.Millisecond, Max: 100 * time.Millisecond}

// commitBackoff bounds the waits of Backoff.
var commitBackoff = backoff.Exp{Base: 10 * time.Millisecond, Max: 2 * time.Second}
