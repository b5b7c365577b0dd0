package syncer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/seal"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/namespace"
)

// Defaults for Config's zero values.
const (
	DefaultShardMaxEntries = index.DefaultShardMaxEntries
	DefaultConcurrency     = 16
	DefaultDirtyCap        = 2000
	DefaultCommitAttempts  = 12
	DefaultPackThreshold   = 1 << 20
	DefaultPackSize        = 16 << 20
)

// Config configures a Syncer.
type Config struct {
	// Backend is the bucket (already scoped to any URL prefix). Required.
	Backend backend.Backend
	// Dir is the local cache directory. Required. silt keeps its own
	// state in Dir/.silt, which never syncs.
	Dir string
	// Namespace, when set, puts every remote key under "{Namespace}/" and
	// every local data path under Dir/{Namespace}/. Nothing outside it is
	// read or written.
	Namespace string
	// ShardMaxEntries bounds the entries of one index shard; a shard past
	// it splits into parts of half the bound. It bounds what a scoped read
	// costs. It applies when this cache creates the bucket's index (or
	// commits first to one that records no bound); afterwards the bucket's
	// recorded bound wins (FORMAT.md, "Manifest": shard_max_entries), so
	// caches configured differently never fight over the layout. 0 means
	// DefaultShardMaxEntries; it is clamped to [index.MinShardMaxEntries,
	// index.MaxShardMaxEntries].
	ShardMaxEntries int
	// Concurrency bounds parallel transfers.
	Concurrency int
	// DirtyCap bounds the marked paths; past it the next push walks
	// everything (and may delete what is absent).
	DirtyCap int
	// CommitAttempts bounds compare-and-swap retries of one commit.
	CommitAttempts int
	// CheckpointEvery is how often this cache writes a checkpoint: after committing a seq that is a multiple of it
	// (FORMAT.md, "Checkpoints"); 0 means index.DefaultCheckpointEvery.
	CheckpointEvery int
	// Now is the clock a log bucket's observations are measured by (how
	// long an absent next entry proves nothing newer); nil means
	// time.Now. Tests that move a fake clock pass it here.
	Now func() time.Time
	// PackThreshold is the size under which a push packs a file with
	// others into one pack object instead of storing it alone (FORMAT.md,
	// "Packs"); 0 means DefaultPackThreshold, negative packs nothing.
	PackThreshold int64
	// PackSize bounds the bytes of one pack; 0 means DefaultPackSize.
	PackSize int64
	// Lazy selects the files a MetadataOnly pull leaves unhydrated; nil
	// selects none. The engine builds in no layout: see LazyGlobs (the
	// reference host's layout is serve.DefaultLazy).
	Lazy func(path string) bool
	// Owner, with Namespace, registers the namespace to this owner (a
	// repository id) at Open; a namespace owned by another is refused.
	Owner string
	// Progress, when set, is called after each file a pull or push
	// transfers. Calls come one at a time, from transfer goroutines; it
	// must return quickly.
	Progress func(Progress)
	// ProgressChecks also calls Progress with Phase "check" for each file
	// compared before transfers start (the walk of a push, the plan of a
	// pull), so a host can show that work.
	ProgressChecks bool
	// CommitLock serialises commits on stores without compare-and-swap
	// (Capabilities().ConditionalPut false). Stores with it never need one.
	CommitLock CommitLocker
	// OnChange, when set, is called once per file an operation uploads,
	// downloads, deletes, removes, skips or finds in conflict, in the
	// order they complete. Calls come one at a time; it must return quickly.
	OnChange func(Change)
	// MaxChanges bounds Stats.Changes (the rest are counted in
	// Stats.ChangesOmitted); 0 means DefaultMaxChanges, negative keeps none.
	MaxChanges int
	// Logger, when set, receives one record per finished Pull or Push
	// (info; warn when it failed) and, at debug, one per change. Nil is
	// silent. Requests are logged by wrapping the Backend (wrap.Log).
	Logger *slog.Logger
	// Exclude holds gitignore-syntax rules (one per element) of paths
	// that never sync, read after those of the data root's .siltignore
	// (IgnoreFile): a push never uploads or deletes them, a pull never
	// writes or removes them. Include holds rules whose paths sync
	// whatever excludes them. See the README's "Excludes".
	Exclude []string
	Include []string
	// Tracer, when set, receives an OpenTelemetry span per operation
	// ("silt.pull", "silt.push", "silt.prepare", "silt.commit",
	// "silt.hydrate", "silt.resolve", "silt.preview"),
	// a child of the span in the caller's context, with a child span per
	// phase ("silt.pull.manifest", "silt.push.upload", ...) carrying its
	// requests and bytes; the operation's span carries its scope, seq,
	// file counts, requests and bytes, and its error. Nil makes no spans
	// and costs a nil check.
	Tracer trace.Tracer
	// BusyWait is how long Open waits for another process holding Dir's
	// local state before failing with a *BusyError; 0 means
	// DefaultBusyWait, negative tries once.
	BusyWait time.Duration
}

