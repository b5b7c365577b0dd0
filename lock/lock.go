package lock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/siltsync/silt/backend"
)

// Defaults of the host contract (swamp's DistributedLock).
const (
	DefaultTTL           = 30 * time.Second
	DefaultRetryInterval = time.Second
	DefaultMaxWait       = 60 * time.Second
)

// ErrTimeout is returned, inside a [*TimeoutError], when Acquire gives up
// after Options.MaxWait because someone else holds the lock.
var ErrTimeout = errors.New("lock: timed out waiting for the holder")

// ErrLost is returned by [WithLock] when the lease was lost before the
// callback returned, and is the cause (see context.Cause) of a lease
// context cancelled for that reason.
var ErrLost = errors.New("lock: lease lost")

// ErrFormat is returned when the lock object exists but is not a lock
// record this package can read; the lock refuses to overwrite what it does
// not understand.
var ErrFormat = errors.New("lock: unreadable lock object")

// Options configure a Lock. The zero value gives the host contract's
// defaults.
type Options struct {
	// TTL is how long the lock outlives its holder's silence: a waiter
	// may take it over once the lock object has not changed for TTL, by the
	// waiter's own clock. The holder heartbeats every TTL/3. Zero means
	// DefaultTTL; it is stored in whole milliseconds, rounded up.
	TTL time.Duration
	// RetryInterval is the mean pause between attempts while waiting
	// (jittered by ±50% so waiters do not poll in step). Zero means
	// DefaultRetryInterval.
	RetryInterval time.Duration
	// MaxWait bounds how long Acquire waits. Zero means DefaultMaxWait; a
	// negative value makes Acquire try once and not wait.
	MaxWait time.Duration
	// Holder names the holder for people reading the lock object. Empty
	// means "user@hostname".
	Holder string
	// PID and Hostname name the holder's process in the lock object; zero
	// values mean this process and this machine. A service that holds a
	// lock for a client passes the client's, so readers see who holds it.
	PID      int
	Hostname string
	// Clock is the time source; nil means the real clock. Tests inject a
	// fake one to pause a holder or skew clocks without sleeping.
	Clock Clock
}

// Clock is a source of time. Only differences between its own readings
// are used for decisions, never a comparison with another machine's
// clock, so a Clock need not agree with anyone's.
type Clock interface {
	// Now returns the current time. The real clock's readings carry Go's
	// monotonic reading, so their differences ignore wall-clock steps.
	Now() time.Time
	// NewTimer returns a timer that fires once, d from now.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer from a [Clock].
type Timer interface {
	// C delivers the time when the timer fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
}

type realClock struct{}

func (realClock) Now() time.Time                 { return time.Now() }
func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time { return t.t.C }
func (t realTimer) Stop() bool          { return t.t.Stop() }

// Lock is a distributed lock named by one key of a backend. It holds no
// state between calls, so one Lock may serve many acquisitions, one after
// another or from several goroutines (which then contend like processes).
type Lock struct {
	b        backend.Backend
	key      string
	ttl      time.Duration
	retry    time.Duration
	maxWait  time.Duration
	holder   string
	hostname string
	pid      int
	clock    Clock
	proto    protocol
}

// New returns a lock on key in b. It does no I/O. Backends with
// compare-and-swap (Capabilities().ConditionalPut) get the full protocol;
// those with only create-if-absent get a weaker one (see the package
// documentation); others are refused with an error wrapping
// backend.ErrNotSupported.
func New(b backend.Backend, key string, opts Options) (*Lock, error) {
	if err := backend.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	l := &Lock{b: b, key: key, ttl: opts.TTL, retry: opts.RetryInterval, maxWait: opts.MaxWait,
		holder: opts.Holder, pid: os.Getpid(), clock: opts.Clock}
	switch {
	case l.ttl == 0:
		l.ttl = DefaultTTL
	case l.ttl < time.Millisecond:
		return nil, fmt.Errorf("lock %q: TTL %v is below the 1ms resolution of the lock record", key, l.ttl)
	}
	switch {
	case l.retry == 0:
		l.retry = DefaultRetryInterval
	case l.retry < 0:
		return nil, fmt.Errorf("lock %q: negative RetryInterval %v", key, l.retry)
	}
	if l.maxWait == 0 {
		l.maxWait = DefaultMaxWait
	}
	if l.clock == nil {
		l.clock = realClock{}
	}
	l.hostname, _ = os.Hostname() // informational only: an unknown host is not a reason to refuse a lock
	if opts.Hostname != "" {
		l.hostname = opts.Hostname
	}
	if opts.PID > 0 {
		l.pid = opts.PID
	}
	if l.holder == "" {
		l.holder = defaultHolder(l.hostname)
	}
	caps := b.Capabilities()
	switch {
	case caps.ConditionalPut:
		l.proto = casProto{l}
	case caps.AtomicCreate:
		if err := backend.ValidateKey(key + fenceSuffix); err != nil {
			return nil, fmt.Errorf("lock: fencing counter: %w", err)
		}
		l.proto = createProto{l: l, condDelete: caps.ConditionalDelete}
	default:
		return nil, fmt.Errorf("lock %q: backend has neither compare-and-swap nor create-if-absent: %w", key, backend.ErrNotSupported)
	}
	return l, nil
}

func defaultHolder(hostname string) string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	return name + "@" + hostname
}

