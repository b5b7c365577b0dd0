package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/siltsync/silt/syncer"
)

// Cache is one interface to a cache directory, whoever owns it: the
// Syncer itself (opened in this process) or the service of the process
// that owns it (a *Client). Its methods are the Syncer's, with the
// engine's own option and result types, so a caller cannot tell the two
// apart by what it can ask or what it gets back. *syncer.Syncer satisfies
// it.
type Cache interface {
	Pull(ctx context.Context, opts syncer.PullOptions) (syncer.Stats, error)
	Push(ctx context.Context, opts syncer.PushOptions) (syncer.Stats, error)
	PreparePush(ctx context.Context, opts syncer.PushOptions) (*syncer.PushManifest, syncer.Stats, error)
	CommitPush(ctx context.Context, m *syncer.PushManifest, fence *syncer.Fence) (syncer.Stats, error)
	MarkDirty(path string) error
	MarkAllDirty() error
	Status(ctx context.Context, remote bool) (syncer.Status, error)
	PreviewPush(ctx context.Context) (syncer.Preview, error)
	HydrateFile(ctx context.Context, path string) (bool, syncer.Stats, error)
	Resolve(ctx context.Context, opts syncer.ResolveOptions) (syncer.Stats, error)
	Restore(ctx context.Context, path string) (syncer.Stats, error)
	// Root is the directory data paths are relative to.
	Root() string
	Close() error
}

var (
	_ Cache = (*syncer.Syncer)(nil)
	_ Cache = (*Client)(nil)
	_ Cache = (*Local)(nil)
)

// OpenOptions configure OpenCache.
type OpenOptions struct {
	// Serve, when this call opens the cache in-process, serves it on its
	// socket until Close, so other processes reach it through this one
	// (and operations on disjoint scopes run at once) instead of waiting
	// for the directory's lock.
	Serve bool
	// Owner is what the service reports as the cache's owner (the command
	// line, "silt push"), with Serve.
	Owner string
	// Observer is given to every call made without one in its context,
	// in-process or through a service: per-file changes and progress
	// reach the caller either way.
	Observer syncer.Observer
}

// OpenCache opens the cache cfg describes: through the service of the
// process that owns cfg.Dir when one does, else in-process with
// syncer.Open (serving it, with opts.Serve). Which one it got is told by
// Served. cfg.Backend is used only in-process; the caller still closes it.
func OpenCache(ctx context.Context, cfg syncer.Config, opts OpenOptions) (Cache, error) {
	c, err := dialCache(ctx, cfg.Dir, opts)
	if c != nil || err != nil {
		return c, err
	}
	sy, err := syncer.Open(ctx, cfg)
	if errors.Is(err, syncer.ErrBusy) {
		// The owner may have started serving while we waited for it.
		if c, derr := dialCache(ctx, cfg.Dir, opts); c != nil && derr == nil {
			return c, nil
		}
	}
	if err != nil {
		return nil, err
	}
	l := &Local{Syncer: sy, obs: opts.Observer}
	if !opts.Serve {
		return l, nil
	}
	ln, err := Listen(ctx, cfg.Dir)
	if err != nil {
		sy.Close()
		return nil, fmt.Errorf("serve the cache while it is open: %w", err)
	}
	l.srv = New(ctx, sy, Config{Syncer: cfg, Owner: opts.Owner})
	l.served = make(chan error, 1)
	go func() { l.served <- l.srv.Serve(ln) }()
	return l, nil
}

// dialCache returns the cache through the service owning dir, or nil
// when none does.
func dialCache(ctx context.Context, dir string, opts OpenOptions) (Cache, error) {
	cl, err := Dial(ctx, dir)
	if errors.Is(err, ErrNotServed) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reach the service owning %s: %w", dir, err)
	}
	return &observed{Client: cl, obs: opts.Observer}, nil
}

// Served reports the service a Cache from OpenCache goes through, or false
// for one opened in this process.
func Served(c Cache) (Info, bool) {
	switch c := c.(type) {
	case *observed:
		return c.info, true
	case *Client:
		return c.info, true
	}
	return Info{}, false
}