// Progress reports one finished transfer of a running operation, or (with
// Phase "check") one more file compared before transfers begin.
type Progress struct {
	Op    string `json:"op"`    // "pull" or "push"
	Phase string `json:"phase"` // "check" while comparing, "transfer" per file moved
	Path  string `json:"path"`  // the file just transferred (or checked)
	Bytes int64  `json:"bytes"` // its size
	Done  int    `json:"done"`  // files transferred so far in this operation
	Total int    `json:"total"` // files this operation plans to transfer
	// DoneBytes and TotalBytes are the payload bytes moved so far and
	// planned; Checked counts the files compared so far.
	DoneBytes  int64 `json:"doneBytes"`
	TotalBytes int64 `json:"totalBytes"`
	Checked    int   `json:"checked"`
}

// CommitLocker is a distributed lock a commit can be made under;
// *lock.Lock satisfies it.
type CommitLocker interface {
	// LockCommit holds the lock until release is called, and returns the
	// lock's key and the fencing token of this hold.
	LockCommit(ctx context.Context) (key string, token uint64, release func(), err error)
}

// Syncer keeps one local directory in sync with one bucket (namespace). Its
// methods are safe for concurrent use: operations whose scopes are disjoint
// run at once, overlapping ones in arrival order (see "Concurrency" in the
// package doc).
type Syncer struct {
	cfg    Config
	root   backend.Backend // the namespace root
	local  local
	st     *state
	locks  scopeLocks
	group  committer
	closed atomic.Bool
	rmu    sync.Mutex    // guards mcache and seen, never held across a request
	mcache manifestCache // persisted with each operation's state
	seen   seen          // the highest manifest seen, persisted likewise
	memo   shardMemo     // decoded shards, across operations (shardmemo.go)
}