// Key returns the key of the lock object.
func (l *Lock) Key() string { return l.key }

// Info describes a holder, as recorded in the lock object.
type Info struct {
	Holder     string
	Hostname   string
	PID        int
	AcquiredAt time.Time // by the holder's clock: for people, never for staleness
	// HeartbeatAt is the holder's last heartbeat by its clock (AcquiredAt
	// until the first one): a host that judges staleness by a timestamp
	// must read this one, since AcquiredAt never moves.
	HeartbeatAt time.Time
	TTL         time.Duration // the holder's TTL, which waiters honour
	Nonce       string        // names this acquisition, for ForceRelease
	Token       uint64        // fencing token of this acquisition
}

// String describes the holder for error messages.
func (i Info) String() string {
	return fmt.Sprintf("%q (pid %d on %s, token %d, acquired %s)", i.Holder, i.PID, i.Hostname,
		i.Token, i.AcquiredAt.Format(time.RFC3339))
}

// TimeoutError is returned when Acquire waited Options.MaxWait without
// getting the lock. It matches ErrTimeout with errors.Is.
type TimeoutError struct {
	Key    string
	Holder Info          // the last holder seen; zero if none was seen
	Waited time.Duration // by the waiter's clock
	Err    error         // the last transient backend error, if the wait ended on one
}

func (e *TimeoutError) Error() string {
	msg := fmt.Sprintf("lock %q: gave up after %v", e.Key, e.Waited.Round(time.Millisecond))
	if e.Holder.Nonce != "" {
		msg += fmt.Sprintf("; held by %v", e.Holder)
	}
	if e.Err != nil {
		msg += "; last error: " + e.Err.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrTimeout) true.
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

// Unwrap returns the last transient error, so errors.As can reach it.
func (e *TimeoutError) Unwrap() error { return e.Err }

// Inspect returns the current holder, or nil when the lock is free. It
// writes nothing.
func (l *Lock) Inspect(ctx context.Context) (*Info, error) {
	obs, err := l.read(ctx)
	if err != nil || obs.rec == nil || obs.rec.Released {
		return nil, err
	}
	info := obs.rec.info()
	return &info, nil
}

// ForceRelease frees the lock if, and only if, it is held under nonce (a
// break-glass for a holder known to be gone). It reports whether it freed
// it. The holder, if alive, learns of it at its next heartbeat.
func (l *Lock) ForceRelease(ctx context.Context, nonce string) (bool, error) {
	if nonce == "" {
		return false, nil
	}
	ok, err := l.proto.release(ctx, "", record{Nonce: nonce})
	if err != nil {
		return false, fmt.Errorf("lock %q: force release: %w", l.key, err)
	}
	return ok, nil
}
