package syncer

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/siltsync/silt/backend"
)

// snapshot is one manifest as read, with the version from the same response.
type snapshot struct {
	m       *Manifest
	version backend.Version // "" when no manifest exists yet
}

// readManifest reads the manifest. A missing manifest is an empty index
// (a fresh bucket); anything unreadable is an error, never "empty".
func readManifest(ctx context.Context, b backend.Backend) (snapshot, error) {
	data, info, err := backend.ReadAll(ctx, b, manifestKey, backend.GetOptions{}, maxIndexObject)
	if backend.IsNotExist(err) {
		return snapshot{m: &Manifest{Format: FormatVersion}}, nil
	}
	if err != nil {
		return snapshot{}, fmt.Errorf("read manifest: %w", err)
	}
	m, err := decodeManifest(data)
	if err != nil {
		return snapshot{}, err
	}
	return snapshot{m: m, version: info.Version}, nil
}

// manifestCache is the last manifest this cache read or wrote, with the
// version from the same response (or from its own write). It lets a read
// of an unchanged manifest cost one bodyless conditional request.
type manifestCache struct {
	data    []byte
	version backend.Version
}

// readManifest reads the manifest conditionally on the cached version.
// The cached bytes are used only when the store says they are current.
func (s *Syncer) readManifest(ctx context.Context, b backend.Backend) (snapshot, error) {
	c := s.mcache
	if c.version == "" {
		return s.readManifestFresh(ctx, b)
	}
	data, info, err := backend.ReadAll(ctx, b, manifestKey, backend.GetOptions{IfNoneMatch: c.version}, maxIndexObject)
	switch {
	case errors.Is(err, backend.ErrNotModified):
		m, derr := decodeManifest(c.data)
		if derr != nil { // a damaged local copy: ask for the bytes
			s.mcache = manifestCache{}
			return s.readManifestFresh(ctx, b)
		}
		return snapshot{m: m, version: c.version}, nil
	case backend.IsNotExist(err):
		s.mcache = manifestCache{}
		return snapshot{m: &Manifest{Format: FormatVersion}}, nil
	case err != nil:
		return snapshot{}, fmt.Errorf("read manifest: %w", err)
	}
	return s.remember(data, info.Version)
}

func (s *Syncer) readManifestFresh(ctx context.Context, b backend.Backend) (snapshot, error) {
	data, info, err := backend.ReadAll(ctx, b, manifestKey, backend.GetOptions{}, maxIndexObject)
	if backend.IsNotExist(err) {
		return snapshot{m: &Manifest{Format: FormatVersion}}, nil
	}
	if err != nil {
		return snapshot{}, fmt.Errorf("read manifest: %w", err)
	}
	return s.remember(data, info.Version)
}

// remember decodes manifest bytes and caches them with their version.
func (s *Syncer) remember(data []byte, v backend.Version) (snapshot, error) {
	m, err := decodeManifest(data)
	if err != nil {
		return snapshot{}, err
	}
	s.mcache = manifestCache{data: data, version: v}
	return snapshot{m: m, version: v}, nil
}

// shards loads shard objects by id: from this operation's memory, then the
// local cache (shards are immutable, so a cached copy is always current),
// then the store. Fetched shards are verified against their content hash
// and remembered for saveShards.
type shards struct {
	s       *Syncer
	b       backend.Backend
	mu      sync.Mutex
	loaded  map[string]map[string]Entry
	fetched map[string][]byte // read from the store by this operation
}

func (s *Syncer) newShards(b backend.Backend) *shards {
	return &shards{s: s, b: b, loaded: map[string]map[string]Entry{}, fetched: map[string][]byte{}}
}

func (sh *shards) get(ctx context.Context, id string) (map[string]Entry, error) {
	sh.mu.Lock()
	e, ok := sh.loaded[id]
	sh.mu.Unlock()
	if ok {
		return e, nil
	}
	var data []byte
	_ = sh.s.st.view(func(t stx) error { data = t.cachedShard(id); return nil })
	fromCache := data != nil
	if !fromCache {
		var err error
		data, _, err = backend.ReadAll(ctx, sh.b, shardKey(id), backend.GetOptions{}, maxIndexObject)
		if backend.IsNotExist(err) {
			return nil, corrupt(shardKey(id), "listed in the manifest but missing")
		}
		if err != nil {
			return nil, fmt.Errorf("read shard %s: %w", id, err)
		}
	}
	entries, err := decodeShard(id, data)
	if err != nil && fromCache {
		// A damaged local copy is not evidence about the remote: refetch.
		_ = sh.s.st.update(func(t stx) error { return t.tx.Bucket(bucketShards).Delete([]byte(id)) })
		return sh.get(ctx, id)
	}
	if err != nil {
		return nil, err
	}
	sh.mu.Lock()
	sh.loaded[id] = entries
	if !fromCache {
		sh.fetched[id] = data
	}
	sh.mu.Unlock()
	return entries, nil
}

// prefetch loads the given shards in parallel.
func (sh *shards) prefetch(ctx context.Context, ids []string, limit int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for _, id := range ids {
		g.Go(func() error {
			_, err := sh.get(ctx, id)
			return err
		})
	}
	return g.Wait()
}

// remember adds a shard this operation wrote, so later reads need no GET.
func (sh *shards) remember(id string, data []byte, entries map[string]Entry) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.loaded[id] = entries
	sh.fetched[id] = data
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
