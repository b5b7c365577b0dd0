package serve

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/lock"
)

// LockPrefix is where lock objects live, relative to the namespace root:
// the same place `silt lock` uses, so both see the same locks.
const LockPrefix = index.LocksPrefix

// MaxLockTTL and MaxLockWait bound a lock request: a holder that vanishes
// keeps a lock at most MaxLockTTL (it heartbeats to keep it longer), and
// one acquire waits at most MaxLockWait.
const (
	MaxLockTTL  = 24 * time.Hour
	MaxLockWait = time.Hour
)

// heldLease is a lock the service holds for a client. The lock package
// heartbeats it; the client must heartbeat the service, or expiry releases
// it, so a client that dies does not keep the lock beyond its TTL.
type heldLease struct {
	Lease
	lease  *lock.Lease
	cancel context.CancelFunc
	expiry *time.Timer
}

func (s *Server) newLock(req LockRequest) (*lock.Lock, error) {
	if err := backend.ValidateKey(req.Key); err != nil {
		return nil, badRequest("lock key: %v", err)
	}
	if req.TTLMs < 0 || req.MaxWaitMs < -1 {
		return nil, badRequest("ttlMs must not be negative, maxWaitMs not below -1")
	}
	if req.TTLMs > MaxLockTTL.Milliseconds() || req.MaxWaitMs > MaxLockWait.Milliseconds() {
		return nil, badRequest("ttlMs is at most %d (%v), maxWaitMs at most %d (%v)",
			MaxLockTTL.Milliseconds(), MaxLockTTL, MaxLockWait.Milliseconds(), MaxLockWait)
	}
	maxWait := time.Duration(req.MaxWaitMs) * time.Millisecond
	if req.MaxWaitMs == 0 {
		maxWait = -1 // try once, as `silt lock acquire` without --wait
	} else if req.MaxWaitMs < 0 {
		maxWait = 0 // the lock package's default
	}
	return lock.New(s.root, LockPrefix+req.Key, lock.Options{TTL: time.Duration(req.TTLMs) * time.Millisecond, MaxWait: maxWait, Holder: req.Holder,
		PID: req.PID, Hostname: req.Hostname})
}

// lockHandler serves an endpoint on a lock named by a LockRequest: it
// decodes the request and builds the lock (either failing answers at
// once), then runs act as the operation op; async says whether the
// endpoint honours "async".
func (s *Server) lockHandler(op string, async bool, act func(ctx context.Context, req LockRequest, l *lock.Lock) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req LockRequest
		if err := decode(r, &req); err != nil {
			writeError(w, err)
			return
		}
		l, err := s.newLock(req)
		if err != nil {
			writeError(w, err)
			return
		}
		s.run(w, r, op, "lock", async && req.Async, func(ctx context.Context) (any, error) { return act(ctx, req, l) })
	}
}

// leaseHandler serves an endpoint on a lease the service holds, named by a
// LeaseRequest: it looks the lease up (removing it from the table when
// remove is set) and runs act on it as the operation op.
func (s *Server) leaseHandler(op string, remove bool, act func(ctx context.Context, h *heldLease) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req LeaseRequest
		if err := decode(r, &req); err != nil {
			writeError(w, err)
			return
		}
		s.run(w, r, op, "lock", false, func(ctx context.Context) (any, error) {
			h, err := s.takeLease(req.Lease, remove)
			if err != nil {
				return nil, err
			}
			return act(ctx, h)
		})
	}
}

