package watch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/siltsync/silt/internal/backoff"
	"github.com/siltsync/silt/syncer"
)

// Defaults of [Options].
const (
	DefaultPoll       = time.Second
	DefaultDebounce   = 200 * time.Millisecond
	DefaultWalk       = time.Minute
	DefaultMaxBackoff = 30 * time.Second
	// maxPending bounds the paths one push names; past it the push walks
	// the whole cache instead, which costs the same and holds no list.
	maxPending = 10_000
)

// Cache is what a watch drives. *syncer.Syncer satisfies it, and so does
// serve.Cache (a cache owned by another process's service).
type Cache interface {
	Pull(ctx context.Context, opts syncer.PullOptions) (syncer.Stats, error)
	Push(ctx context.Context, opts syncer.PushOptions) (syncer.Stats, error)
	// Root is the directory data paths are relative to: the one watched.
	Root() string
}

// Options tune a watch. The zero value is the defaults.
type Options struct {
	// Poll is how often the remote is read (one conditional request when
	// it did not move); 0 means DefaultPoll, negative never polls.
	Poll time.Duration
	// Debounce is how long the cache must be quiet after a file-system
	// event before its changes are pushed; 0 means DefaultDebounce.
	Debounce time.Duration
	// MaxWait bounds how long events that never pause delay a push; 0
	// means 25 debounces.
	MaxWait time.Duration
	// Walk is how often a push walks the whole cache, in case events were
	// lost; 0 means DefaultWalk, negative never (an overflow still walks).
	// Without file-system events a walk runs at every poll instead.
	Walk time.Duration
	// NoNotify finds local changes by walks only, as on a file system
	// that gives no events.
	NoNotify bool
	// MaxBackoff caps the wait before a failed step is tried again; 0
	// means DefaultMaxBackoff.
	MaxBackoff time.Duration
	// MaxDelete is each push's PushOptions.MaxDelete.
	MaxDelete int
	// Exclude and Include are each operation's extra rules, and keep
	// matching paths out of the watch (see syncer.Config.Exclude).
	Exclude, Include []string
	// OnEvent, when set, is called with each Event, one at a time, from
	// the goroutine that runs the loop: a slow OnEvent delays the watch.
	OnEvent func(Event)
}

