package syncer

import (
	"context"
	"slices"
	"sync"
)

// lockMode says what an operation does to the paths of its scope.
type lockMode int

const (
	// lockWrite: the operation reads and writes local files and records in
	// its scope; it excludes every overlapping write.
	lockWrite lockMode = iota
	// lockRead: the operation only reads (Status, PreviewPush); it excludes
	// nothing but Close.
	lockRead
	// lockClose: Close, which excludes everything.
	lockClose
)

// lockScope is what one operation declares before it runs: the paths it
// may touch (canonical; all means the whole cache) and its mode.
type lockScope struct {
	all   bool
	paths []string
	mode  lockMode
}

func scopeAll() lockScope { return lockScope{all: true, mode: lockWrite} }

func scopePaths(paths ...string) lockScope {
	for _, p := range paths {
		if p == "" {
			return scopeAll()
		}
	}
	return lockScope{paths: topmost(slices.Clone(paths))}
}

// covers reports whether every path of q lies inside s.
func (s lockScope) covers(q lockScope) bool {
	if s.all {
		return true
	}
	if q.all {
		return false
	}
	for _, p := range q.paths {
		if !(lockScope{paths: s.paths}).overlapsPath(p, true) {
			return false
		}
	}
	return true
}

// overlapsPath reports whether p meets s: p is under a path of s or, with
// inside false, a path of s is under p.
func (s lockScope) overlapsPath(p string, inside bool) bool {
	for _, q := range s.paths {
		if under(p, q) || (!inside && under(q, p)) {
			return true
		}
	}
	return false
}

// conflicts reports whether two operations may not run at once.
func (s lockScope) conflicts(q lockScope) bool {
	switch {
	case s.mode == lockClose || q.mode == lockClose:
		return true
	case s.mode == lockRead || q.mode == lockRead:
		return false
	case s.all || q.all:
		return true
	}
	for _, p := range q.paths {
		if s.overlapsPath(p, false) {
			return true
		}
	}
	return false
}

// scopeLocks runs operations whose scopes are disjoint at once and
// serialises overlapping ones in arrival order: a request is granted only
// when it conflicts with no request ahead of it in the queue, held or
// still waiting, so a later operation never overtakes an earlier one it
// overlaps, and nothing starves.
type scopeLocks struct {
	mu    sync.Mutex
	queue []*lockReq // held and waiting, in arrival order
	// observe, when set (by tests), is told "wait" when a request queues
	// behind another and "run" when it is granted, before it runs.
	observe func(sc lockScope, event string)
}

type lockReq struct {
	sc      lockScope
	granted bool
	ready   chan struct{} // closed when granted
}

// acquire blocks until sc may run (or ctx ends) and returns its release.
func (l *scopeLocks) acquire(ctx context.Context, sc lockScope) (func(), error) {
	r, err := l.acquireHeld(ctx, sc)
	if err != nil {
		return nil, err
	}
	return func() { l.remove(r) }, nil
}

// acquireHeld is acquire, returning the held request itself, for narrow.
func (l *scopeLocks) acquireHeld(ctx context.Context, sc lockScope) (*lockReq, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return l.acquireDone(ctx.Done(), ctx.Err, sc)
}

// wait blocks until sc may run, without a deadline: for the methods that
// take no context and only wait for short local writes.
func (l *scopeLocks) wait(sc lockScope) func() {
	r, _ := l.acquireDone(nil, nil, sc)
	return func() { l.remove(r) }
}

func (l *scopeLocks) acquireDone(done <-chan struct{}, cause func() error, sc lockScope) (*lockReq, error) {
	r := &lockReq{sc: sc, ready: make(chan struct{})}
	l.mu.Lock()
	l.queue = append(l.queue, r)
	l.grantLocked()
	waiting, observe := !r.granted, l.observe
	l.mu.Unlock()
	if !waiting {
		if observe != nil {
			observe(sc, "run")
		}
		return r, nil
	}
	if observe != nil {
		observe(sc, "wait")
	}
	select {
	case <-r.ready:
		if observe != nil {
			observe(sc, "run")
		}
		return r, nil
	case <-done:
		l.remove(r) // granted meanwhile or not, it gives its place up
		return nil, cause()
	}
}

// narrow replaces the scope r holds by sc, which must lie within it (see
// lockScope.covers), and grants what waited only for the difference: a
// push that had to walk everything holds, once its plan is made, only the
// paths it changes.
func (l *scopeLocks) narrow(r *lockReq, sc lockScope) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !r.sc.covers(sc) {
		return // not narrower: keep what is held
	}
	sc.mode = r.sc.mode
	r.sc = sc
	l.grantLocked()
}

func (l *scopeLocks) remove(r *lockReq) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, q := range l.queue {
		if q == r {
			l.queue = append(l.queue[:i], l.queue[i+1:]...)
			break
		}
	}
	l.grantLocked()
}

// grantLocked grants every waiting request that conflicts with none ahead
// of it.
func (l *scopeLocks) grantLocked() {
	for i, r := range l.queue {
		if r.granted {
			continue
		}
		free := true
		for _, q := range l.queue[:i] {
			if q.sc.conflicts(r.sc) {
				free = false
				break
			}
		}
		if free {
			r.granted = true
			close(r.ready)
		}
	}
}

// topmost drops paths that lie under another path of the set.
func topmost(paths []string) []string {
	slices.Sort(paths)
	var out []string
	for _, p := range paths {
		if len(out) > 0 && under(p, out[len(out)-1]) {
			continue
		}
		out = append(out, p)
	}
	return out
}