// Open binds cfg.Dir to cfg.Backend. It creates Dir if needed and opens the
// local state; a second process opening the same Dir waits up to
// Config.BusyWait, then fails with a *BusyError (ErrBusy) naming the holder.
func Open(ctx context.Context, cfg Config) (*Syncer, error) {
	if cfg.Backend == nil {
		return nil, errors.New("syncer: Config.Backend is required")
	}
	if cfg.Dir == "" {
		return nil, errors.New("syncer: Config.Dir is required")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("syncer: %w", err)
	}
	cfg.Dir = dir
	cfg.ShardMaxEntries = index.ClampShardBound(cfg.ShardMaxEntries)
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.DirtyCap <= 0 {
		cfg.DirtyCap = DefaultDirtyCap
	}
	if cfg.CommitAttempts <= 0 {
		cfg.CommitAttempts = DefaultCommitAttempts
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.PackThreshold == 0 {
		cfg.PackThreshold = DefaultPackThreshold
	}
	if cfg.PackSize <= 0 {
		cfg.PackSize = DefaultPackSize
	}
	if _, err := compileRules(nil, cfg.Exclude, cfg.Include, nil, nil); err != nil {
		return nil, err
	}
	root := cfg.Backend
	localRoot := dir
	if cfg.Namespace != "" {
		if err := namespace.Validate(cfg.Namespace); err != nil {
			return nil, err
		}
		if seal.Of(root) == nil {
			// A namespace's keys are sealed in an encrypted bucket, so
			// without the passphrase it would look empty, and a push
			// would write plain objects beside the sealed ones.
			if enc, err := seal.Encrypted(ctx, root); err != nil {
				return nil, fmt.Errorf("syncer: %w", err)
			} else if enc {
				return nil, &index.FormatError{Key: seal.KeysPrefix, Reason: "namespace " + cfg.Namespace + " of an encrypted bucket opened without its passphrase", Err: index.ErrEncrypted}
			}
		}
		if cfg.Owner != "" {
			if err := namespace.Register(ctx, root, cfg.Namespace, cfg.Owner); err != nil {
				return nil, err
			}
		}
		root = backend.Prefixed(root, cfg.Namespace)
		localRoot = filepath.Join(dir, cfg.Namespace)
	}
	if err := os.MkdirAll(localRoot, 0o755); err != nil {
		return nil, fmt.Errorf("syncer: %w", err)
	}
	meta := filepath.Join(dir, index.InternalDir)
	st, err := openState(meta, cfg.BusyWait)
	if err != nil {
		return nil, err
	}
	cache, err := os.OpenRoot(dir)
	if err != nil {
		st.close()
		return nil, fmt.Errorf("syncer: %w", err)
	}
	ns := ""
	if cfg.Namespace != "" {
		ns = cfg.Namespace + "/"
	}
	s := &Syncer{
		cfg:   cfg,
		root:  root,
		local: local{dir: cache, path: localRoot, ns: ns},
		st:    st,
	}
	_ = st.view(func(t stx) error { s.mcache, s.seen = t.manifest(), t.seen(); return nil })
	if err := s.local.cleanTmp(); err != nil {
		s.Close()
		return nil, fmt.Errorf("syncer: clean temporary downloads: %w", err)
	}
	if err := s.reconcileIntents(); err != nil {
		s.Close()
		return nil, fmt.Errorf("syncer: verify the downloads a crash interrupted: %w", err)
	}
	return s, nil
}

// Root returns the local directory data paths are relative to: Dir, or
// Dir/{Namespace} with a namespace.
func (s *Syncer) Root() string { return s.local.path }

// Close releases the local state. The Syncer is unusable afterwards.
func (s *Syncer) Close() error {
	// Close waits for every operation that arrived before it; any that
	// arrives later finds the Syncer closed.
	defer s.locks.wait(lockScope{mode: lockClose})()
	if s.closed.Swap(true) {
		return nil
	}
	return errors.Join(s.local.fast.close(), s.local.dir.Close(), s.st.close())
}

// ErrClosed is returned by operations on a closed Syncer.
var ErrClosed = errors.New("syncer: closed")

// enter waits until an operation of scope sc may run and returns its
// release.
func (s *Syncer) enter(ctx context.Context, sc lockScope) (func(), error) {
	release, _, err := s.enterNarrowable(ctx, sc)
	return release, err
}

// enterNarrowable is enter, also returning a function that narrows the
// held scope to one within it (scopeLocks.narrow).
func (s *Syncer) enterNarrowable(ctx context.Context, sc lockScope) (release func(), narrow func(lockScope), err error) {
	r, err := s.locks.acquireHeld(ctx, sc)
	if err != nil {
		return nil, nil, err
	}
	release, err = s.opened(func() { s.locks.remove(r) })
	if err != nil {
		return nil, nil, err
	}
	return release, func(n lockScope) { s.locks.narrow(r, n) }, nil
}

// enterWait is enter without a deadline, for the methods that take no
// context: they wait only for operations on their own paths.
func (s *Syncer) enterWait(sc lockScope) (func(), error) {
	return s.opened(s.locks.wait(sc))
}

func (s *Syncer) opened(release func()) (func(), error) {
	if s.closed.Load() {
		release()
		return nil, ErrClosed
	}
	return release, nil
}

// MarkDirty records that the file or directory at path (relative to the
// cache, forward slashes) is about to change or has changed. A path absent
// at push time is a deletion. It costs one local write and no request.
func (s *Syncer) MarkDirty(path string) error {
	p, err := normalizePath(path)
	if err != nil {
		return err
	}
	release, err := s.enterWait(scopePaths(p))
	if err != nil {
		return err
	}
	defer release()
	return s.st.update(func(t stx) error {
		return t.markDirty(p, s.cfg.DirtyCap) // "" (the whole cache) is a bulk mark
	})
}

// MarkAllDirty makes the next push walk the whole cache. It is not a
// deletion signal: files absent locally are not deleted remotely.
func (s *Syncer) MarkAllDirty() error {
	release, err := s.enterWait(scopeAll())
	if err != nil {
		return err
	}
	defer release()
	return s.st.update(func(t stx) error { return t.markDirty("", s.cfg.DirtyCap) })
}
