package syncer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
)

// ErrRollback is returned (wrapped in a *RollbackError) when the remote
// manifest is older than one this cache has already seen, or has the same
// sequence with different bytes: a restored backup, an operator mistake or
// a misbehaving gateway. Nothing is changed locally or remotely.
var ErrRollback = errors.New("remote index went back")

// ErrSeqExhausted is returned when a commit would supersede a manifest
// whose sequence is at index.MaxSeq.
var ErrSeqExhausted = errors.New("remote index sequence is at its maximum")

// RollbackError says which sequence this cache had seen and which it read.
type RollbackError struct {
	Seen uint64 // the highest sequence this cache saw
	Got  uint64 // the sequence just read
}

func (e *RollbackError) Error() string {
	if e.Got == e.Seen {
		return fmt.Sprintf("remote manifest at seq %d differs from the seq %d this cache saw: %v", e.Got, e.Seen, ErrRollback)
	}
	return fmt.Sprintf("remote manifest at seq %d, this cache already saw seq %d: %v", e.Got, e.Seen, ErrRollback)
}

// Unwrap returns ErrRollback.
func (e *RollbackError) Unwrap() error { return ErrRollback }

// seen is the highest manifest this cache read or wrote.
type seen struct {
	seq  uint64
	hash string // sha256 of its bytes; "" before any manifest
}

func manifestHash(data []byte) string {
	if data == nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// manifestCache is the last manifest this cache read or wrote, with the
// version from the same response (or from its own write). It lets a read
// of an unchanged manifest cost one bodyless conditional request.
type manifestCache struct {
	data    []byte
	version backend.Version
	seq     uint64 // so a slow read never replaces a newer cached manifest
	carry   []byte // index.Head.Carry: lets the next commit's entry be cumulative
}

// readManifest reads the manifest, conditionally on the cached version,
// and refuses one older than this cache had seen when the read began.
func (s *Syncer) readManifest(ctx context.Context, b backend.Backend) (index.Head, error) {
	s.rmu.Lock()
	c, base := s.mcache, s.seen
	s.rmu.Unlock()
	h, err := s.fetchManifest(ctx, b, c)
	if err != nil {
		return h, err
	}
	return h, s.accept(h, base)
}

// fetchManifest reads the head, conditionally on the copy c this cache
// holds when it has one, and caches what it read.
func (s *Syncer) fetchManifest(ctx context.Context, b backend.Backend, c manifestCache) (index.Head, error) {
	h, err := s.readSince(ctx, b, c)
	if errors.Is(err, errNoHeldCopy) {
		h, err = index.ReadHead(ctx, b, s.cfg.Now)
	}
	if err != nil {
		return h, err
	}
	s.cacheManifest(h)
	return h, nil
}

// errNoHeldCopy: the cache holds no copy of the head, or one that does not
// decode, so the head is read whole.
var errNoHeldCopy = errors.New("no held copy of the head")

// readSince reads the head against the copy c: in a log bucket the entry
// after c's, in version 3 the manifest If-None-Match c's version. The copy
// is decoded only when it is the answer (or the log's starting point).
func (s *Syncer) readSince(ctx context.Context, b backend.Backend, c manifestCache) (index.Head, error) {
	if c.version == "" {
		return index.Head{}, errNoHeldCopy
	}
	held := func() (index.Head, error) {
		m, err := index.DecodeManifest(index.ManifestKey, c.data)
		if err != nil {
			return index.Head{}, errNoHeldCopy // a damaged local copy
		}
		return index.Head{Manifest: m, Data: c.data, Version: c.version}.WithCarry(c.carry), nil
	}
	if index.IsLogVersion(c.version) {
		known, err := held()
		if err != nil {
			return known, err
		}
		h, err := index.ReadHeadSince(ctx, b, known, s.cfg.Now)
		if errors.Is(err, backend.ErrNotModified) {
			err = nil // h is known, its observation renewed
		}
		return h, err
	}
	h, err := index.ReadManifest(ctx, b, backend.GetOptions{IfNoneMatch: c.version})
	if errors.Is(err, backend.ErrNotModified) {
		return held()
	}
	return h, err
}

// cacheManifest remembers a manifest read or written, unless a concurrent
// operation already cached a newer one.
func (s *Syncer) cacheManifest(h index.Head) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if s.mcache.version == "" || h.Manifest.Seq >= s.mcache.seq {
		s.mcache = manifestCache{data: h.Data, version: h.Version, seq: h.Manifest.Seq, carry: h.Carry()}
	}
}

