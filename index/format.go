package index

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/siltsync/silt/internal/frame"
)

// FormatVersion is format 3, whose manifest is its commit point: older
// silts wrote it, this one reads it and refuses to commit to it
// (ErrMigrateRequired); see FORMAT.md, "Reading older formats". Shards
// still carry it. This package reads MinFormatVersion up to
// MaxFormatVersion; a larger format is refused with ErrNewerFormat,
// format 1 with ErrOlderFormat.
const FormatVersion = 3

// LogFormat is format 4, the log of whole states (FORMAT.md, "Reading
// older formats"): read, not written.
const LogFormat = 4

// DeltaFormat is LogFormat with log entries that hold the change from
// their predecessor, not the whole manifest, and paged checkpoints of the
// whole shard list (FORMAT.md, "Log entries" and "Checkpoints"): a
// commit's index bytes grow with what it changed, not with the bucket.
const DeltaFormat = 5

// FrameFormat is DeltaFormat whose shards and checkpoint pages are stored
// as frames (internal/frame: zstd when it saves, a key-id field for
// sealing), named by the hash of their plain bytes, with a larger shard
// byte bound (DefaultShardMaxBytes6) since a frame of one holds about a
// third of its plain bytes. Log entries, roots and the hint stay JSON, so
// an older silt that meets the bucket says "a newer format", never
// "corrupt" (FORMAT.md, "Frames").
const FrameFormat = 6

// DefaultFormat is the one format this silt writes: the log of deltas,
// whose commits cost what they change at any size, stored in frames. A
// store without conditional writes hosts it only under a commit lock.
const DefaultFormat = FrameFormat

// MaxFormatVersion is the newest format this package reads (and the one
// it writes).
const MaxFormatVersion = FrameFormat

// isDeltaLog reports whether format is one of the log of deltas (5 or 6),
// which read alike but for how their shards and pages are stored.
func isDeltaLog(format int) bool { return format == DeltaFormat || format == FrameFormat }

// MinFormatVersion is the oldest format this package reads: format 2 is
// format 3 without packs, so a format-2 bucket is read as it is and becomes
// format 3 at its next commit.
const MinFormatVersion = 2

// Keys of the index, relative to the namespace root.
const (
	ManifestKey       = InternalDir + "/manifest.json"
	ShardsPrefix      = InternalDir + "/shards/"
	ObjectsPrefix     = InternalDir + "/objects/"
	PacksPrefix       = InternalDir + "/packs/"
	HistoryPrefix     = InternalDir + "/manifests/"
	LogPrefix         = InternalDir + "/log/"
	CheckpointsPrefix = InternalDir + "/checkpoints/"
	PagesPrefix       = InternalDir + "/pages/"
	ControlPrefix     = InternalDir + "/control/"
	TmpPrefix         = InternalDir + "/tmp/"
	LocksPrefix       = InternalDir + "/locks/" // lock objects (package lock) of the CLI, silt serve and hosts
	historySuffix     = ".json"
	historySeqWidth   = 20
)

// Bounds on what one read of an index object may allocate. A larger object
// is refused with ErrIndexTooLarge before it is read past the bound.
const (
	MaxManifestBytes = 64 << 20
	MaxShardBytes    = 64 << 20
)

// MaxSeq is the last sequence a commit may write; a manifest at MaxSeq can
// be read but not superseded.
const MaxSeq = math.MaxUint64 - 1

// ObjectKey names the immutable data object holding the bytes whose sha256
// is sha (64 lowercase hex digits).
func ObjectKey(sha string) string { return ObjectsPrefix + sha[:2] + "/" + sha }

// PackKey names the immutable pack object whose bytes hash to sha (64
// lowercase hex digits): the concatenated bytes of the small files whose
// entries name it.
func PackKey(sha string) string { return PacksPrefix + sha[:2] + "/" + sha }

// ShardKey names the immutable shard object with this id.
func ShardKey(id string) string { return ShardsPrefix + id + ".json" }

// HistoryKey names the history copy of the manifest at seq.
func HistoryKey(seq uint64) string {
	return fmt.Sprintf("%s%0*d%s", HistoryPrefix, historySeqWidth, seq, historySuffix)
}

// ParseHistoryKey returns the seq a history key names.
func ParseHistoryKey(key string) (uint64, bool) { return parseSeqKey(HistoryPrefix, key) }

// LogKey names the log entry of seq in a LogFormat bucket: the manifest
// committed at seq, created once.
func LogKey(seq uint64) string {
	return fmt.Sprintf("%s%0*d%s", LogPrefix, historySeqWidth, seq, historySuffix)
}