// lockAcquire takes the lock and holds it for the client.
func (s *Server) lockAcquire(ctx context.Context, req LockRequest, l *lock.Lock) (any, error) {
	ttl := time.Duration(req.TTLMs) * time.Millisecond
	if ttl == 0 {
		ttl = lock.DefaultTTL
	}
	// The lease must outlive this request: acquire on the server's
	// context, abandoning the wait only if the request goes away.
	lctx, cancel := context.WithCancel(s.base)
	stop := context.AfterFunc(ctx, cancel)
	le, err := l.Acquire(lctx)
	if !stop() && err == nil {
		// The request ended as the lock was taken: give it back.
		err = errors.Join(ctx.Err(), le.Release(context.WithoutCancel(s.base)))
	}
	if err != nil {
		cancel()
		return nil, err
	}
	h := &heldLease{Lease: Lease{ID: rand.Text()[:20], Key: req.Key, Token: le.Token(), Nonce: le.Nonce(),
		TTLMs: ttl.Milliseconds(), Held: true}, lease: le, cancel: cancel}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil, errors.Join(errUnavailable, s.dropLease(context.WithoutCancel(s.base), h))
	}
	s.leases[h.ID] = h
	h.expiry = time.AfterFunc(ttl, func() { s.expire(h.ID) })
	s.mu.Unlock()
	return h.Lease, nil
}

// expire releases a lease whose client stopped heartbeating.
func (s *Server) expire(id string) {
	s.mu.Lock()
	h, ok := s.leases[id]
	delete(s.leases, id)
	s.mu.Unlock()
	if ok {
		// Nobody is there to tell; a failed release lapses after the TTL.
		_ = s.dropLease(s.base, h)
	}
}

func (s *Server) dropLease(ctx context.Context, h *heldLease) error {
	if h.expiry != nil {
		h.expiry.Stop()
	}
	err := h.lease.Release(ctx)
	h.cancel()
	return err
}

func (s *Server) takeLease(id string, remove bool) (*heldLease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.leases[id]
	if !ok {
		return nil, fmt.Errorf("%w: no lease %q (released, or expired without heartbeat)", errNotFound, id)
	}
	if remove {
		delete(s.leases, id)
	}
	return h, nil
}

// lockRelease gives a lease's lock back.
func (s *Server) lockRelease(ctx context.Context, h *heldLease) (any, error) {
	if err := s.dropLease(ctx, h); err != nil {
		return nil, err
	}
	select {
	case <-h.lease.Lost():
		// Force-released or taken over: the client's critical section
		// was not protected to its end, and must hear it.
		return nil, fmt.Errorf("lease of %s: %w", h.Key, lock.ErrLost)
	default:
	}
	out := h.Lease
	out.Held = false
	return out, nil
}

// lockHeartbeat proves the client alive and reports whether the lease
// still holds; a lost lease is forgotten and answers lock_lost.
func (s *Server) lockHeartbeat(ctx context.Context, h *heldLease) (any, error) {
	select {
	case <-h.lease.Lost():
		s.mu.Lock()
		delete(s.leases, h.ID)
		s.mu.Unlock()
		_ = s.dropLease(ctx, h) // lost: Release leaves the new holder alone
		return nil, fmt.Errorf("lease of %s: %w", h.Key, lock.ErrLost)
	default:
	}
	h.expiry.Reset(time.Duration(h.TTLMs) * time.Millisecond)
	return h.Lease, nil
}

func lockInspect(ctx context.Context, _ LockRequest, l *lock.Lock) (any, error) {
	info, err := l.Inspect(ctx)
	if err != nil {
		return nil, err
	}
	return lockInfo(info), nil
}

func lockForceRelease(ctx context.Context, req LockRequest, l *lock.Lock) (any, error) {
	if req.Nonce == "" {
		return nil, badRequest("force-release needs the holder's nonce")
	}
	ok, err := l.ForceRelease(ctx, req.Nonce)
	return map[string]bool{"released": ok}, err
}

// releaseAll releases every lease the service holds (at shutdown).
func (s *Server) releaseAll(ctx context.Context) error {
	s.mu.Lock()
	hs := make([]*heldLease, 0, len(s.leases))
	for id, h := range s.leases {
		hs = append(hs, h)
		delete(s.leases, id)
	}
	s.mu.Unlock()
	var errs []error
	for _, h := range hs {
		errs = append(errs, s.dropLease(ctx, h))
	}
	return errors.Join(errs...)
}