// accept checks h against base, the highest manifest this cache had seen
// when the request that returned h was sent, and remembers it. A manifest
// that went back is refused. Comparing with the current value instead
// would refuse a read that a concurrent operation's newer read or commit
// merely overtook.
func (s *Syncer) accept(h index.Head, base seen) error {
	seq, hash := h.Manifest.Seq, manifestHash(h.Data)
	if h.Version == "" {
		seq, hash = 0, ""
	}
	s.rmu.Lock()
	defer s.rmu.Unlock()
	cur := s.seen
	switch {
	case seq < base.seq, seq == base.seq && base.hash != "" && hash != base.hash:
		s.mcache = manifestCache{}
		return &RollbackError{Seen: base.seq, Got: seq}
	case seq == cur.seq && cur.hash != "" && hash != cur.hash:
		// Two manifests of one sequence: the store forked.
		s.mcache = manifestCache{}
		return &RollbackError{Seen: cur.seq, Got: seq}
	}
	if seq > cur.seq || cur.hash == "" {
		s.seen = seen{seq: seq, hash: hash}
	}
	return nil
}

// seenNow returns the highest manifest seen so far.
func (s *Syncer) seenNow() seen {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	return s.seen
}

// saveRemote persists the manifest cache and the highest manifest seen,
// inside the caller's write transaction. Write transactions run one at a
// time and the in-memory values only move forward, so the stored ones
// only move forward too.
func (s *Syncer) saveRemote(t stx) error {
	s.rmu.Lock()
	c, sn := s.mcache, s.seen
	s.rmu.Unlock()
	return t.saveRemote(c, sn)
}

// shards loads shard objects: from this operation's memory, then the local
// cache (shards are immutable, so a cached copy is always current), then
// the store. Fetched shards are verified and remembered for save.
type shards struct {
	s       *Syncer
	b       backend.Backend
	mu      sync.Mutex
	loaded  map[string]map[string]index.Entry
	fetched map[string][]byte // read from the store or written by this operation
}

func (s *Syncer) newShards(b backend.Backend) *shards {
	return &shards{s: s, b: b, loaded: map[string]map[string]index.Entry{}, fetched: map[string][]byte{}}
}

// get returns the entries of shard i of m.
func (sh *shards) get(ctx context.Context, m *index.Manifest, i int) (map[string]index.Entry, error) {
	id := m.Shards[i].ID
	sh.mu.Lock()
	e, ok := sh.loaded[id]
	sh.mu.Unlock()
	if ok {
		return e, nil
	}
	if e, ok := sh.s.memo.get(id, m.Range(i)); ok {
		sh.mu.Lock()
		sh.loaded[id] = e
		sh.mu.Unlock()
		return e, nil
	}
	var data []byte
	_ = sh.s.st.view(func(t stx) error { data = t.cachedShard(id); return nil })
	if data != nil {
		entries, err := index.DecodeShard(id, m.Range(i), data)
		if err == nil {
			sh.s.memo.put(id, entries)
			sh.mu.Lock()
			sh.loaded[id] = entries
			sh.mu.Unlock()
			return entries, nil
		}
		// A damaged local copy is not evidence about the remote: refetch.
		_ = sh.s.st.update(func(t stx) error { return t.dropCachedShard(id) })
	}
	entries, data, err := index.ReadShardBytes(ctx, sh.b, m, i)
	if err != nil {
		return nil, err
	}
	sh.s.memo.put(id, entries)
	sh.mu.Lock()
	sh.loaded[id] = entries
	sh.fetched[id] = data
	sh.mu.Unlock()
	return entries, nil
}

// prefetch loads the given shards of m in parallel.
func (sh *shards) prefetch(ctx context.Context, m *index.Manifest, is []int, limit int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for _, i := range is {
		g.Go(func() error {
			_, err := sh.get(ctx, m, i)
			return err
		})
	}
	return g.Wait()
}

// remember adds a shard this operation wrote, so later reads need no GET.
func (sh *shards) remember(id string, data []byte, entries map[string]index.Entry) {
	sh.s.memo.put(id, entries)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.loaded[id] = entries
	sh.fetched[id] = data
}

// absorb adds the shards another operation loaded, so a combined commit
// does not fetch them again (shards are immutable: one id, one content).
func (sh *shards) absorb(o *shards) {
	o.mu.Lock()
	loaded, fetched := maps.Clone(o.loaded), maps.Clone(o.fetched)
	o.mu.Unlock()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	maps.Copy(sh.loaded, loaded)
	maps.Copy(sh.fetched, fetched)
}

func (sh *shards) entries(id string) map[string]index.Entry {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.loaded[id]
}

func (sh *shards) bytes(id string) []byte {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.fetched[id]
}

// save stores every shard fetched or written in this operation in the local
// cache, inside the caller's transaction.
func (sh *shards) save(t stx) error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for id, data := range sh.fetched {
		if err := t.cacheShard(id, data); err != nil {
			return err
		}
	}
	return nil
}