// ParseLogKey returns the seq a log key names.
func ParseLogKey(key string) (uint64, bool) { return parseSeqKey(LogPrefix, key) }

func parseSeqKey(prefix, key string) (uint64, bool) {
	s, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, historySuffix)
	if !ok || len(s) != historySeqWidth || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	var n uint64
	for _, c := range s {
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// Entry is one committed file. Its bytes are the object ObjectKey(SHA256)
// or, when Pack is set, the Size bytes at Off in the pack PackKey(Pack).
// SHA256 is always the hash of the file's own bytes, so every read is
// verified against it. It holds nothing per machine.
type Entry struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Seq    uint64 `json:"seq"`            // manifest seq of the commit that wrote it
	Pack   string `json:"pack,omitempty"` // sha256 of the pack holding the bytes (format 3)
	Off    int64  `json:"off,omitempty"`  // offset of the bytes in the pack
	// Exec records the file's executable bit (FORMAT.md, "Shard"): a pull
	// installs it 0755 rather than 0644, before the umask. Omitted when
	// false, so readers that predate it read the entry as before.
	Exec bool `json:"x,omitempty"`
	// Z, in a packed entry of format 6, is the length of the frame
	// (internal/frame: zstd or plain) the pack holds at Off, which decodes
	// to ZN bytes holding the Size bytes at In; 0: the pack holds the
	// bytes themselves at Off, as every format before 6 wrote them. A
	// frame holds several small files (FORMAT.md, "Packs"); ZN lets gc
	// tell how much of a frame is live.
	Z  int64 `json:"z,omitempty"`
	ZN int64 `json:"zn,omitempty"`
	In int64 `json:"in,omitempty"`
}

// A writer groups pack members below FrameGroup bytes into frames that
// close once they hold FrameGroup bytes, so a frame of several members
// holds less than MaxFrameGroup; a larger member is a frame of its own.
// No frame holds more than MaxFramed bytes (a reader decodes no more):
// a writer packs only files below it.
const (
	FrameGroup    = 64 << 10
	MaxFrameGroup = 2 * FrameGroup
	MaxFramed     = 64 << 20
)

// Packed reports whether e's bytes live in a pack.
func (e Entry) Packed() bool { return e.Pack != "" }

// Framed reports whether e's member of its pack is a frame (Z set).
func (e Entry) Framed() bool { return e.Z > 0 }

// Stored is how many bytes of its pack e's member takes from Off: the
// frame's length, or Size.
func (e Entry) Stored() int64 {
	if e.Z > 0 {
		return e.Z
	}
	return e.Size
}

// Location names where e's bytes are: the object key, or the pack key with
// the offset. Two entries with one location share their bytes.
func (e Entry) Location() string {
	if e.Packed() {
		return fmt.Sprintf("%s@%d", PackKey(e.Pack), e.Off)
	}
	return ObjectKey(e.SHA256)
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
	// ShardMaxEntries is the bucket's shard-split bound (Split, ShardBound):
	// recorded by the commit that creates the index, carried by every
	// later one. 0 means not recorded (omitted; readers that predate it
	// ignore it).
	ShardMaxEntries int `json:"shard_max_entries,omitempty"`
	// ShardMaxBytes, in a DeltaFormat bucket, bounds a shard's encoded
	// bytes as ShardMaxEntries bounds its entries (Split): recorded by
	// the commit that creates the index. 0: no byte bound.
	ShardMaxBytes int `json:"shard_max_bytes,omitempty"`
	// Prev, in a LogFormat log entry past seq 1, is the sha256 of the
	// bytes of the entry at seq-1: a reader reading forward checks that
	// each entry builds on the one it holds, so a forked log is refused.
	Prev string `json:"prev,omitempty"`
}

// manifestWire decodes a manifest, seeing whether shard_max_entries is
// present: an explicit 0 is hostile, not "not recorded".
type manifestWire struct {
	Manifest
	Bound *int `json:"shard_max_entries"` // shadows Manifest.ShardMaxEntries
	// A checkpoint root or a log delta of DeltaFormat carries these; read
	// as a manifest it would be an index without shards.
	Pages json.RawMessage `json:"pages"`
	State json.RawMessage `json:"state"`
}

// Empty returns the manifest of a bucket nothing was committed to.
func Empty() *Manifest { return &Manifest{Format: FormatVersion} }