func (o Options) withDefaults() (Options, error) {
	if o.Debounce < 0 || o.MaxWait < 0 || o.MaxBackoff < 0 {
		return o, fmt.Errorf("%w: negative Debounce, MaxWait or MaxBackoff", ErrInvalidOptions)
	}
	if o.Poll == 0 {
		o.Poll = DefaultPoll
	}
	if o.Debounce == 0 {
		o.Debounce = DefaultDebounce
	}
	if o.MaxWait == 0 {
		o.MaxWait = 25 * o.Debounce
	}
	if o.Walk == 0 {
		o.Walk = DefaultWalk
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	return o, nil
}

// loop is one running watch. Its fields belong to the goroutine of Run.
type loop struct {
	c    Cache
	opts Options
	n    *notifier // nil: walks only

	pending  map[string]bool // paths events named, not pushed yet
	walkDue  string          // a Trigger when the next push must walk everything
	quietAt  time.Time       // when the pending paths may be pushed
	firstAt  time.Time       // when the oldest pending path arrived
	failures int
	holdTill time.Time // no step before it: the backoff after a failure
	// conflicts are the paths a step reported in conflict, until a step
	// changes them: what makes Event.Reported.
	conflicts map[string]bool
}

// Run keeps c in sync until ctx ends, then returns nil; see the package
// doc for the steps. It returns early only with a [*StepError] retrying
// cannot mend, or ErrInvalidOptions.
func Run(ctx context.Context, c Cache, opts Options) error {
	if c == nil {
		return fmt.Errorf("%w: nil Cache", ErrInvalidOptions)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return err
	}
	m, err := rules(c.Root(), opts.Exclude, opts.Include)
	if err != nil {
		return &StepError{Step: TriggerStart, Err: err}
	}
	l := &loop{c: c, opts: opts, pending: map[string]bool{}, conflicts: map[string]bool{}}
	// Events first, then the first sync: a write during it is pushed
	// next, not missed.
	if !opts.NoNotify {
		if l.n, err = newNotifier(c.Root(), m); err != nil {
			l.emit(Event{Kind: KindError, Trigger: TriggerStart, Err: fmt.Errorf("no file-system events, walking every poll instead: %w", err)})
		} else {
			defer l.n.close()
		}
	}
	err = l.run(ctx)
	if ctx.Err() != nil {
		err = nil // the stop asked for, whatever the cancelled step said
	}
	l.emit(Event{Kind: KindStopped, Err: err})
	return err
}

func (l *loop) emit(e Event) {
	if l.opts.OnEvent == nil {
		return
	}
	e.At = time.Now().UTC()
	if e.Err != nil {
		e.Error = e.Err.Error()
	}
	e.RetryMs = e.Retry.Milliseconds()
	l.opts.OnEvent(e)
}

func (l *loop) run(ctx context.Context) error {
	for {
		// The first sync, retried until it succeeds: a watch started
		// offline begins once the network is there.
		err := l.step(ctx, TriggerStart, func() error {
			if err := l.pull(ctx, TriggerStart); err != nil {
				return err
			}
			return l.push(ctx, TriggerStart, nil)
		})
		if err != nil {
			return err
		}
		if l.failures == 0 {
			break
		}
		if backoff.Sleep(ctx, time.Until(l.holdTill)) != nil {
			return nil
		}
	}
	var events <-chan fsnotify.Event
	var errs <-chan error
	walkEvery := l.opts.Walk
	if l.n != nil {
		events, errs = l.n.w.Events, l.n.w.Errors
	} else if l.opts.Poll > 0 {
		walkEvery = l.opts.Poll
	}
	l.emit(Event{Kind: KindStarted, Dirs: l.dirs(), Notify: l.n != nil})

	pollT := newTimer(l.opts.Poll)
	walkT := newTimer(walkEvery)
	pushT := newTimer(-1) // armed by events
	defer pollT.Stop()
	defer walkT.Stop()
	defer pushT.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			l.onEvent(ev)
			l.arm(pushT)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				l.walkDue = TriggerOverflow
			} else {
				l.emit(Event{Kind: KindError, Trigger: TriggerEvents, Err: err})
			}
			l.arm(pushT)
		case <-pushT.C:
			if l.holding(pushT) {
				continue
			}
			trigger := TriggerEvents
			if l.walkDue != "" {
				trigger = l.walkDue
			}
			paths := l.take()
			err := l.step(ctx, trigger, func() error { return l.push(ctx, trigger, paths) })
			if err != nil {
				return err
			}
			if l.failures > 0 {
				l.putBack(paths, trigger)
				l.arm(pushT)
			}
		case <-pollT.C:
			if l.holding(pollT) {
				continue
			}
			if err := l.step(ctx, TriggerPoll, func() error { return l.pull(ctx, TriggerPoll) }); err != nil {
				return err
			}
			pollT.Reset(l.next(l.opts.Poll))
		case <-walkT.C:
			// The walk is a push: it waits with the debounced paths, so a
			// burst that is still arriving is not pushed half way by it.
			l.walkDue = TriggerWalk
			l.arm(pushT)
			walkT.Reset(walkEvery)
		}
	}
}

// newTimer returns a timer that fires after d, or never for d <= 0.
func newTimer(d time.Duration) *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	if d > 0 {
		t.Reset(d)
	}
	return t
}

func (l *loop) dirs() int {
	if l.n == nil {
		return 0
	}
	return l.n.count()
}

// onEvent notes the path an event names as pending.
func (l *loop) onEvent(ev fsnotify.Event) {
	p, ok, err := l.n.changed(ev)
	if err != nil {
		// Not watched: a walk finds what happens below it.
		l.emit(Event{Kind: KindError, Trigger: TriggerEvents, Err: fmt.Errorf("watch %s: %w", p, err)})
		l.walkDue = TriggerOverflow
	}
	if p == syncer.IgnoreFile {
		if m, err := rules(l.c.Root(), l.opts.Exclude, l.opts.Include); err == nil {
			l.n.setRules(m)
		}
	}
	if !ok {
		return
	}
	now := time.Now()
	if len(l.pending) == 0 && l.walkDue == "" {
		l.firstAt = now
	}
	if len(l.pending) < maxPending {
		l.pending[p] = true
	} else {
		l.walkDue = TriggerOverflow
	}
	l.quietAt = now.Add(l.opts.Debounce)
}

