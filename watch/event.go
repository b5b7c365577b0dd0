package watch

import (
	"errors"
	"fmt"
	"time"

	"github.com/siltsync/silt/syncer"
)

// Kind says what an [Event] reports.
type Kind string

// Kinds of [Event].
const (
	// KindStarted: the first sync is done and the loop runs; Dirs and
	// Notify say how local changes are found.
	KindStarted Kind = "started"
	// KindPull: a pull ran (Stats); most find nothing ([Event.Changed]).
	KindPull Kind = "pull"
	// KindPush: a push ran (Stats), of the paths events named or, with
	// Trigger "walk", of the whole cache.
	KindPush Kind = "push"
	// KindError: a step failed (Err); it is tried again in Retry.
	KindError Kind = "error"
	// KindRecovered: a step succeeded after failures; nothing more is
	// pending from them.
	KindRecovered Kind = "recovered"
	// KindStopped: the loop ended; it is the last event.
	KindStopped Kind = "stopped"
)

// Triggers: what started a step.
const (
	TriggerStart    = "start"    // the first sync
	TriggerEvents   = "events"   // file-system events, debounced
	TriggerPoll     = "poll"     // the remote poll
	TriggerWalk     = "walk"     // the periodic walk of the whole cache
	TriggerOverflow = "overflow" // the kernel dropped events: a walk
)

// Event is one step of a watch, or a change of its state. Only the
// fields of its Kind are set.
type Event struct {
	Kind Kind      `json:"kind"`
	At   time.Time `json:"at"`
	// Trigger is what started the step (Trigger* constants).
	Trigger string `json:"trigger,omitempty"`
	// Stats are the step's pull or push statistics, conflicts included.
	Stats *syncer.Stats `json:"stats,omitempty"`
	// Reported counts the Stats.Conflicts an earlier event of this watch
	// reported already: a conflict stays until it is resolved, and every
	// pull that reads its shard lists it again.
	Reported int `json:"reported,omitempty"`
	// Err is why the step failed (KindError), or why the loop stopped;
	// Error is its text, for JSON.
	Err   error  `json:"-"`
	Error string `json:"error,omitempty"`
	// Retry is how long until the failed step is tried again; RetryMs
	// is the same in milliseconds, for JSON.
	Retry   time.Duration `json:"-"`
	RetryMs int64         `json:"retryMs,omitempty"`
	// Failures counts the failed steps in a row (KindError, KindRecovered).
	Failures int `json:"failures,omitempty"`
	// Dirs is how many directories are watched for events (KindStarted);
	// Notify is false when the file system gives none, and only walks
	// find local changes.
	Dirs   int  `json:"dirs,omitempty"`
	Notify bool `json:"notify,omitempty"`
}

// Changed reports whether the step changed the cache or the bucket, or
// found a conflict not reported before: the steps worth a line of
// output. A pull that found the manifest unchanged did not.
func (e Event) Changed() bool {
	if e.Stats == nil {
		return e.Kind != KindPull && e.Kind != KindPush
	}
	f := e.Stats.Files
	return f.Downloaded+f.Uploaded+f.Deduplicated+f.Deleted+f.Removed > 0 || f.Conflicts > e.Reported || e.Stats.Commit != nil
}

// StepError is returned by [Run] for a failure retrying cannot mend: the
// step (a Trigger*) and the engine's error.
type StepError struct {
	Step string
	Err  error
}

func (e *StepError) Error() string { return fmt.Sprintf("watch: %s: %v", e.Step, e.Err) }

// Unwrap returns the engine's error.
func (e *StepError) Unwrap() error { return e.Err }

// ErrInvalidOptions is matched (errors.Is) by the error of [Run] given a
// negative Debounce or MaxBackoff, or a nil Cache.
var ErrInvalidOptions = errors.New("watch: invalid options")

// permanent reports whether err is one retrying cannot mend: the loop
// stops on it instead of backing off forever.
func permanent(err error) bool {
	return errors.Is(err, syncer.ErrClosed) || errors.Is(err, syncer.ErrInvalidOption) ||
		errors.Is(err, syncer.ErrBadPattern)
}
