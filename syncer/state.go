package syncer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
)

// ErrBusy is returned by Open when another process holds the directory's
// local state, as a *BusyError naming the holder.
var ErrBusy = errors.New("local state is in use by another silt process")

// fileRecord is what this machine knows of one path: what its cache holds
// and which remote version that came from. It never leaves the machine.
type fileRecord struct {
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"` // the content this cache last synced
	MtimeNs  int64  `json:"mtime"`  // local mtime when last verified
	Hydrated bool   `json:"hydrated"`
	// VerifiedNs is when the content was last checked (hashed or
	// downloaded). A file whose mtime is that close to it could have been
	// rewritten within the same timestamp tick, so its mtime proves nothing.
	VerifiedNs int64 `json:"verified"`
	// Exec is the executable bit of the content this cache last synced
	// (the entry's "x"), so a chmod alone is a change to push.
	Exec bool `json:"x,omitempty"`
	// Pack and Off locate the bytes of a lazy record's entry in its pack,
	// so hydrating it is one ranged read.
	Pack string `json:"pack,omitempty"`
	Off  int64  `json:"off,omitempty"`
	// Z, ZN and In locate a framed entry in its frame (index.Entry).
	Z  int64 `json:"z,omitempty"`
	ZN int64 `json:"zn,omitempty"`
	In int64 `json:"in,omitempty"`
}

// racyWindow covers the coarsest common timestamp granularity (FAT's 2 s);
// git calls files inside it "racily clean".
const racyWindow = int64(2 * time.Second)

// unchanged reports whether a stat proves the local file still holds what
// r recorded: same size and mtime, and the mtime not racily close to the
// verification. Otherwise the caller hashes.
func (r fileRecord) unchanged(lf localFile) bool {
	return r.Hydrated && lf.exists && lf.size == r.Size && lf.mtimeNs == r.MtimeNs && !lf.execDiffers(r.Exec) && r.VerifiedNs-r.MtimeNs >= racyWindow
}

// now is the verification time stamped on new records.
func now() int64 { return time.Now().UnixNano() }

var (
	bucketFiles  = []byte("records") // path -> fileRecord (encodeRecord)
	bucketSynced = []byte("synced")  // syncKey -> "": every entry of that shard reconciled here
	bucketShards = []byte("shards")  // shard id -> shard bytes (immutable, verified)
	bucketDirty  = []byte("dirty")   // path -> mark number
	bucketMeta   = []byte("meta")
)

var (
	metaMarkSeq    = []byte("markseq")  // last mark number handed out
	metaOverflow   = []byte("overflow") // dirty set overflowed: full walk with deletions
	metaBulk       = []byte("bulk")     // MarkAllDirty: full walk, no deletions
	metaSeenSeq    = []byte("seenseq")  // highest manifest seq read or written here
	metaSeenHash   = []byte("seenhash") // sha256 of that manifest's bytes
	metaManifest   = []byte("manifest") // last manifest bytes read or written here
	metaManifVer   = []byte("manifestversion")
	metaManifCarry = []byte("manifestcarry") // what the next log entry needs of that manifest (index.Head.Carry)
	metaPullFailed = []byte("pullfailed")    // 1: a pull failed since the last whole pull that succeeded
)

// state is the per-machine record, in one bbolt file under DIR/.silt/.
type state struct {
	db  *bolt.DB
	dir string // where the holder record lives
	w   writer // groups concurrent updates into one transaction
}

// openState opens (or creates) the state database. A file bbolt cannot read
// is moved aside, never deleted, and silt starts from nothing, which means
// re-verifying every file by hash.
func openState(dir string, wait time.Duration) (*state, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("syncer: create %s: %w", dir, err)
	}
	file := filepath.Join(dir, "state.db")
	switch {
	case wait == 0:
		wait = DefaultBusyWait
	case wait < 0:
		wait = time.Nanosecond // bbolt: one try (0 would wait forever)
	}
	db, err := bolt.Open(file, 0o644, &bolt.Options{Timeout: wait})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("syncer: %s: %w", file, busyError(dir, file))
	}
	if err != nil {
		aside := fmt.Sprintf("%s.corrupt-%d", file, time.Now().UnixNano())
		if rerr := os.Rename(file, aside); rerr != nil {
			return nil, fmt.Errorf("syncer: open %s: %w (moving it aside failed: %v)", file, err, rerr)
		}
		db, err = bolt.Open(file, 0o644, &bolt.Options{Timeout: wait})
		if err != nil {
			return nil, fmt.Errorf("syncer: open %s: %w", file, err)
		}
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketFiles, bucketSynced, bucketShards, bucketDirty, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = migrateRecords(db)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("syncer: init %s: %w", file, err)
	}
	writeOwner(dir)
	return &state{db: db, dir: dir}, nil
}

func (st *state) close() error {
	removeOwner(st.dir)
	return st.db.Close()
}

func (st *state) view(fn func(t stx) error) error {
	return st.db.View(func(tx *bolt.Tx) error { return fn(stx{tx}) })
}

