package index

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/internal/frame"
)

// Snapshot is a read-only view of one committed index: what `silt ls`,
// `silt cat`, `silt export` and `silt check` read. It never lists the
// bucket.
type Snapshot struct {
	b    backend.Backend
	head Head
}

// OpenSnapshot reads the current manifest of the namespace root b (apply a
// namespace with backend.Prefixed first). An empty bucket is an empty
// snapshot.
func OpenSnapshot(ctx context.Context, b backend.Backend) (*Snapshot, error) {
	h, err := ReadManifest(ctx, b, backend.GetOptions{})
	if err != nil {
		return nil, err
	}
	return &Snapshot{b: b, head: h}, nil
}

// OpenSnapshotAt reads the snapshot committed at seq: the current manifest
// when seq is current, else its history copy. A history copy removed by GC
// (older than the grace period) is an error matching backend.ErrNotExist.
func OpenSnapshotAt(ctx context.Context, b backend.Backend, seq uint64) (*Snapshot, error) {
	cur, err := OpenSnapshot(ctx, b)
	if err != nil {
		return nil, err
	}
	if cur.head.Manifest.Seq == seq {
		return cur, nil
	}
	if seq > cur.head.Manifest.Seq {
		return nil, fmt.Errorf("snapshot %d: %w (current seq is %d)", seq, backend.ErrNotExist, cur.head.Manifest.Seq)
	}
	read := ReadHistory
	if cur.head.IsLog() {
		read = ReadLogEntry
	}
	h, err := read(ctx, b, seq)
	if backend.IsNotExist(err) && isDeltaLog(cur.head.Manifest.Format) && seq != genesisSeq {
		// A bucket migrated from format 3 keeps its older snapshots as
		// history copies (FORMAT.md, "Migrating a bucket").
		if hh, herr := ReadHistory(ctx, b, seq); herr == nil {
			h, err = hh, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot %d: %w", seq, err)
	}
	return &Snapshot{b: b, head: h}, nil
}

// Manifest returns the manifest as read.
func (s *Snapshot) Manifest() *Manifest { return s.head.Manifest }

// Seq returns the snapshot's sequence number.
func (s *Snapshot) Seq() uint64 { return s.head.Manifest.Seq }

// Walk calls fn in path order for every committed entry under prefix (a
// file or directory path; "" for all), reading only the covering shards.
func (s *Snapshot) Walk(ctx context.Context, prefix string, fn func(path string, e Entry) error) error {
	m := s.head.Manifest
	for _, i := range m.Cover(prefix) {
		entries, err := ReadShard(ctx, s.b, m, i)
		if err != nil {
			return err
		}
		for _, p := range slices.Sorted(maps.Keys(entries)) {
			if Under(p, prefix) {
				if err := fn(p, entries[p]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Lookup returns the committed entry of the file p (one shard read).
func (s *Snapshot) Lookup(ctx context.Context, p string) (Entry, bool, error) {
	m := s.head.Manifest
	i := m.ShardFor(p)
	if i < 0 {
		return Entry{}, false, nil
	}
	entries, err := ReadShard(ctx, s.b, m, i)
	if err != nil {
		return Entry{}, false, err
	}
	e, ok := entries[p]
	return e, ok, nil
}

// Open returns a reader of the bytes of e, committed at path p, that
// verifies them: the last Read returns an *ObjectError instead of io.EOF
// when the bytes do not match the entry.
func Open(ctx context.Context, b backend.Backend, p string, e Entry) (io.ReadCloser, error) {
	rc, err := OpenRaw(ctx, b, p, e)
	if err != nil {
		return nil, err
	}
	return &verifier{rc: rc, p: p, e: e, h: sha256.New()}, nil
}

// OpenRaw returns the bytes of e unverified, for a caller that verifies
// them itself (a download into a temporary file hashes as it writes): the
// object, or one ranged read of its pack, decoded when the member is a
// frame. A missing object or pack is an *ObjectError with
// ErrMissingObject, a pack too short for the entry or a frame that does
// not open one with ErrCorruptObject.
func OpenRaw(ctx context.Context, b backend.Backend, p string, e Entry) (io.ReadCloser, error) {
	if !e.Packed() {
		rc, _, err := b.Get(ctx, ObjectKey(e.SHA256), backend.GetOptions{})
		if backend.IsNotExist(err) {
			return nil, &ObjectError{Path: p, SHA256: e.SHA256, Reason: "not in the store", Err: ErrMissingObject}
		}
		return rc, err
	}
	rc, err := OpenPackRange(ctx, b, p, e.SHA256, e.Pack, backend.Range{Offset: e.Off, Length: e.Stored()})
	if err != nil || !e.Framed() {
		return rc, err
	}
	return openMember(rc, p, e)
}

// openMember returns the plain bytes of e's framed member, read from its
// frame's stored bytes r (Z of them), unverified; closing it closes r.
func openMember(r io.ReadCloser, p string, e Entry) (io.ReadCloser, error) {
	plain, err := ReadFrame(r, p, e)
	if err == nil {
		plain, err = Member(plain, p, e)
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{bytes.NewReader(plain), r}, nil
}

// ReadFrame reads e's frame (Z bytes) from r and returns its decoded
// bytes, which must be ZN of them. A frame that does not open, or
// decodes to another length, is an *ObjectError with ErrCorruptObject.
func ReadFrame(r io.Reader, p string, e Entry) ([]byte, error) {
	stored, err := io.ReadAll(io.LimitReader(r, e.Z)) // grows with what arrives
	if err != nil {
		return nil, err
	}
	if int64(len(stored)) != e.Z {
		return nil, &ObjectError{Path: p, SHA256: e.SHA256, Reason: fmt.Sprintf("pack %s ends inside the frame at %d", e.Pack, e.Off), Err: ErrCorruptObject}
	}
	return decodeFrame(stored, p, e)
}

// decodeFrame decodes stored, the Z bytes of e's frame, to its ZN bytes.
func decodeFrame(stored []byte, p string, e Entry) ([]byte, error) {
	plain, _, err := frame.Decode(stored, e.ZN)
	if err == nil && int64(len(plain)) != e.ZN {
		err = fmt.Errorf("%d bytes, the entry says %d", len(plain), e.ZN)
	}
	if err != nil {
		return nil, &ObjectError{Path: p, SHA256: e.SHA256, Reason: fmt.Sprintf("pack %s, the frame at %d: %v", e.Pack, e.Off, err), Err: ErrCorruptObject}
	}
	return plain, nil
}

// Member returns e's bytes inside its decoded frame, unverified.
func Member(frameBytes []byte, p string, e Entry) ([]byte, error) {
	if e.In+e.Size > int64(len(frameBytes)) {
		return nil, &ObjectError{Path: p, SHA256: e.SHA256, Reason: fmt.Sprintf("the frame at %d of pack %s holds %d bytes, the entry ends at %d", e.Off, e.Pack, len(frameBytes), e.In+e.Size), Err: ErrCorruptObject}
	}
	return frameBytes[e.In : e.In+e.Size], nil
}

// OpenPackRange returns the bytes r of the pack named pack, unverified: one
// ranged read. p and sha name the (first) entry the read is for, in errors.
func OpenPackRange(ctx context.Context, b backend.Backend, p, sha, pack string, r backend.Range) (io.ReadCloser, error) {
	rc, _, err := b.Get(ctx, PackKey(pack), backend.GetOptions{Range: &r})
	switch {
	case backend.IsNotExist(err):
		return nil, &ObjectError{Path: p, SHA256: sha, Reason: "pack " + pack + " not in the store", Err: ErrMissingObject}
	case errors.Is(err, backend.ErrInvalidRange):
		return nil, &ObjectError{Path: p, SHA256: sha, Reason: fmt.Sprintf("pack %s does not hold bytes [%d, %d)", pack, r.Offset, r.End()), Err: ErrCorruptObject}
	case err != nil:
		return nil, err
	}
	return rc, nil
}

type verifier struct {
	rc io.ReadCloser
	p  string
	e  Entry
	h  interface {
		io.Writer
		Sum([]byte) []byte
	}
	n int64
}

func (v *verifier) Read(b []byte) (int, error) {
	n, err := v.rc.Read(b)
	v.h.Write(b[:n])
	v.n += int64(n)
	if v.n > v.e.Size {
		return 0, &ObjectError{Path: v.p, SHA256: v.e.SHA256, Reason: "longer than the entry's size", Err: ErrCorruptObject}
	}
	if errors.Is(err, io.EOF) {
		if got := hex.EncodeToString(v.h.Sum(nil)); v.n != v.e.Size || got != v.e.SHA256 {
			return n, &ObjectError{Path: v.p, SHA256: v.e.SHA256, Reason: fmt.Sprintf("read %d bytes hashing to %s", v.n, got), Err: ErrCorruptObject}
		}
	}
	return n, err
}

func (v *verifier) Close() error { return v.rc.Close() }

// CheckReport is what Check found.
type CheckReport struct {
	Seq     uint64 `json:"seq"`
	Shards  int    `json:"shards"`
	Entries int    `json:"entries"`
	Objects int    `json:"objects"` // distinct objects and pack ranges checked
	Bytes   int64  `json:"bytes"`   // bytes read (with data)
}

// Check verifies the snapshot: every shard exists, matches its hash and its
// count, holds only entries inside its range; every entry's object exists
// with the entry's size (a pack: is long enough to hold the entry's range)
// and, when data is true, the entry's bytes (one ranged read for a packed
// entry) have its size and hash to its sha256. Entries naming the same
// bytes with the same size and sha256 are checked once; any other entry,
// even at an offset another entry of the pack names, is read on its own.
// The first problem is returned (an *ObjectError or a *FormatError).
func (s *Snapshot) Check(ctx context.Context, data bool) (CheckReport, error) {
	m := s.head.Manifest
	rep := CheckReport{Seq: m.Seq, Shards: len(m.Shards)}
	seen := map[string]bool{}
	packs := map[string]int64{} // pack -> size, stated once
	for i, ref := range m.Shards {
		entries, err := ReadShard(ctx, s.b, m, i)
		if err != nil {
			return rep, err
		}
		if len(entries) != ref.Count {
			return rep, corrupt(ShardKey(ref.ID), "manifest says %d entries, shard has %d", ref.Count, len(entries))
		}
		if len(entries) == 0 && len(m.Shards) > 1 {
			return rep, corrupt(ShardKey(ref.ID), "empty shard beside others in the manifest")
		}
		rep.Entries += len(entries)
		for _, p := range slices.Sorted(maps.Keys(entries)) {
			e := entries[p]
			// Two entries share a check only when they name the same
			// bytes and claim the same of them: a second entry at a
			// member's offset with another size or sha256 is its own.
			k := fmt.Sprintf("%s|%d|%s", e.Location(), e.Size, e.SHA256)
			if seen[k] {
				continue
			}
			seen[k] = true
			rep.Objects++
			if err := checkObject(ctx, s.b, p, e, data, packs, &rep); err != nil {
				return rep, err
			}
		}
	}
	return rep, nil
}

func checkObject(ctx context.Context, b backend.Backend, p string, e Entry, data bool, packs map[string]int64, rep *CheckReport) error {
	if !data && e.Packed() {
		size, ok := packs[e.Pack]
		if !ok {
			info, err := b.Stat(ctx, PackKey(e.Pack))
			if backend.IsNotExist(err) {
				return &ObjectError{Path: p, SHA256: e.SHA256, Reason: "pack " + e.Pack + " not in the store", Err: ErrMissingObject}
			}
			if err != nil {
				return fmt.Errorf("check %s: %w", p, err)
			}
			size = info.Size
			packs[e.Pack] = size
		}
		if size < e.Off+e.Stored() {
			return &ObjectError{Path: p, SHA256: e.SHA256, Reason: fmt.Sprintf("pack has %d bytes, entry ends at %d", size, e.Off+e.Stored()), Err: ErrCorruptObject}
		}
		return nil
	}
	if !data {
		info, err := b.Stat(ctx, ObjectKey(e.SHA256))
		if backend.IsNotExist(err) {
			return &ObjectError{Path: p, SHA256: e.SHA256, Reason: "not in the store", Err: ErrMissingObject}
		}
		if err != nil {
			return fmt.Errorf("check %s: %w", p, err)
		}
		if info.Size != e.Size {
			return &ObjectError{Path: p, SHA256: e.SHA256, Reason: fmt.Sprintf("object has %d bytes, entry says %d", info.Size, e.Size), Err: ErrCorruptObject}
		}
		return nil
	}
	rc, err := Open(ctx, b, p, e)
	if err != nil {
		return err
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, rc)
	rep.Bytes += n
	return err
}

// LogEntry is one snapshot in the history.
type LogEntry struct {
	Seq        uint64    `json:"seq"`
	Entries    int       `json:"entries"`
	Shards     int       `json:"shards"`
	Current    bool      `json:"current,omitempty"`
	Superseded time.Time `json:"superseded,omitzero"` // when the history copy was written
}

// Log lists the snapshots still readable, newest first: the current one and
// every history copy GC has not removed. It reads each history copy.
func Log(ctx context.Context, b backend.Backend) ([]LogEntry, error) {
	cur, err := ReadManifest(ctx, b, backend.GetOptions{})
	if err != nil {
		return nil, err
	}
	var out []LogEntry
	if cur.Version != "" {
		out = append(out, LogEntry{Seq: cur.Manifest.Seq, Entries: cur.Manifest.Entries(), Shards: len(cur.Manifest.Shards), Current: true})
	}
	if cur.IsLog() && isDeltaLog(cur.Manifest.Format) {
		if out, err = deltaLog(ctx, b, cur, out); err != nil {
			return nil, err
		}
		if out, err = legacyLogEntries(ctx, b, out); err != nil {
			return nil, err
		}
		return legacyLog(ctx, b, out)
	}
	if cur.IsLog() {
		return logEntries(ctx, b, cur, out)
	}
	var hist []backend.ObjectInfo
	err = b.List(ctx, HistoryPrefix, backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		hist = append(hist, page...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("log: list: %w", err)
	}
	slices.SortFunc(hist, func(a, b backend.ObjectInfo) int { return strings.Compare(b.Key, a.Key) })
	for _, o := range hist {
		seq, ok := ParseHistoryKey(o.Key)
		if !ok || seq == genesisSeq || (cur.Version != "" && seq >= cur.Manifest.Seq) {
			continue
		}
		h, err := ReadHistory(ctx, b, seq)
		if backend.IsNotExist(err) {
			continue // collected meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, LogEntry{Seq: seq, Entries: h.Manifest.Entries(), Shards: len(h.Manifest.Shards), Superseded: o.ModTime})
	}
	return out, nil
}

// logEntries appends the log entries below cur, newest first; an entry
// was superseded when its successor was written.
func logEntries(ctx context.Context, b backend.Backend, cur Head, out []LogEntry) ([]LogEntry, error) {
	seqs, at, err := logSeqs(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	for _, seq := range slices.Backward(seqs) {
		if seq >= cur.Manifest.Seq {
			continue
		}
		h, err := ReadLogEntry(ctx, b, seq)
		if backend.IsNotExist(err) {
			continue // collected meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, LogEntry{Seq: seq, Entries: h.Manifest.Entries(), Shards: len(h.Manifest.Shards), Superseded: at[seq+1].ModTime})
	}
	return out, nil
}

// legacyLog appends to out (newest first) the history copies a bucket
// migrated from format 3 still keeps below the oldest snapshot out lists:
// the snapshots of before the migration (FORMAT.md, "Migrating a
// bucket"). A bucket created in DeltaFormat has none (its marker, seq 0,
// is no snapshot).
func legacyLog(ctx context.Context, b backend.Backend, out []LogEntry) ([]LogEntry, error) {
	below := uint64(math.MaxUint64)
	if len(out) > 0 {
		below = out[len(out)-1].Seq
	}
	hist, err := legacyHistory(ctx, b, below)
	if err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	for _, o := range slices.Backward(hist) {
		seq, _ := ParseHistoryKey(o.Key)
		h, err := ReadHistory(ctx, b, seq)
		if backend.IsNotExist(err) {
			continue // collected meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, LogEntry{Seq: seq, Entries: h.Manifest.Entries(), Shards: len(h.Manifest.Shards), Superseded: o.ModTime})
	}
	return out, nil
}

// legacyLogEntries appends to out (newest first) the format-4 log entries
// a bucket migrated from format 4 still keeps below the oldest snapshot
// out lists. Each holds its whole manifest, so it reads without the
// entries before it, which gc may have collected: deltaLog, which reads
// forward from the genesis or a checkpoint, cannot reach them then. They
// all lie below the migration's delta, so the walk down stops at the
// first delta (in a bucket created in DeltaFormat, at once).
func legacyLogEntries(ctx context.Context, b backend.Backend, out []LogEntry) ([]LogEntry, error) {
	below := uint64(math.MaxUint64)
	if len(out) > 0 {
		below = out[len(out)-1].Seq
	}
	seqs, at, err := logSeqs(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	for _, seq := range slices.Backward(seqs) {
		if seq >= below || seq == genesisSeq {
			continue
		}
		data, _, ok, err := readLogRaw(ctx, b, seq)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // collected meanwhile
		}
		if isDelta(data) {
			break
		}
		h, err := ReadLogEntry(ctx, b, seq)
		if backend.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, LogEntry{Seq: seq, Entries: h.Manifest.Entries(), Shards: len(h.Manifest.Shards), Superseded: at[seq+1].ModTime})
	}
	return out, nil
}

// legacyHistory lists the format-3 history copies of seqs 1 up to below
// (exclusive), ascending.
func legacyHistory(ctx context.Context, b backend.Backend, below uint64) ([]backend.ObjectInfo, error) {
	all, err := listAll(ctx, b, HistoryPrefix)
	if err != nil {
		return nil, err
	}
	var out []backend.ObjectInfo
	for _, o := range all {
		if seq, ok := ParseHistoryKey(o.Key); ok && seq != genesisSeq && seq < below {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b backend.ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}
