package syncer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/siltsync/silt/backend"
)

// FormatVersion is the remote format this package writes. A manifest with a
// larger format is refused with ErrNewerFormat; see FORMAT.md.
const FormatVersion = 1

// Internal keys, relative to the namespace root. Nothing under InternalDir
// ever syncs as data.
const (
	InternalDir  = ".silt"
	manifestKey  = InternalDir + "/manifest.json"
	shardsPrefix = InternalDir + "/shards/"
	controlDir   = InternalDir + "/control/"
)

// maxIndexObject bounds what a manifest or shard read may allocate.
const maxIndexObject = 256 << 20

// ErrNewerFormat is returned when the bucket was written by a newer silt
// whose format this version cannot read safely.
var ErrNewerFormat = errors.New("remote index has a newer format")

// ErrCorruptIndex is returned (wrapped in a *FormatError) when a manifest or
// shard does not parse or breaks a rule of the format.
var ErrCorruptIndex = errors.New("corrupt remote index")

// FormatError says which index object is bad and why.
type FormatError struct {
	Key    string
	Reason string
	Err    error // ErrCorruptIndex or ErrNewerFormat
}

func (e *FormatError) Error() string { return fmt.Sprintf("%s: %s: %v", e.Key, e.Reason, e.Err) }

func (e *FormatError) Unwrap() error { return e.Err }

func corrupt(key, format string, args ...any) error {
	return &FormatError{Key: key, Reason: fmt.Sprintf(format, args...), Err: ErrCorruptIndex}
}

// Entry is one committed file in a shard. It holds nothing per-machine.
type Entry struct {
	Size    int64           `json:"size"`
	SHA256  string          `json:"sha256"`
	Version backend.Version `json:"version"`
	Seq     uint64          `json:"seq"` // manifest seq of the commit that wrote it
}

// ShardRef is the manifest's pointer to one shard: it covers the keys from
// Lo (inclusive) up to the next shard's Lo (exclusive).
type ShardRef struct {
	Lo    string `json:"lo"`
	ID    string `json:"id"`
	Count int    `json:"count"`
	Bytes int64  `json:"bytes"`
}

// Manifest is the root of the index: the only object the protocol mutates,
// always by compare-and-swap.
type Manifest struct {
	Format int               `json:"format"`
	Seq    uint64            `json:"seq"`
	Shards []ShardRef        `json:"shards"`
	Fences map[string]uint64 `json:"fences,omitempty"` // lock key -> highest fencing token that committed
}

// shardFile is the JSON form of an immutable shard object.
type shardFile struct {
	Format  int              `json:"format"`
	Entries map[string]Entry `json:"entries"`
}

func shardKey(id string) string { return shardsPrefix + id + ".json" }

// shardID names a shard by the hash of its bytes, so a shard is verified by
// the very response that delivered it and rewriting identical content is
// harmless.
func shardID(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

func encodeShard(entries map[string]Entry) ([]byte, string) {
	data, err := json.Marshal(shardFile{Format: FormatVersion, Entries: entries})
	if err != nil {
		panic(err) // only plain data types; cannot fail
	}
	return data, shardID(data)
}

func decodeShard(id string, data []byte) (map[string]Entry, error) {
	key := shardKey(id)
	if got := shardID(data); got != id {
		return nil, corrupt(key, "content hash %s does not match its name", got)
	}
	var f shardFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, corrupt(key, "%v", err)
	}
	if f.Format > FormatVersion {
		return nil, &FormatError{Key: key, Reason: fmt.Sprintf("format %d, this silt reads up to %d", f.Format, FormatVersion), Err: ErrNewerFormat}
	}
	if f.Format < 1 {
		return nil, corrupt(key, "missing format")
	}
	if f.Entries == nil {
		f.Entries = map[string]Entry{}
	}
	for p, e := range f.Entries {
		if err := validDataPath(p); err != nil {
			return nil, corrupt(key, "entry %q: %v", p, err)
		}
		if e.Size < 0 || len(e.SHA256) != 64 || e.Version == "" {
			return nil, corrupt(key, "entry %q: bad size, sha256 or version", p)
		}
	}
	return f.Entries, nil
}

func encodeManifest(m *Manifest) []byte {
	data, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return data
}

func decodeManifest(data []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, corrupt(manifestKey, "%v", err)
	}
	if m.Format > FormatVersion {
		return nil, &FormatError{Key: manifestKey, Reason: fmt.Sprintf("format %d, this silt reads up to %d", m.Format, FormatVersion), Err: ErrNewerFormat}
	}
	if m.Format < 1 {
		return nil, corrupt(manifestKey, "missing format")
	}
	if err := m.check(); err != nil {
		return nil, corrupt(manifestKey, "%v", err)
	}
	return &m, nil
}

// check enforces that the shard ranges tile the key space: the first starts
// at "", the rest strictly ascend, and every id is well formed.
func (m *Manifest) check() error {
	if len(m.Shards) == 0 {
		return nil
	}
	if m.Shards[0].Lo != "" {
		return errors.New("first shard does not start at the empty key")
	}
	for i, s := range m.Shards {
		if i > 0 && s.Lo <= m.Shards[i-1].Lo {
			return fmt.Errorf("shard %d: lo %q not above %q", i, s.Lo, m.Shards[i-1].Lo)
		}
		if len(s.ID) != 32 || strings.Trim(s.ID, "0123456789abcdef") != "" {
			return fmt.Errorf("shard %d: bad id %q", i, s.ID)
		}
		if s.Count < 0 {
			return fmt.Errorf("shard %d: negative count", i)
		}
	}
	return nil
}

// hi returns the exclusive upper bound of shard i, "" meaning unbounded.
func (m *Manifest) hi(i int) string {
	if i+1 < len(m.Shards) {
		return m.Shards[i+1].Lo
	}
	return ""
}

// shardFor returns the index of the shard whose range holds key.
func (m *Manifest) shardFor(key string) int {
	// The last shard whose Lo <= key.
	return sort.Search(len(m.Shards), func(i int) bool { return m.Shards[i].Lo > key }) - 1
}

// Entries counts the committed files.
func (m *Manifest) Entries() int {
	n := 0
	for _, s := range m.Shards {
		n += s.Count
	}
	return n
}

// syncKey names shard i of m together with its range. "Every entry of this
// shard is reconciled locally" is recorded under it: the same shard object
// over a wider range (after a neighbour was dropped) is a different claim.
func syncKey(m *Manifest, i int) string {
	return m.Shards[i].ID + "|" + m.Shards[i].Lo + "|" + m.hi(i)
}
