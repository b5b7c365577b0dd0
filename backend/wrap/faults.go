package wrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/siltsync/silt/backend"
)

// ErrInjected is returned, wrapped in a retryable [backend.Error], when a
// [Rule] without an Err of its own fires. Tests match it with errors.Is to
// tell an injected failure from a real one.
var ErrInjected = errors.New("injected fault")

// Mode says what a firing [Rule] does to its request.
type Mode int

const (
	// FailBefore returns the error without sending the request, so the
	// store is unchanged: a refused connection, a throttle.
	FailBefore Mode = iota
	// FailAfter sends the request and returns the error in place of its
	// response, whatever the outcome was: a write is applied but its
	// acknowledgement is lost, as when a connection drops after the server
	// committed. With the default (retryable) error this is the
	// unknown-outcome case a conditional write must settle by re-reading.
	FailAfter
	// BreakBody (Get only) returns the object, but its reader fails with
	// the error after half the bytes: a connection reset mid-download.
	BreakBody
	// TruncateBody (Get only) ends the body with io.EOF after half its
	// bytes and no error, so only a size or hash check notices.
	TruncateBody
	// CorruptBody (Get only) inverts the byte in the middle of the body and
	// keeps its length, so only a content hash notices.
	CorruptBody
	// Stall holds the request without sending it until its context ends,
	// as a server that accepts a connection and never answers: only a
	// deadline ([backend.Timeout]) ends it. It then fails with the
	// context's error, as a store's client does.
	Stall
	// StallBody (Get only) returns the object, but its reader blocks after
	// half the bytes until the request's context ends: a socket held open
	// mid-download.
	StallBody
)

// String names the mode in test failures.
func (m Mode) String() string {
	switch m {
	case FailBefore:
		return "FailBefore"
	case FailAfter:
		return "FailAfter"
	case BreakBody:
		return "BreakBody"
	case TruncateBody:
		return "TruncateBody"
	case CorruptBody:
		return "CorruptBody"
	case Stall:
		return "Stall"
	case StallBody:
		return "StallBody"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Rule selects requests and says how to fail them. A request matches when
// Verb, KeyPrefix and Match all accept it; the matching requests are
// numbered from 1 in the order they reach the injector, and the rule fires
// on those numbered Nth to Nth+Times-1.
type Rule struct {
	// Verb selects one kind of request; empty selects every kind. As in
	// [Counting], a conditional Put is VerbCondPut (not VerbPut), and each
	// List page is one VerbList request.
	Verb Verb
	// KeyPrefix selects keys beginning with it; for List it is matched
	// against the listing's prefix.
	KeyPrefix string
	// Match, if set, must also return true. It is called with the
	// injector's lock held, so it must not call the injector.
	Match func(v Verb, key string) bool
	// Nth is the first matching request to fail, counted from 1; 0 means
	// the first.
	Nth int
	// Times is how many matching requests to fail from Nth on. 0 means one
	// when Nth is set, and every one when Nth is 0.
	Times int
	// Mode is how to fail; the zero value is FailBefore.
	Mode Mode
	// Err is returned (or, for BreakBody, read) as is. Nil means a
	// retryable [backend.Error] wrapping [ErrInjected], which is what a
	// dropped connection looks like after a store's classifier.
	Err error
}

// Matches reports whether the rule selects a request, ignoring Nth and
// Times. A test can run an operation once without faults and count the
// matching entries of [Faulty.Requests] to learn how many indices to try.
func (r Rule) Matches(v Verb, key string) bool {
	return (r.Verb == "" || r.Verb == v) && strings.HasPrefix(key, r.KeyPrefix) && (r.Match == nil || r.Match(v, key))
}

func (r Rule) fires(n int) bool {
	first := max(r.Nth, 1)
	switch {
	case n < first:
		return false
	case r.Times > 0:
		return n < first+r.Times
	case r.Nth > 0:
		return n == first
	}
	return true
}

// Faulty is a backend that fails requests chosen by its rules and passes
// the rest to the backend it wraps. It is safe for concurrent use; with
// concurrent requests, "the Nth" is the Nth to reach the injector.
type Faulty struct {
	layer

	mu    sync.Mutex
	rules []*ruleState
	log   []Request
	fired int
}

type ruleState struct {
	Rule
	seen int // matching requests so far
}

// fault is what one firing rule does to one request.
type fault struct {
	mode Mode
	err  error
}

// Faults wraps b in a fault injector with no rules.
func Faults(b backend.Backend) *Faulty { return &Faulty{layer: b} }

var _ backend.Backend = (*Faulty)(nil)

// Unwrap returns the wrapped backend.
func (f *Faulty) Unwrap() backend.Backend { return f.layer }

// Add installs a rule. Rules count matching requests from when they are
// added; when several select one request, the earliest added fires. Add
// panics on a rule that could never mean anything (a body mode on a verb
// other than Get, a negative Nth or Times), since that is a bug in a test.
func (f *Faulty) Add(r Rule) {
	switch {
	case r.Mode < FailBefore || r.Mode > StallBody:
		panic(fmt.Sprintf("wrap: unknown %v", r.Mode))
	case r.Mode > FailAfter && r.Mode != Stall && r.Verb != VerbGet:
		panic(fmt.Sprintf("wrap: %v needs Verb VerbGet, not %q", r.Mode, r.Verb))
	case r.Nth < 0 || r.Times < 0:
		panic(fmt.Sprintf("wrap: negative Nth (%d) or Times (%d)", r.Nth, r.Times))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, &ruleState{Rule: r})
}

// Reset removes every rule and clears the request log and fired count, so
// one injector can serve each iteration of a loop over fault positions.
func (f *Faulty) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules, f.log, f.fired = nil, nil, 0
}

// Requests returns a copy of every request that reached the injector, in
// order (at most the first million), whether or not a rule fired on it.
func (f *Faulty) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.log...)
}