// update runs fn in a write transaction, durable when update returns.
// Concurrent updates share one transaction (see writer), so fn must only
// change the transaction: it may run again, alone, if one it shared with
// failed.
func (st *state) update(fn func(t stx) error) error {
	return st.w.run(st.db, fn)
}

// stx is one transaction on the state.
type stx struct{ tx *bolt.Tx }

func (t stx) file(p string) (fileRecord, bool) {
	v := t.tx.Bucket(bucketFiles).Get([]byte(p))
	if v == nil {
		return fileRecord{}, false
	}
	return decodeRecord(v) // false: unreadable, re-verify by hash
}

// recordFill packs the records' pages full: bbolt's default of half-full
// pages on a split doubled the database. Records are mostly written in
// sorted batches (putRecords), and a page is rewritten whole on any change
// anyway, so full pages cost an insert little.
const recordFill = 1.0

// records returns the bucket of file records, ready for writing.
func (t stx) records() *bolt.Bucket {
	b := t.tx.Bucket(bucketFiles)
	b.FillPercent = recordFill
	return b
}

func (t stx) putFile(p string, r fileRecord) error {
	return t.records().Put([]byte(p), encodeRecord(r))
}

func (t stx) deleteFile(p string) error { return t.tx.Bucket(bucketFiles).Delete([]byte(p)) }