type shardFile struct {
	Format  int              `json:"format"`
	Entries map[string]Entry `json:"entries"`
	// Salt makes the bytes of every shard a commit writes its own (see
	// EncodeFreshShard); readers ignore it.
	Salt string `json:"salt,omitempty"`
}

// ShardID names the plain bytes of a shard or page by their hash (the
// first 128 bits of SHA-256), so one is verified by the response that
// delivered it, once decoded from its frame.
func ShardID(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

// EncodeShard returns the stored bytes (in DefaultFormat: a frame) and
// the id of a shard holding entries.
func EncodeShard(entries map[string]Entry) ([]byte, string) {
	data, id := encodeShard(entries, "")
	return storeIndexObject(DefaultFormat, data), id
}

// EncodeFreshShard is EncodeShard with a random salt in the bytes, so the
// shard's name is one no store holds yet: a commit never adopts a shard
// already there, which may be garbage a concurrent GC has decided to
// delete (FORMAT.md, "Garbage collection").
func EncodeFreshShard(entries map[string]Entry) ([]byte, string) {
	data, id := encodeShard(entries, hex.EncodeToString(Trailer()[:8]))
	return storeIndexObject(DefaultFormat, data), id
}

func encodeShard(entries map[string]Entry, salt string) ([]byte, string) {
	if entries == nil {
		entries = map[string]Entry{}
	}
	data, err := json.Marshal(shardFile{Format: FormatVersion, Entries: entries, Salt: salt})
	if err != nil {
		panic(err) // plain data types only: cannot fail
	}
	return data, ShardID(data)
}

func checkFormat(key string, format int) error {
	switch {
	case format > MaxFormatVersion:
		return &FormatError{Key: key, Reason: fmt.Sprintf("format %d, this silt reads up to %d", format, MaxFormatVersion), Err: ErrNewerFormat}
	case format >= MinFormatVersion:
		return nil
	case format == 1:
		return &FormatError{Key: key, Reason: "format 1", Err: ErrOlderFormat}
	case format < 1:
		return corrupt(key, "missing or bad format %d", format)
	}
	return nil
}

// ValidSHA256 reports whether s is 64 lowercase hex digits.
func ValidSHA256(s string) bool { return len(s) == 64 && strings.Trim(s, "0123456789abcdef") == "" }

func validID(s string) bool { return len(s) == 32 && strings.Trim(s, "0123456789abcdef") == "" }

// DecodeShard decodes and checks the shard with this id whose manifest range
// is r, from its stored bytes (a frame, or the plain bytes of format 5 and
// older): the plain bytes must hash to id, and every entry must be a valid
// data path inside r with a sane size and sha256.
func DecodeShard(id string, r Range, data []byte) (map[string]Entry, error) {
	key := ShardKey(id)
	if len(data) > MaxShardBytes {
		return nil, &FormatError{Key: key, Reason: fmt.Sprintf("%d bytes, bound %d", len(data), MaxShardBytes), Err: ErrIndexTooLarge}
	}
	data, err := openIndexObject(key, data, MaxShardBytes)
	if err != nil {
		return nil, err
	}
	if got := ShardID(data); got != id {
		return nil, corrupt(key, "content hash %s does not match its name", got)
	}
	f, ok := decodeShardFast(data)
	if !ok {
		if err := json.Unmarshal(data, &f); err != nil {
			return nil, corrupt(key, "%v", err)
		}
	}
	if err := checkFormat(key, f.Format); err != nil {
		return nil, err
	}
	if f.Entries == nil {
		f.Entries = map[string]Entry{}
	}
	for p, e := range f.Entries {
		if err := ValidPath(p); err != nil {
			return nil, corrupt(key, "entry %q: %v", p, err)
		}
		if !r.Contains(p) {
			return nil, corrupt(key, "entry %q outside the shard's range [%q, %q)", p, r.Lo, r.Hi)
		}
		if e.Size < 0 || !ValidSHA256(e.SHA256) {
			return nil, corrupt(key, "entry %q: bad size or sha256", p)
		}
		if e.Pack != "" && (!ValidSHA256(e.Pack) || e.Off < 0 || e.Size == 0 || e.Off > math.MaxInt64-e.Size) {
			return nil, corrupt(key, "entry %q: bad pack, offset or size", p)
		}
		if e.Pack == "" && e.Off != 0 {
			return nil, corrupt(key, "entry %q: offset without a pack", p)
		}
		if e.Z != 0 && (e.Pack == "" || e.Z < frame.HeaderLen || e.Off > math.MaxInt64-e.Z) {
			return nil, corrupt(key, "entry %q: bad frame length %d", p, e.Z)
		}
		if e.Z != 0 && (e.In < 0 || e.In > math.MaxInt64-e.Size || e.ZN < e.In+e.Size || e.ZN > max(MaxFrameGroup, e.Size) || e.ZN > MaxFramed || e.Z > e.ZN+frame.HeaderLen) ||
			e.Z == 0 && (e.In != 0 || e.ZN != 0) {
			return nil, corrupt(key, "entry %q: bad place %d of %d in its frame", p, e.In, e.ZN)
		}
	}
	return f.Entries, nil
}

// EncodeManifest returns the bytes of m.
func EncodeManifest(m *Manifest) []byte {
	data, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return data
}

// DecodeManifest decodes and checks manifest bytes read from key (the
// current manifest or a history copy).
func DecodeManifest(key string, data []byte) (*Manifest, error) {
	if len(data) > MaxManifestBytes {
		return nil, &FormatError{Key: key, Reason: fmt.Sprintf("%d bytes, bound %d", len(data), MaxManifestBytes), Err: ErrIndexTooLarge}
	}
	var w manifestWire
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, corrupt(key, "%v", err)
	}
	m := w.Manifest
	if err := checkFormat(key, m.Format); err != nil {
		return nil, err
	}
	if w.Bound != nil {
		if *w.Bound == 0 {
			return nil, corrupt(key, "shard_max_entries 0 outside [%d, %d]", MinShardMaxEntries, MaxShardMaxEntries)
		}
		m.ShardMaxEntries = *w.Bound
	}
	switch {
	case w.Pages != nil || w.State != nil:
		return nil, corrupt(key, "a checkpoint or a log delta, not a manifest")
	case m.ShardMaxBytes != 0 && m.Format < DeltaFormat:
		return nil, corrupt(key, "shard_max_bytes in format %d", m.Format)
	case m.Prev != "" && m.Format < LogFormat:
		return nil, corrupt(key, "prev in format %d", m.Format)
	}
	if err := checkState(key, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// checkState checks a manifest's fields whatever its source: decoded
// (DecodeManifest), or built from a delta or a checkpoint.
func checkState(key string, n *Manifest) error {
	if b := n.ShardMaxEntries; b != 0 && (b < MinShardMaxEntries || b > MaxShardMaxEntries) {
		return corrupt(key, "shard_max_entries %d outside [%d, %d]", b, MinShardMaxEntries, MaxShardMaxEntries)
	}
	if b := n.ShardMaxBytes; b != 0 && (b < MinShardMaxBytes || b > MaxShardMaxBytes) {
		return corrupt(key, "shard_max_bytes %d outside [%d, %d]", b, MinShardMaxBytes, MaxShardMaxBytes)
	}
	if n.Prev != "" && !ValidSHA256(n.Prev) {
		return corrupt(key, "bad prev %q", n.Prev)
	}
	if n.Seq > MaxSeq {
		return corrupt(key, "seq %d is above MaxSeq %d", n.Seq, uint64(MaxSeq))
	}
	if err := n.check(); err != nil {
		return corrupt(key, "%v", err)
	}
	return nil
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
		if !validID(s.ID) {
			return fmt.Errorf("shard %d: bad id %q", i, s.ID)
		}
		if s.Count < 0 || s.Bytes < 0 {
			return fmt.Errorf("shard %d: negative count or size", i)
		}
	}
	return nil
}

// Hi returns the exclusive upper bound of shard i, "" meaning unbounded.
func (m *Manifest) Hi(i int) string {
	if i+1 < len(m.Shards) {
		return m.Shards[i+1].Lo
	}
	return ""
}

// Range returns the key range of shard i.
func (m *Manifest) Range(i int) Range { return Range{Lo: m.Shards[i].Lo, Hi: m.Hi(i)} }

// ShardFor returns the index of the shard whose range holds key, or -1 when
// the manifest has no shard.
func (m *Manifest) ShardFor(key string) int {
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

// SyncKey names shard i of m together with its range: "every entry of this
// shard is reconciled" is a claim about both.
func (m *Manifest) SyncKey(i int) string {
	return m.Shards[i].ID + "|" + m.Shards[i].Lo + "|" + m.Hi(i)
}

// LockKey is the key of the lock object named name (a model, "global"),
// relative to the namespace root: where `silt lock`, `silt push --lock` and
// silt serve keep locks, so that hosts and the command line contend for the
// same object.
func LockKey(name string) string { return LocksPrefix + name }