// Fired returns how many requests a rule has fired on, so a test can check
// that its fault was injected at all rather than passing vacuously.
func (f *Faulty) Fired() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fired
}

// decide logs one request and returns the fault to inject, or nil.
func (f *Faulty) decide(v Verb, key string) *fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.log) < maxLog {
		f.log = append(f.log, Request{v, key})
	}
	var hit *fault
	for _, r := range f.rules {
		if !r.Matches(v, key) {
			continue
		}
		r.seen++
		if hit == nil && r.fires(r.seen) {
			hit = &fault{mode: r.Mode, err: r.Err}
			if hit.err == nil {
				hit.err = backend.Retryable(opName(v), key, ErrInjected)
			}
			f.fired++
		}
	}
	return hit
}

// opName is the backend.Error Op a store would report for v.
func opName(v Verb) string {
	if v == VerbCondPut {
		return "put"
	}
	return string(v)
}

// Get implements backend.Backend.
func (f *Faulty) Get(ctx context.Context, key string, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	if err := backend.ValidateKey(key); err != nil {
		return nil, backend.ObjectInfo{}, err
	}
	ft := f.decide(VerbGet, key)
	if err := ft.before(ctx); err != nil {
		return nil, backend.ObjectInfo{}, err
	}
	rc, info, err := f.layer.Get(ctx, key, opts)
	switch {
	case ft == nil:
		return rc, info, err
	case ft.mode == FailAfter:
		if rc != nil {
			rc.Close()
		}
		return nil, backend.ObjectInfo{}, ft.err
	case err != nil:
		// A body fault needs a body; the store's own failure stands.
		return rc, info, err
	}
	// ObjectInfo.Size is the whole object's; a ranged body is only the
	// range, and is damaged in its own middle.
	n := info.Size
	if opts.Range != nil {
		n = opts.Range.Length
	}
	return &faultyBody{rc: rc, at: n / 2, fault: *ft, ctx: ctx}, info, nil
}