// putRecords stores the records of done (a nil record deletes the path's).
func (t stx) putRecords(done []pullDone) error {
	// Sorted: bbolt appends cheaply and splits pages dearly.
	slices.SortFunc(done, func(a, b pullDone) int { return strings.Compare(a.path, b.path) })
	for _, dn := range done {
		var err error
		if dn.record == nil {
			err = t.deleteFile(dn.path)
		} else {
			err = t.putFile(dn.path, *dn.record)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// filesIn calls fn for every record whose path lies in [r.lo, r.hi).
func (t stx) filesIn(r index.Range, fn func(p string, rec fileRecord) error) error {
	c := t.tx.Bucket(bucketFiles).Cursor()
	for k, v := c.Seek([]byte(r.Lo)); k != nil; k, v = c.Next() {
		if r.Hi != "" && string(k) >= r.Hi {
			break
		}
		rec, ok := decodeRecord(v)
		if !ok {
			continue
		}
		if err := fn(string(k), rec); err != nil {
			return err
		}
	}
	return nil
}

func (t stx) synced(id string) bool { return t.tx.Bucket(bucketSynced).Get([]byte(id)) != nil }

func (t stx) setSynced(id string) error { return t.tx.Bucket(bucketSynced).Put([]byte(id), nil) }

// keepSyncedOnly drops every reconciliation record that is not of a shard
// of m (by id and range).
func (t stx) keepSyncedOnly(m *index.Manifest) error {
	keep := make(map[string]bool, len(m.Shards))
	for i := range m.Shards {
		keep[m.SyncKey(i)] = true
	}
	return dropKeysNotIn(t.tx.Bucket(bucketSynced), keep)
}

// dropKeysNotIn deletes every key of b that keep does not hold. Keys are
// collected first: bbolt forbids deleting under ForEach.
func dropKeysNotIn(b *bolt.Bucket, keep map[string]bool) error {
	var drop [][]byte
	_ = b.ForEach(func(k, _ []byte) error {
		if !keep[string(k)] {
			drop = append(drop, append([]byte(nil), k...))
		}
		return nil
	})
	for _, k := range drop {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

func (t stx) cachedShard(id string) []byte {
	v := t.tx.Bucket(bucketShards).Get([]byte(id))
	if v == nil {
		return nil
	}
	return append([]byte(nil), v...)
}

func (t stx) cacheShard(id string, data []byte) error {
	return t.tx.Bucket(bucketShards).Put([]byte(id), data)
}

// forgetShards drops cached shards and sync records that the latest full
// manifest no longer references, so local state stays the size of one index.
func (t stx) forgetShards(keepIDs, keepSynced map[string]bool) error {
	if err := dropKeysNotIn(t.tx.Bucket(bucketSynced), keepSynced); err != nil {
		return err
	}
	return dropKeysNotIn(t.tx.Bucket(bucketShards), keepIDs)
}

func (t stx) metaUint(k []byte) uint64 {
	v := t.tx.Bucket(bucketMeta).Get(k)
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func (t stx) setMetaUint(k []byte, n uint64) error {
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], n)
	return t.tx.Bucket(bucketMeta).Put(k, v[:])
}

func (t stx) nextMark() (uint64, error) {
	n := t.metaUint(metaMarkSeq) + 1
	return n, t.setMetaUint(metaMarkSeq, n)
}

// dirtySet is a snapshot of the pending marks.
type dirtySet struct {
	paths    map[string]uint64 // path -> mark number
	overflow bool              // the cap was passed: walk everything, deletions allowed
	bulk     bool              // MarkAllDirty: walk everything, no deletions
	upTo     uint64            // highest mark number in this snapshot
}

func (d dirtySet) empty() bool { return len(d.paths) == 0 && !d.overflow && !d.bulk }

func (t stx) dirty() dirtySet {
	d := dirtySet{paths: map[string]uint64{}}
	_ = t.tx.Bucket(bucketDirty).ForEach(func(k, v []byte) error {
		n := uint64(0)
		if len(v) == 8 {
			n = binary.BigEndian.Uint64(v)
		}
		d.paths[string(k)] = n
		return nil
	})
	d.overflow = t.metaUint(metaOverflow) != 0
	d.bulk = t.metaUint(metaBulk) != 0
	d.upTo = t.metaUint(metaMarkSeq)
	return d
}

// markDirty records p (canonical; "" = bulk). Past cap paths, the set
// overflows into a full walk that may delete.
func (t stx) markDirty(p string, cap int) error {
	n, err := t.nextMark()
	if err != nil {
		return err
	}
	if p == "" {
		return t.setMetaUint(metaBulk, n)
	}
	b := t.tx.Bucket(bucketDirty)
	if b.Get([]byte(p)) == nil && b.Stats().KeyN >= cap {
		if err := t.setMetaUint(metaOverflow, n); err != nil {
			return err
		}
	}
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], n)
	return b.Put([]byte(p), v[:])
}

// clearDirty removes the marks of snapshot d that were not renewed since.
// A mark with paths of keep at or under it (a conflict, a file the push
// could not finish) stays for the next push, narrowed to those paths: a
// directory's mark kept whole would carry into the next push every change
// made under it since without a mark (model finding F18). The bulk and
// overflow flags go only when whole is true: nothing the walk found was
// left behind.
func (t stx) clearDirty(d dirtySet, whole bool, keep map[string]bool) error {
	b := t.tx.Bucket(bucketDirty)
	for p := range d.paths {
		cur := b.Get([]byte(p))
		if len(cur) != 8 || binary.BigEndian.Uint64(cur) > d.upTo || keep[p] {
			continue // renewed during the push, or kept as it is
		}
		var n [8]byte
		copy(n[:], cur)
		for k := range keep {
			if !under(k, p) {
				continue
			}
			if old := b.Get([]byte(k)); len(old) == 8 && binary.BigEndian.Uint64(old) >= binary.BigEndian.Uint64(n[:]) {
				continue
			}
			if err := b.Put([]byte(k), n[:]); err != nil {
				return err
			}
		}
		if err := b.Delete([]byte(p)); err != nil {
			return err
		}
	}
	for _, k := range [][]byte{metaOverflow, metaBulk} {
		if v := t.metaUint(k); whole && v != 0 && v <= d.upTo {
			if err := t.setMetaUint(k, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// restrict returns the marks at or under the paths only, with each of them
// marked too (PushOptions.Paths): no bulk, no overflow.
func (d dirtySet) restrict(only []string) dirtySet {
	r := dirtySet{paths: map[string]uint64{}, upTo: d.upTo}
	for p, n := range d.paths {
		for _, q := range only {
			if under(p, q) {
				r.paths[p] = n
			}
		}
	}
	for _, q := range only {
		if _, ok := r.paths[q]; !ok {
			r.paths[q] = 0
		}
	}
	return r
}

// marked reports whether p was marked, directly or through a marked
// ancestor directory. Bulk and overflow are not marks of p.
func (d dirtySet) marked(p string) bool {
	for q := p; ; {
		if _, ok := d.paths[q]; ok {
			return true
		}
		i := strings.LastIndexByte(q, '/')
		if i < 0 {
			return false
		}
		q = q[:i]
	}
}

// manifest returns the cached manifest, if any.
func (t stx) manifest() manifestCache {
	b := t.tx.Bucket(bucketMeta)
	data, v := b.Get(metaManifest), b.Get(metaManifVer)
	if data == nil || len(v) == 0 {
		return manifestCache{}
	}
	return manifestCache{data: append([]byte(nil), data...), version: backend.Version(v), carry: append([]byte(nil), b.Get(metaManifCarry)...)}
}

// seen returns the highest manifest this cache saw.
func (t stx) seen() seen {
	return seen{seq: t.metaUint(metaSeenSeq), hash: string(t.tx.Bucket(bucketMeta).Get(metaSeenHash))}
}

// saveRemote persists the manifest cache, so a new process starts with a
// conditional read too, and the highest manifest seen, so a rollback is
// caught across restarts.
func (t stx) saveRemote(c manifestCache, sn seen) error {
	if err := t.setMetaUint(metaSeenSeq, sn.seq); err != nil {
		return err
	}
	if err := t.tx.Bucket(bucketMeta).Put(metaSeenHash, []byte(sn.hash)); err != nil {
		return err
	}
	b := t.tx.Bucket(bucketMeta)
	if c.version == "" {
		_ = b.Delete(metaManifVer)
		_ = b.Delete(metaManifCarry)
		return b.Delete(metaManifest)
	}
	if err := b.Put(metaManifest, c.data); err != nil {
		return err
	}
	if len(c.carry) == 0 {
		_ = b.Delete(metaManifCarry)
	} else if err := b.Put(metaManifCarry, c.carry); err != nil {
		return err
	}
	return b.Put(metaManifVer, []byte(c.version))
}
