package lock_test

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/fs"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/lock"
)

// factory makes a fresh, empty store for one test; the S3 and GCS ones
// are in-process emulators (emulators_test.go).
type factory struct {
	name string
	// cas: the store decides races by compare-and-swap, so the tests of
	// exactly-one-winner apply (they do not without it; see doc.go).
	cas bool
	new func(t *testing.T) backend.Backend
}

var factories = []factory{
	{"mem", true, func(*testing.T) backend.Backend { return mem.New() }},
	{"mem-create-only", false, func(*testing.T) backend.Backend { return createOnly{mem.New()} }},
	{"fs", true, newFS},
	{"fs-create-only", false, func(t *testing.T) backend.Backend { return createOnly{newFS(t)} }},
	{"s3", true, newS3},
	{"gcs", true, newGCS},
}

func newFS(t *testing.T) backend.Backend {
	b, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// forEach runs test once per backend factory, as a subtest.
func forEach(t *testing.T, test func(t *testing.T, f factory)) {
	for _, f := range factories {
		t.Run(f.name, func(t *testing.T) { test(t, f) })
	}
}

// forEachCAS is forEach restricted to stores with compare-and-swap.
func forEachCAS(t *testing.T, test func(t *testing.T, f factory)) {
	forEach(t, func(t *testing.T, f factory) {
		if !f.cas {
			t.Skip("needs compare-and-swap; the create-only protocol documents this race as a weakness")
		}
		test(t, f)
	})
}

func newLock(t *testing.T, b backend.Backend, key string, opts lock.Options) *lock.Lock {
	t.Helper()
	l, err := lock.New(b, key, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// createOnly hides compare-and-swap, like a gocloud blob bucket: Put
// honours only IfAbsent and Delete no condition. Conditions it does not
// advertise are refused, so a lock that used them would fail loudly.
type createOnly struct{ backend.Backend }

func (c createOnly) Unwrap() backend.Backend { return c.Backend }

func (c createOnly) Capabilities() backend.Capabilities {
	return backend.Capabilities{AtomicCreate: true, ListAfterWrite: true}
}

func (c createOnly) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	if cond.IfMatch != "" {
		return backend.ObjectInfo{}, backend.Permanent("put", key, backend.ErrNotSupported)
	}
	return c.Backend.Put(ctx, key, body, size, cond)
}

func (c createOnly) Delete(ctx context.Context, key string, cond backend.Cond) error {
	if !cond.IsZero() {
		return backend.Permanent("delete", key, backend.ErrNotSupported)
	}
	return c.Backend.Delete(ctx, key, cond)
}

// unconditional has no atomic condition at all.
type unconditional struct{ backend.Backend }

func (unconditional) Capabilities() backend.Capabilities { return backend.Capabilities{} }

// probe is a backend wrapper for ordering events without sleeping: it
// records every completed Get and Put, and once armed holds Puts at a gate
// until the test opens it.
type probe struct {
	backend.Backend
	mu     sync.Mutex
	cond   *sync.Cond
	hold   func(backend.Cond) bool // Puts to hold; nil holds none
	open   bool
	held   int
	events []event
}

type event struct {
	verb    string // "get" or "put"
	cond    backend.Cond
	version backend.Version
	err     error
}

func newProbe(b backend.Backend) *probe {
	p := &probe{Backend: b}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *probe) Unwrap() backend.Backend { return p.Backend }

// arm makes the gate hold every later Put that match selects.
func (p *probe) arm(match func(backend.Cond) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold, p.open = match, false
}

// release opens the gate for good.
func (p *probe) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.open = true
	p.cond.Broadcast()
}

// waitHeld blocks until n Puts wait at the gate.
func (p *probe) waitHeld(t *testing.T, n int) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	waitCond(t, p.cond, func() bool { return p.held >= n }, "writes held at the gate")
}

// waitEvent blocks until an event at index from or later satisfies ok,
// and returns its index and the event.
func (p *probe) waitEvent(t *testing.T, from int, ok func(event) bool) (int, event) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := from; ; i++ {
		waitCond(t, p.cond, func() bool { return i < len(p.events) }, "a request to complete")
		if ok(p.events[i]) {
			return i, p.events[i]
		}
	}
}

func (p *probe) record(e event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, e)
	p.cond.Broadcast()
}

func (p *probe) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	p.mu.Lock()
	if p.hold != nil && p.hold(cond) {
		p.held++
		p.cond.Broadcast()
		for !p.open {
			p.cond.Wait()
		}
		p.held--
	}
	p.mu.Unlock()
	info, err := p.Backend.Put(ctx, key, body, size, cond)
	p.record(event{"put", cond, info.Version, err})
	return info, err
}

func (p *probe) Get(ctx context.Context, key string, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	rc, info, err := p.Backend.Get(ctx, key, opts)
	p.record(event{"get", backend.Cond{}, info.Version, err})
	return rc, info, err
}

// mark returns the index the next event will have.
func (p *probe) mark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.events)
}

func isPut(e event) bool            { return e.verb == "put" }
func isCondPut(e event) bool        { return e.verb == "put" && e.cond.IfMatch != "" }
func isIfMatch(c backend.Cond) bool { return c.IfMatch != "" }
func anyPut(backend.Cond) bool      { return true }

// acquireAsync runs Acquire in a goroutine.
func acquireAsync(ctx context.Context, l *lock.Lock) *pending {
	p := &pending{done: make(chan struct{})}
	go func() {
		p.lease, p.err = l.Acquire(ctx)
		close(p.done)
	}()
	return p
}

// pending is an Acquire in progress; lease and err are set once done is
// closed.
type pending struct {
	done  chan struct{}
	lease *lock.Lease
	err   error
}

func (p *pending) String() string { return fmt.Sprintf("lease %v, err %v", p.lease != nil, p.err) }

// napping waits until the waiter sleeps between looks, failing the test
// if its Acquire returns instead.
func napping(t *testing.T, c *fakeClock, res *pending) {
	t.Helper()
	if !c.waitTimer(t, waiterNap, res.done) {
		t.Fatalf("the waiter's Acquire returned while it should wait: %v", res)
	}
}

// beatDue waits until the lease's next heartbeat is scheduled, failing the
// test if the lease is lost instead.
func beatDue(t *testing.T, c *fakeClock, lease *lock.Lease) {
	t.Helper()
	if !c.waitTimer(t, eq(ttl/3), lease.Lost()) {
		t.Fatal("the lease was lost while it should heartbeat")
	}
}

// hangLimit turns an event that never comes into a failure instead of a
// test-binary timeout. It orders nothing: every wait below ends on the
// event itself, long before this.
const hangLimit = 20 * time.Second

// await waits for ch to close, failing the test after hangLimit.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(hangLimit):
		t.Fatalf("gave up waiting: %s", what)
	}
}

// holderNonce returns the nonce of the current holder, or "" when free.
func holderNonce(t *testing.T, l *lock.Lock) string {
	t.Helper()
	info, err := l.Inspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info == nil {
		return ""
	}
	return info.Nonce
}
