package bench

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/lock"
	"github.com/siltsync/silt/serve"
	"github.com/siltsync/silt/syncer"
)

// lockTTL is the TTL of a step's model lock: far longer than a step.
const lockTTL = time.Minute

// library runs steps on one Syncer in this process, as a host linking
// silt does; locks are the lock package's, on the same store.
type library struct {
	s     *syncer.Syncer
	store backend.Backend
}

func libraryStepper(ctx context.Context, b backend.Backend, dir string) (stepper, error) {
	s, err := syncer.Open(ctx, syncer.Config{Backend: b, Dir: dir})
	if err != nil {
		return nil, err
	}
	return library{s: s, store: b}, nil
}

func (l library) lock(ctx context.Context, key string) (func(), error) {
	lk, err := lock.New(l.store, index.LocksPrefix+key, lock.Options{TTL: lockTTL})
	if err != nil {
		return nil, err
	}
	le, err := lk.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return func() { le.Release(context.WithoutCancel(ctx)) }, nil
}

func (l library) pull(ctx context.Context, scope string) error {
	_, err := l.s.Pull(ctx, syncer.PullOptions{Scope: []string{scope}})
	return err
}
func (l library) mark(_ context.Context, p string) error { return l.s.MarkDirty(p) }
func (l library) push(ctx context.Context, scope string) (syncer.Stats, error) {
	return l.s.Push(ctx, syncer.PushOptions{Paths: []string{scope}})
}
func (l library) close(context.Context) error { return l.s.Close() }

// service runs steps through silt serve: a Server on a real Unix socket
// in this process, called with the Go client (one HTTP request per call,
// locks held by the service).
type service struct {
	srv    *serve.Server
	c      *serve.Client
	served chan error
}

// startService opens a Server for cfg, serves it on dir's socket and
// dials it.
func startService(ctx context.Context, cfg syncer.Config) (*service, error) {
	srv, err := serve.Open(ctx, serve.Config{Syncer: cfg})
	if err != nil {
		return nil, err
	}
	ln, err := serve.Listen(ctx, cfg.Dir)
	if err != nil {
		return nil, errors.Join(err, srv.Shutdown(ctx))
	}
	sv := &service{srv: srv, served: make(chan error, 1)}
	go func() { sv.served <- srv.Serve(ln) }()
	sv.c, err = serve.Dial(ctx, cfg.Dir)
	if err != nil {
		return nil, errors.Join(err, sv.close(ctx))
	}
	return sv, nil
}

func serviceStepper(ctx context.Context, b backend.Backend, dir string) (stepper, error) {
	return startService(ctx, syncer.Config{Backend: b, Dir: dir})
}

func (s *service) lock(ctx context.Context, key string) (func(), error) {
	le, err := s.c.Acquire(ctx, serve.LockRequest{Key: key, TTLMs: lockTTL.Milliseconds(), MaxWaitMs: -1})
	if err != nil {
		return nil, err
	}
	return func() { s.c.Release(context.WithoutCancel(ctx), le.ID) }, nil
}

func (s *service) pull(ctx context.Context, scope string) error {
	_, err := s.c.Pull(ctx, syncer.PullOptions{Scope: []string{scope}})
	return err
}
func (s *service) mark(ctx context.Context, p string) error { return s.c.MarkPaths(ctx, p) }
func (s *service) push(ctx context.Context, scope string) (syncer.Stats, error) {
	return s.c.Push(ctx, syncer.PushOptions{Paths: []string{scope}})
}
func (s *service) close(ctx context.Context) error {
	err := errors.Join(s.c.Close(), s.srv.Shutdown(ctx))
	if serr := <-s.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
