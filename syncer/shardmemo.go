package syncer

import (
	"sync"

	"github.com/siltsync/silt/index"
)

// memoShards bounds shardMemo: at most a few thousand entries a shard, so
// a few megabytes.
const memoShards = 64

// shardMemo keeps the shards this process decoded or wrote, decoded, across
// operations: a host's steps pull a model right after another step's push
// wrote its shard, and each pull decoded it again (issue 23). Shards are
// immutable, named by their content, so a remembered id is always that
// content; only the range check depends on the manifest naming it, and
// the lowest and highest key answer it. The maps are shared by every
// operation that reads them: read-only, as every reader of shards.get
// treats them (a merge clones before it edits).
type shardMemo struct {
	mu    sync.Mutex
	byID  map[string]memoShard
	order []string // insertion order, oldest first
}

type memoShard struct {
	entries map[string]index.Entry
	lo, hi  string // the lowest and highest key, for the range check
}

// get returns the entries of shard id if remembered and r holds them all.
func (sm *shardMemo) get(id string, r index.Range) (map[string]index.Entry, bool) {
	sm.mu.Lock()
	ms, ok := sm.byID[id]
	sm.mu.Unlock()
	if !ok || len(ms.entries) > 0 && !(r.Contains(ms.lo) && r.Contains(ms.hi)) {
		return nil, false
	}
	return ms.entries, true
}

// put remembers the entries of shard id, forgetting the oldest past the bound.
func (sm *shardMemo) put(id string, entries map[string]index.Entry) {
	ms := memoShard{entries: entries}
	for p := range entries { // a path is never empty, so "" means none yet
		if ms.lo == "" || p < ms.lo {
			ms.lo = p
		}
		ms.hi = max(ms.hi, p)
	}
	sm.mu.Lock()
	defer sm.mu.Unlock()
	if sm.byID == nil {
		sm.byID = map[string]memoShard{}
	}
	if _, ok := sm.byID[id]; ok {
		return
	}
	sm.byID[id] = ms
	sm.order = append(sm.order, id)
	if len(sm.order) > memoShards {
		delete(sm.byID, sm.order[0])
		sm.order = sm.order[1:]
	}
}