// withObserver gives ctx the default Observer unless it carries one.
func withObserver(ctx context.Context, o syncer.Observer) context.Context {
	if !observes(o) || observes(syncer.ObserverOf(ctx)) {
		return ctx
	}
	return syncer.WithObserver(ctx, o)
}

// observed is a Client whose calls carry OpenOptions.Observer.
type observed struct {
	*Client
	obs syncer.Observer
}

func (o *observed) Pull(ctx context.Context, opts syncer.PullOptions) (syncer.Stats, error) {
	return o.Client.Pull(withObserver(ctx, o.obs), opts)
}

func (o *observed) Push(ctx context.Context, opts syncer.PushOptions) (syncer.Stats, error) {
	return o.Client.Push(withObserver(ctx, o.obs), opts)
}

func (o *observed) PreparePush(ctx context.Context, opts syncer.PushOptions) (*syncer.PushManifest, syncer.Stats, error) {
	return o.Client.PreparePush(withObserver(ctx, o.obs), opts)
}

func (o *observed) CommitPush(ctx context.Context, m *syncer.PushManifest, fence *syncer.Fence) (syncer.Stats, error) {
	return o.Client.CommitPush(withObserver(ctx, o.obs), m, fence)
}

func (o *observed) HydrateFile(ctx context.Context, path string) (bool, syncer.Stats, error) {
	return o.Client.HydrateFile(withObserver(ctx, o.obs), path)
}

func (o *observed) Resolve(ctx context.Context, opts syncer.ResolveOptions) (syncer.Stats, error) {
	return o.Client.Resolve(withObserver(ctx, o.obs), opts)
}

func (o *observed) Restore(ctx context.Context, path string) (syncer.Stats, error) {
	return o.Client.Restore(withObserver(ctx, o.obs), path)
}

// Local is a cache opened in this process by OpenCache: the Syncer, with
// OpenOptions.Observer on its calls, and the service that answers other
// processes while it is open.
type Local struct {
	*syncer.Syncer
	obs    syncer.Observer
	srv    *Server
	served chan error
}

// Server is the service answering for this cache, or nil.
func (l *Local) Server() *Server { return l.srv }

func (l *Local) Pull(ctx context.Context, opts syncer.PullOptions) (syncer.Stats, error) {
	return l.Syncer.Pull(withObserver(ctx, l.obs), opts)
}

func (l *Local) Push(ctx context.Context, opts syncer.PushOptions) (syncer.Stats, error) {
	return l.Syncer.Push(withObserver(ctx, l.obs), opts)
}

func (l *Local) PreparePush(ctx context.Context, opts syncer.PushOptions) (*syncer.PushManifest, syncer.Stats, error) {
	return l.Syncer.PreparePush(withObserver(ctx, l.obs), opts)
}

func (l *Local) CommitPush(ctx context.Context, m *syncer.PushManifest, fence *syncer.Fence) (syncer.Stats, error) {
	return l.Syncer.CommitPush(withObserver(ctx, l.obs), m, fence)
}

func (l *Local) HydrateFile(ctx context.Context, path string) (bool, syncer.Stats, error) {
	return l.Syncer.HydrateFile(withObserver(ctx, l.obs), path)
}

func (l *Local) Resolve(ctx context.Context, opts syncer.ResolveOptions) (syncer.Stats, error) {
	return l.Syncer.Resolve(withObserver(ctx, l.obs), opts)
}

func (l *Local) Restore(ctx context.Context, path string) (syncer.Stats, error) {
	return l.Syncer.Restore(withObserver(ctx, l.obs), path)
}

// Close stops serving (letting operations other processes sent finish)
// and closes the Syncer.
func (l *Local) Close() error {
	var errs []error
	if l.srv != nil {
		errs = append(errs, l.srv.Shutdown(context.Background()))
		if err := <-l.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, l.Syncer.Close())
	return errors.Join(errs...)
}

func observes(o syncer.Observer) bool {
	return o.OnChange != nil || o.Progress != nil || o.MaxChanges != 0
}
