package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/fs"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/syncer"
)

// The bucket kinds [Env.Backend] accepts.
const (
	// BackendMem is the in-memory store (backend/mem).
	BackendMem = "mem"
	// BackendFS is a local directory used as a bucket (backend/fs): every
	// write is staged, fsynced and renamed, so it also shows local I/O.
	BackendFS = "fs"
)

// Env is where and how scenarios run.
type Env struct {
	// Backend is BackendMem (the default when empty) or BackendFS.
	Backend string
	// Latency is the delay added before every request of the measured
	// operation (and every List page). Seeding and per-trial preparation
	// are never delayed.
	Latency time.Duration
	// Dir is the scratch directory under which each scenario makes (and
	// removes) its own directory; "" means os.TempDir().
	Dir string
	// Concurrency is the measured caches' syncer.Config.Concurrency; 0
	// means the syncer's default.
	Concurrency int
	// ShardMaxEntries is every cache's syncer.Config.ShardMaxEntries; 0
	// means the syncer's default.
	ShardMaxEntries int
	// Logf, when set, receives progress lines (seeding can take a while at
	// 100k entries).
	Logf func(format string, args ...any)
}

func (e Env) logf(format string, args ...any) {
	if e.Logf != nil {
		e.Logf(format, args...)
	}
}

func (e Env) check() error {
	switch e.Backend {
	case "", BackendMem, BackendFS:
		return nil
	}
	return fmt.Errorf("bench: unknown backend %q (want %s or %s)", e.Backend, BackendMem, BackendFS)
}

// seedConcurrency is the Concurrency of caches that only seed or prepare:
// they talk to the undelayed store, so wider only helps the fs store's
// fsyncs.
const seedConcurrency = 32

// world is one scenario's scratch space: a bucket, the latency wrapper the
// measured operations go through, and the caches bound to it.
type world struct {
	env    Env
	root   string
	store  backend.Backend // undelayed: seeding, peers, preparation
	slow   backend.Backend // Latency over store
	obs    *wrap.Counting  // outside slow: what measured caches sent
	caches []*cache
	stores int
}

func newWorld(env Env, name string) (*world, error) {
	if err := env.check(); err != nil {
		return nil, err
	}
	if env.Backend == "" {
		env.Backend = BackendMem
	}
	if env.Dir != "" {
		if err := os.MkdirAll(env.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
	}
	root, err := os.MkdirTemp(env.Dir, "silt-bench-"+strings.ReplaceAll(name, "/", "-")+"-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	w := &world{env: env, root: root}
	if err := w.freshStore(); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	return w, nil
}

// freshStore replaces the bucket with a new, empty one. Caches opened on
// the old one must not be used afterwards.
func (w *world) freshStore() error {
	if w.store != nil {
		w.store.Close()
		if w.env.Backend == BackendFS {
			// The old bucket's files would only slow the next one down.
			if err := os.RemoveAll(filepath.Join(w.root, fmt.Sprintf("bucket-%d", w.stores))); err != nil {
				return fmt.Errorf("bench: remove old bucket: %w", err)
			}
		}
	}
	w.stores++
	switch w.env.Backend {
	case BackendFS:
		b, err := fs.New(filepath.Join(w.root, fmt.Sprintf("bucket-%d", w.stores)))
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		w.store = b
	default:
		w.store = mem.New()
	}
	w.slow = wrap.Latency(w.store, wrap.LatencyConfig{Delay: w.env.Latency})
	w.obs = wrap.Count(w.slow)
	return nil
}

// close closes every cache and the bucket and removes the scratch space.
func (w *world) close() error {
	var errs []error
	for _, c := range w.caches {
		errs = append(errs, c.close())
	}
	if w.store != nil {
		errs = append(errs, w.store.Close())
	}
	errs = append(errs, os.RemoveAll(w.root))
	return errors.Join(errs...)
}

// cache is one machine: a cache directory and the syncer bound to it,
// opened either on the undelayed store or on the measured path.
type cache struct {
	w        *world
	dir      string
	s        *syncer.Syncer
	measured bool
	made     map[string]bool // directories already created by write
}

// newCache opens a fresh cache directory on the undelayed store.
func (w *world) newCache(name string) (*cache, error) {
	c := &cache{w: w, dir: filepath.Join(w.root, fmt.Sprintf("cache-%s-%d", name, len(w.caches))), made: map[string]bool{}}
	if err := c.open(false); err != nil {
		return nil, err
	}
	w.caches = append(w.caches, c)
	return c, nil
}

func (c *cache) open(measured bool) error {
	cfg := syncer.Config{Backend: c.w.store, Dir: c.dir, ShardMaxEntries: c.w.env.ShardMaxEntries, Concurrency: seedConcurrency}
	if measured {
		cfg.Backend = c.w.obs
		cfg.Concurrency = c.w.env.Concurrency
	}
	s, err := syncer.Open(context.Background(), cfg)
	if err != nil {
		return fmt.Errorf("bench: open cache: %w", err)
	}
	c.s, c.measured = s, measured
	return nil
}

// measure reopens the cache on the measured path (latency and the outside
// counter): from then on it is the machine whose operations are timed. To
// the syncer this is a restart, as a new host process would be.
func (c *cache) measure() error {
	if err := c.s.Close(); err != nil {
		return err
	}
	return c.open(true)
}

func (c *cache) close() error {
	if c.s == nil {
		return nil
	}
	err := c.s.Close()
	c.s = nil
	return err
}

// remove closes the cache and deletes its directory.
func (c *cache) remove() error {
	return errors.Join(c.close(), os.RemoveAll(c.dir))
}

// write writes one file, creating its directory once per directory.
func (c *cache) write(p string, data []byte) error {
	abs := filepath.Join(c.dir, filepath.FromSlash(p))
	if dir := filepath.Dir(abs); !c.made[dir] {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		c.made[dir] = true
	}
	return os.WriteFile(abs, data, 0o644)
}

func (c *cache) pull(ctx context.Context, scope ...string) (syncer.Stats, error) {
	st, err := c.s.Pull(ctx, syncer.PullOptions{Scope: scope})
	if err != nil {
		return st, fmt.Errorf("pull %v: %w", scope, err)
	}
	if st.Files.Conflicts > 0 {
		return st, fmt.Errorf("pull %v: unexpected conflicts %v", scope, st.Conflicts)
	}
	return st, nil
}

func (c *cache) push(ctx context.Context) (syncer.Stats, error) {
	st, err := c.s.Push(ctx, syncer.PushOptions{})
	if err != nil {
		return st, fmt.Errorf("push: %w", err)
	}
	if st.Files.Conflicts > 0 {
		return st, fmt.Errorf("push: unexpected conflicts %v", st.Conflicts)
	}
	return st, nil
}

// writePush writes one file, marks it and pushes it: a peer's commit.
func (c *cache) writePush(ctx context.Context, p string, data []byte) error {
	if err := c.write(p, data); err != nil {
		return err
	}
	if err := c.s.MarkDirty(p); err != nil {
		return err
	}
	st, err := c.push(ctx)
	if err != nil {
		return err
	}
	if st.Files.Uploaded != 1 {
		return fmt.Errorf("bench: peer push of %s uploaded %d files, want 1", p, st.Files.Uploaded)
	}
	return nil
}