// arm sets the push timer to the moment the pending changes may go: a
// debounce after the last event, but no later than MaxWait after the
// first, and not before the backoff of a failure ends.
func (l *loop) arm(t *time.Timer) {
	if len(l.pending) == 0 && l.walkDue == "" {
		return
	}
	if l.firstAt.IsZero() {
		l.firstAt = time.Now()
	}
	if l.quietAt.IsZero() {
		l.quietAt = time.Now().Add(l.opts.Debounce)
	}
	at := l.quietAt
	if limit := l.firstAt.Add(l.opts.MaxWait); limit.Before(at) {
		at = limit
	}
	if l.holdTill.After(at) {
		at = l.holdTill
	}
	t.Reset(time.Until(at))
}

// holding reports (and re-arms t for later) a step a backoff holds back.
func (l *loop) holding(t *time.Timer) bool {
	if d := time.Until(l.holdTill); d > 0 {
		t.Reset(d)
		return true
	}
	return false
}

// take returns the pending paths (nil: a walk of everything) and clears
// them.
func (l *loop) take() []string {
	var paths []string
	if l.walkDue == "" {
		paths = make([]string, 0, len(l.pending))
		for p := range l.pending {
			paths = append(paths, p)
		}
		slices.Sort(paths)
	}
	clear(l.pending)
	l.walkDue, l.firstAt, l.quietAt = "", time.Time{}, time.Time{}
	return paths
}

// putBack makes the paths of a failed push pending again.
func (l *loop) putBack(paths []string, trigger string) {
	if paths == nil {
		l.walkDue = trigger
	}
	for _, p := range paths {
		l.pending[p] = true
	}
	l.firstAt, l.quietAt = time.Now(), time.Now()
}

// next is the wait before the next poll: every, or the backoff.
func (l *loop) next(every time.Duration) time.Duration {
	return max(every, time.Until(l.holdTill))
}

// step runs fn, keeping the count of failures in a row and the backoff
// they earn. It returns an error only when the loop must stop.
func (l *loop) step(ctx context.Context, trigger string, fn func() error) error {
	err := fn()
	switch {
	case err == nil:
		if l.failures > 0 {
			l.emit(Event{Kind: KindRecovered, Trigger: trigger, Failures: l.failures})
		}
		l.failures, l.holdTill = 0, time.Time{}
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case permanent(err):
		return &StepError{Step: trigger, Err: err}
	}
	wait := backoff.Exp{Base: min(max(l.opts.Poll, l.opts.Debounce, 100*time.Millisecond), l.opts.MaxBackoff), Max: l.opts.MaxBackoff}.Wait(l.failures)
	l.failures++
	l.holdTill = time.Now().Add(wait)
	l.emit(Event{Kind: KindError, Trigger: trigger, Err: err, Retry: wait, Failures: l.failures})
	return nil
}

func (l *loop) pull(ctx context.Context, trigger string) error {
	st, err := l.c.Pull(ctx, syncer.PullOptions{KeepLazy: true, Exclude: l.opts.Exclude, Include: l.opts.Include})
	if err != nil {
		return fmt.Errorf("pull: %w", err)
	}
	l.emit(Event{Kind: KindPull, Trigger: trigger, Stats: &st, Reported: l.reported(st)})
	return nil
}

// push pushes paths, or with nil walks the whole cache (and pushes
// deletions of files it finds absent, as `silt push` does).
func (l *loop) push(ctx context.Context, trigger string, paths []string) error {
	opts := syncer.PushOptions{MaxDelete: l.opts.MaxDelete, Exclude: l.opts.Exclude, Include: l.opts.Include}
	if paths == nil {
		opts.All = true
	} else if len(paths) == 0 {
		return nil
	} else {
		opts.Paths = paths
	}
	st, err := l.c.Push(ctx, opts)
	if err != nil {
		return fmt.Errorf("push: %w", err)
	}
	l.emit(Event{Kind: KindPush, Trigger: trigger, Stats: &st, Reported: l.reported(st)})
	return nil
}

// reported counts the conflicts of st an earlier step reported, and
// notes the new ones; a path the step changed otherwise is settled.
func (l *loop) reported(st syncer.Stats) int {
	for _, ch := range st.Changes {
		if ch.Action != syncer.ActionConflict {
			delete(l.conflicts, ch.Path)
		}
	}
	n := 0
	for _, cf := range st.Conflicts {
		if l.conflicts[cf.Path] {
			n++
		}
		l.conflicts[cf.Path] = true
	}
	return n
}
