package check

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/siltsync/silt/backend"
)

// RunLive runs every backend check outside `go test`, against a live store,
// as `silt conformance` does (after kopia's validate-provider). newBackend
// is called once per check and must return an empty backend (a fresh
// scratch prefix, say); RunLive closes it after the check. report is
// called once per check, in order, with its name and outcome: passed is
// false for a failure, skipped is true for a check whose capability the
// backend does not claim, and msg holds the check's messages. RunLive
// returns the number of failed checks. Cancelling ctx fails the checks
// still to run.
func RunLive(ctx context.Context, newBackend func() (backend.Backend, error), report func(name string, passed, skipped bool, msg string)) (failed int) {
	for _, c := range All() {
		passed, skipped, msg := runLive(ctx, c, newBackend)
		if !passed {
			failed++
		}
		report(c.Name, passed, skipped, msg)
	}
	return failed
}

// runLive runs one check in its own goroutine, so that FailNow, Fatal and
// Skip can end it with runtime.Goexit as they do under `go test`.
func runLive(ctx context.Context, c Check, newBackend func() (backend.Backend, error)) (passed, skipped bool, msg string) {
	if err := ctx.Err(); err != nil {
		return false, false, err.Error()
	}
	b, err := newBackend()
	if err != nil {
		return false, false, fmt.Sprintf("open backend: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	lt := &liveT{name: c.Name, ctx: cctx}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				lt.record(true, false, fmt.Sprintf("panic: %v", r))
			}
		}()
		c.Run(lt, backend.Portable(b))
	}()
	<-done
	cancel() // as testing does before running cleanups
	lt.runCleanups()
	if err := b.Close(); err != nil {
		lt.record(true, false, fmt.Sprintf("Close: %v", err))
	}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return !lt.failed, lt.skipped && !lt.failed, strings.Join(lt.msgs, "; ")
}

// liveT is the T a check sees under RunLive. It implements every method
// of T, which the compiler checks, so no check can call a method that is
// missing here.
var _ T = (*liveT)(nil)

type liveT struct {
	name string
	ctx  context.Context

	mu       sync.Mutex
	failed   bool
	skipped  bool
	msgs     []string
	cleanups []func()
}

func (t *liveT) record(fail, skip bool, msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed = t.failed || fail
	t.skipped = t.skipped || skip
	if msg != "" {
		t.msgs = append(t.msgs, msg)
	}
}

func (t *liveT) runCleanups() {
	t.mu.Lock()
	fns := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}

func (t *liveT) Name() string                 { return t.name }
func (t *liveT) Context() context.Context     { return t.ctx }
func (t *liveT) Helper()                      {}
func (t *liveT) Log(args ...any)              { t.record(false, false, fmt.Sprint(args...)) }
func (t *liveT) Logf(f string, args ...any)   { t.record(false, false, fmt.Sprintf(f, args...)) }
func (t *liveT) Error(args ...any)            { t.record(true, false, fmt.Sprint(args...)) }
func (t *liveT) Errorf(f string, args ...any) { t.record(true, false, fmt.Sprintf(f, args...)) }
func (t *liveT) Fail()                        { t.record(true, false, "") }
func (t *liveT) FailNow()                     { t.record(true, false, ""); runtime.Goexit() }
func (t *liveT) Fatal(args ...any)            { t.Error(args...); runtime.Goexit() }
func (t *liveT) Fatalf(f string, args ...any) { t.Errorf(f, args...); runtime.Goexit() }
func (t *liveT) Skip(args ...any)             { t.record(false, true, fmt.Sprint(args...)); runtime.Goexit() }
func (t *liveT) Skipf(f string, args ...any) {
	t.record(false, true, fmt.Sprintf(f, args...))
	runtime.Goexit()
}
func (t *liveT) SkipNow() { t.record(false, true, ""); runtime.Goexit() }

func (t *liveT) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *liveT) Skipped() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.skipped
}

func (t *liveT) Cleanup(fn func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, fn)
}

func (t *liveT) TempDir() string {
	dir, err := os.MkdirTemp("", "silt-conformance-")
	if err != nil {
		t.Fatalf("TempDir: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// RunOne runs one check outside `go test` exactly as RunLive runs each of
// its own: in its own goroutine, with cleanups, on a backend behind
// [backend.Portable]. Suites built on this package (the model-based
// syncer test) use it to report live runs the same way.
func RunOne(ctx context.Context, c Check, newBackend func() (backend.Backend, error)) (passed, skipped bool, msg string) {
	return runLive(ctx, c, newBackend)
}
