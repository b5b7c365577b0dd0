package index

import (
	"maps"
	"slices"
)

// Bounds of the shard-split policy (FORMAT.md, "Manifest", field
// shard_max_entries). The policy is the bucket's, not a writer's: every
// writer splits at the bound its manifest records, so caches configured
// differently never undo each other's layout.
const (
	// DefaultShardMaxEntries is the bound a writer records when it
	// configures none.
	DefaultShardMaxEntries = 1000
	// MinShardMaxEntries is the smallest bound: a split shard holds half
	// the bound, and fewer than two entries per part would split forever.
	MinShardMaxEntries = 4
	// MaxShardMaxEntries is the largest bound: at a typical 200 bytes an
	// entry a full shard stays far below MaxShardBytes, which a larger
	// bound could push a shard of long paths past (unreadable).
	MaxShardMaxEntries = 1 << 16

	// DefaultShardMaxBytes is the byte bound a DeltaFormat bucket records
	// at its creation: a one-file commit writes one shard, so this bounds
	// most of its index bytes (FORMAT.md, "Log entries"), under the 64 KiB a
	// commit may cost with its delta and its share of a checkpoint; larger
	// shards mean fewer requests for a cold push or pull.
	DefaultShardMaxBytes = 48 << 10
	// DefaultShardMaxBytes6 is the byte bound a FrameFormat bucket
	// records: shards are stored as zstd frames, about a third of their
	// plain bytes for typical paths (3.3x for unpacked entries, 4.9x for
	// packed ones), so a full one costs a one-file commit about what a
	// DefaultShardMaxBytes shard did in format 5, with about three times
	// the entries, and a third of the requests for a cold push or pull.
	DefaultShardMaxBytes6 = 128 << 10
	// MinShardMaxBytes and MaxShardMaxBytes bound a recorded byte bound:
	// above a few entries a part, below MaxShardBytes.
	MinShardMaxBytes = 4 << 10
	MaxShardMaxBytes = 16 << 20
)

// entryWireBytes estimates the bytes entry p takes in an encoded shard.
// Every writer estimates alike, so a split is the bucket's, not a writer's.
func entryWireBytes(p string, e Entry) int {
	n := len(p) + 110
	if e.Pack != "" {
		n += 90
	}
	return n
}

// ClampShardBound returns n as a writer may record it: DefaultShardMaxEntries
// when n is 0 or negative, else n within [MinShardMaxEntries,
// MaxShardMaxEntries].
func ClampShardBound(n int) int {
	if n <= 0 {
		return DefaultShardMaxEntries
	}
	return min(max(n, MinShardMaxEntries), MaxShardMaxEntries)
}

// ShardBound returns the bound the next commit over m splits at and
// records: m's recorded bound when it has one, else own (the committing
// writer's setting, clamped). A manifest without the field is a bucket
// whose policy no writer recorded yet (a new bucket, or one written before
// the field existed): its next writer records its own, as when it creates
// the bucket, so an older bucket keeps the layout its writers gave it.
func (m *Manifest) ShardBound(own int) int {
	if m.ShardMaxEntries != 0 {
		return m.ShardMaxEntries
	}
	return ClampShardBound(own)
}

// ByteBound returns the shard byte bound the next commit over m splits at
// and records: m's recorded one, else the default of its format in a
// bucket of the log of deltas (whose creation records it), else none (0).
// A head of no commit yet is a bucket the commit creates in
// DefaultFormat.
func (m *Manifest) ByteBound() int {
	switch {
	case m.ShardMaxBytes != 0:
		return m.ShardMaxBytes
	case m.Format == DeltaFormat:
		return DefaultShardMaxBytes
	case m.Format == FrameFormat:
		return DefaultShardMaxBytes6
	}
	return 0
}

// ShardPart is one shard of a split: the keys from Lo up to the next
// part's Lo.
type ShardPart struct {
	Lo      string
	Entries map[string]Entry
}

// Split cuts the entries of the shard starting at lo into parts of at most
// half the bound m records (DefaultShardMaxEntries when none) when they
// exceed it, so a freshly split shard has room to grow before it splits
// again. An empty shard stays one (empty) part; the writer drops it.
//
// In a bucket that records shard_max_bytes, a shard whose estimated bytes
// exceed it is cut too, into parts of at most three quarters of that
// bound: room for a few dozen entries before a part splits again, and
// few enough parts that a cold push or pull of a large tree stays a few
// requests per megabyte of index.
func (m *Manifest) Split(lo string, entries map[string]Entry) []ShardPart {
	bound := m.ShardBound(0) // recorded, else the default
	total := 0
	if m.ShardMaxBytes > 0 {
		for p, e := range entries {
			total += entryWireBytes(p, e)
		}
	}
	if len(entries) <= bound && (m.ShardMaxBytes == 0 || total <= m.ShardMaxBytes) {
		return []ShardPart{{lo, entries}}
	}
	keys := slices.Sorted(maps.Keys(entries))
	size, bytes := bound/2, m.ShardMaxBytes*3/4
	var parts []ShardPart
	for start := 0; start < len(keys); {
		end, n := start, 0
		for end < len(keys) && end-start < size && (bytes == 0 || end == start || n+entryWireBytes(keys[end], entries[keys[end]]) <= bytes) {
			n += entryWireBytes(keys[end], entries[keys[end]])
			end++
		}
		part := ShardPart{Lo: keys[start], Entries: make(map[string]Entry, end-start)}
		if start == 0 {
			part.Lo = lo
		}
		for _, k := range keys[start:end] {
			part.Entries[k] = entries[k]
		}
		parts = append(parts, part)
		start = end
	}
	return parts
}