// before applies a fault that acts before the request is sent: it returns
// the error to fail with, or nil to send the request.
func (ft *fault) before(ctx context.Context) error {
	switch {
	case ft == nil:
		return nil
	case ft.mode == FailBefore:
		return ft.err
	case ft.mode == Stall:
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

// faultyBody damages a Get body at offset at, the middle, where a check
// that only looks at the ends would miss it.
type faultyBody struct {
	rc  io.ReadCloser
	ctx context.Context
	pos int64
	at  int64
	fault
}

func (b *faultyBody) Read(p []byte) (int, error) {
	if b.mode == CorruptBody {
		n, err := b.rc.Read(p)
		if b.pos <= b.at && b.at < b.pos+int64(n) {
			p[b.at-b.pos] ^= 0xff
		}
		b.pos += int64(n)
		return n, err
	}
	if b.pos >= b.at {
		switch b.mode {
		case BreakBody:
			return 0, b.err
		case StallBody:
			<-b.ctx.Done()
			return 0, b.ctx.Err()
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.at-b.pos {
		p = p[:b.at-b.pos]
	}
	n, err := b.rc.Read(p)
	b.pos += int64(n)
	return n, err
}

func (b *faultyBody) Close() error { return b.rc.Close() }

// Put implements backend.Backend.
func (f *Faulty) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	if err := backend.ValidateKey(key); err != nil {
		return backend.ObjectInfo{}, err
	}
	ft := f.decide(putVerb(cond), key)
	if err := ft.before(ctx); err != nil {
		return backend.ObjectInfo{}, err
	}
	info, err := f.layer.Put(ctx, key, body, size, cond)
	if ft != nil {
		return backend.ObjectInfo{}, ft.err
	}
	return info, err
}

// Delete implements backend.Backend.
func (f *Faulty) Delete(ctx context.Context, key string, cond backend.Cond) error {
	if err := backend.ValidateKey(key); err != nil {
		return err
	}
	ft := f.decide(VerbDelete, key)
	if err := ft.before(ctx); err != nil {
		return err
	}
	err := f.layer.Delete(ctx, key, cond)
	if ft != nil {
		return ft.err
	}
	return err
}

// Stat implements backend.Backend.
func (f *Faulty) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	if err := backend.ValidateKey(key); err != nil {
		return backend.ObjectInfo{}, err
	}
	ft := f.decide(VerbStat, key)
	if err := ft.before(ctx); err != nil {
		return backend.ObjectInfo{}, err
	}
	info, err := f.layer.Stat(ctx, key)
	if ft != nil {
		return backend.ObjectInfo{}, ft.err
	}
	return info, err
}

// errStopList ends an inner listing once a fault has replaced its page.
var errStopList = errors.New("wrap: listing stopped by injected fault")

// List implements backend.Backend. Each page is one request, and a listing
// that delivers no page is one, as in [Counting]. FailBefore on the first
// page sends nothing; on a later page the inner store has already produced
// that page, so there FailBefore and FailAfter differ only in what a
// Counting below the injector records. Either way fn never sees the page.
func (f *Faulty) List(ctx context.Context, prefix string, opts backend.ListOptions, fn func([]backend.ObjectInfo) error) error {
	if err := backend.ValidatePrefix(prefix); err != nil {
		return err
	}
	first := f.decide(VerbList, prefix)
	if err := first.before(ctx); err != nil {
		return err
	}
	pages := 0
	var injected error
	err := f.layer.List(ctx, prefix, opts, func(page []backend.ObjectInfo) error {
		pages++
		ft := first
		if pages > 1 {
			ft = f.decide(VerbList, prefix)
		}
		if err := ft.before(ctx); err != nil {
			injected = err // a stall, ended by the deadline
			return errStopList
		}
		if ft != nil {
			injected = ft.err
			return errStopList
		}
		return fn(page)
	})
	switch {
	case injected != nil:
		return injected
	case first != nil:
		// The listing was sent but produced no page to replace.
		return first.err
	}
	return err
}

// Capabilities implements backend.Backend.
func (f *Faulty) Capabilities() backend.Capabilities { return f.layer.Capabilities() }

// Close implements backend.Backend.
func (f *Faulty) Close() error { return f.layer.Close() }
