package syncer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
}

// readManifest reads the manifest, conditionally on the cached version,
// and refuses one older than this cache has seen.
func (s *Syncer) readManifest(ctx context.Context, b backend.Backend) (index.Head, error) {
	h, err := s.fetchManifest(ctx, b)
	if err != nil {
		return h, err
	}
	return h, s.accept(h)
}

func (s *Syncer) fetchManifest(ctx context.Context, b backend.Backend) (index.Head, error) {
	c := s.mcache
	if c.version != "" {
		h, err := index.ReadManifest(ctx, b, backend.GetOptions{IfNoneMatch: c.version})
		if errors.Is(err, backend.ErrNotModified) {
			m, derr := index.DecodeManifest(index.ManifestKey, c.data)
			if derr == nil {
				return index.Head{Manifest: m, Data: c.data, Version: c.version}, nil
			}
			// A damaged local copy: ask for the bytes.
		} else if err != nil {
			return h, err
		} else {
			s.mcache = manifestCache{data: h.Data, version: h.Version}
			return h, nil
		}
	}
	h, err := index.ReadManifest(ctx, b, backend.GetOptions{})
	if err != nil {
		return h, err
	}
	s.mcache = manifestCache{data: h.Data, version: h.Version}
	return h, nil
}

// accept checks h against the highest manifest this cache saw and
// remembers it. A manifest that went back is refused.
func (s *Syncer) accept(h index.Head) error {
	seq, hash := h.Manifest.Seq, manifestHash(h.Data)
	if h.Version == "" {
		seq, hash = 0, ""
	}
	switch {
	case seq < s.seen.seq, seq == s.seen.seq && s.seen.hash != "" && hash != s.seen.hash:
		s.mcache = manifestCache{}
		return &RollbackError{Seen: s.seen.seq, Got: seq}
	}
	s.seen = seen{seq: seq, hash: hash}
	return nil
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
	var data []byte
	_ = sh.s.st.view(func(t stx) error { data = t.cachedShard(id); return nil })
	if data != nil {
		entries, err := index.DecodeShard(id, m.Range(i), data)
		if err == nil {
			sh.mu.Lock()
			sh.loaded[id] = entries
			sh.mu.Unlock()
			return entries, nil
		}
		// A damaged local copy is not evidence about the remote: refetch.
		_ = sh.s.st.update(func(t stx) error { return t.tx.Bucket(bucketShards).Delete([]byte(id)) })
	}
	entries, data, err := index.ReadShardBytes(ctx, sh.b, m, i)
	if err != nil {
		return nil, err
	}
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
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.loaded[id] = entries
	sh.fetched[id] = data
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
