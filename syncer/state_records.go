package syncer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// The local state's records beside files, marks and shards (state.go):
// remembered conflicts, kept copies, the last walk's summary, and the
// deletes under a path that resolving a file/directory clash needs. They
// live here so that no file outside the state reaches bbolt
// (TestState_OnlyStateFilesReachBbolt).

// bucketConflicts remembers the conflicts operations reported, until a
// later operation syncs the path or Resolve settles it. It is created on
// first use, so older state files need no migration.
var bucketConflicts = []byte("conflicts") // path -> ConflictRecord

// bucketBackups remembers the local copies silt replaced and kept
// (resolve --take-remote, or a conflict copy settled by taking the remote
// one): path + "\x00" + copy -> Backup. Created on first use.
var bucketBackups = []byte("backups")

// metaLastWalk holds what the last walk of the whole cache left out, for
// Status (which reads no file).
var metaLastWalk = []byte("lastwalk")

// conflict returns the remembered conflict of p; false when there is none
// or its record does not parse.
func (t stx) conflict(p string) (ConflictRecord, bool) {
	b := t.tx.Bucket(bucketConflicts)
	if b == nil {
		return ConflictRecord{}, false
	}
	v := b.Get([]byte(p))
	var r ConflictRecord
	if v == nil || json.Unmarshal(v, &r) != nil {
		return ConflictRecord{}, false
	}
	return r, true
}

// conflicts returns every remembered conflict, sorted by path. A record
// that does not parse is an error: Status must not hide a conflict.
func (t stx) conflicts() ([]ConflictRecord, error) {
	var out []ConflictRecord
	b := t.tx.Bucket(bucketConflicts)
	if b == nil {
		return out, nil
	}
	err := b.ForEach(func(k, v []byte) error {
		var r ConflictRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("syncer: remembered conflict %q: %w", k, err)
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// conflictPaths calls fn with the path of every remembered conflict.
func (t stx) conflictPaths(fn func(p string)) {
	if b := t.tx.Bucket(bucketConflicts); b != nil {
		_ = b.ForEach(func(k, _ []byte) error { fn(string(k)); return nil })
	}
}

// putConflict remembers r under its path, replacing what was there.
func (t stx) putConflict(r ConflictRecord) error {
	b, err := t.tx.CreateBucketIfNotExists(bucketConflicts)
	if err != nil {
		return err
	}
	v, _ := json.Marshal(r)
	return b.Put([]byte(r.Path), v)
}

// forgetConflict forgets the remembered conflict of p, if any.
func (t stx) forgetConflict(p string) error {
	if b := t.tx.Bucket(bucketConflicts); b != nil {
		return b.Delete([]byte(p))
	}
	return nil
}

// forgetConflictsUnder forgets the remembered conflicts at or under p.
func (t stx) forgetConflictsUnder(p string) error {
	if b := t.tx.Bucket(bucketConflicts); b != nil {
		return deleteUnder(b, p)
	}
	return nil
}

func backupKey(b Backup) []byte { return []byte(b.Path + "\x00" + b.Copy) }

// putBackup lists the kept copy b.
func (t stx) putBackup(b Backup) error {
	bk, err := t.tx.CreateBucketIfNotExists(bucketBackups)
	if err != nil {
		return err
	}
	v, _ := json.Marshal(b)
	return bk.Put(backupKey(b), v)
}

// forgetBackup drops the listing of the kept copy b (the file is the
// caller's).
func (t stx) forgetBackup(b Backup) error {
	if bk := t.tx.Bucket(bucketBackups); bk != nil {
		return bk.Delete(backupKey(b))
	}
	return nil
}

// backups returns every listed kept copy, by path, oldest first. A record
// that does not parse is an error.
func (t stx) backups() ([]Backup, error) {
	var out []Backup
	b := t.tx.Bucket(bucketBackups)
	if b == nil {
		return out, nil
	}
	err := b.ForEach(func(k, v []byte) error {
		var r Backup
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("syncer: backup %q: %w", k, err)
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// lastWalkData is the record recordWalk keeps (nil when none). It is
// valid until the transaction ends.
func (t stx) lastWalkData() []byte { return t.tx.Bucket(bucketMeta).Get(metaLastWalk) }

// setLastWalkData replaces recordWalk's record.
func (t stx) setLastWalkData(data []byte) error {
	return t.tx.Bucket(bucketMeta).Put(metaLastWalk, data)
}

// unmarkDirty drops p's own mark (not those under it).
func (t stx) unmarkDirty(p string) error { return t.tx.Bucket(bucketDirty).Delete([]byte(p)) }

// unmarkDirtyUnder drops the marks at or under p.
func (t stx) unmarkDirtyUnder(p string) error { return deleteUnder(t.tx.Bucket(bucketDirty), p) }

// deleteFilesUnder drops the file records at or under p.
func (t stx) deleteFilesUnder(p string) error { return deleteUnder(t.tx.Bucket(bucketFiles), p) }

// dropCachedShard forgets the cached bytes of shard id.
func (t stx) dropCachedShard(id string) error { return t.tx.Bucket(bucketShards).Delete([]byte(id)) }

// deleteUnder deletes the keys of b at or under p.
func deleteUnder(b *bolt.Bucket, p string) error {
	keys := [][]byte{}
	if b.Get([]byte(p)) != nil {
		keys = append(keys, []byte(p))
	}
	dir := []byte(p + "/")
	cur := b.Cursor()
	for k, _ := cur.Seek(dir); k != nil && bytes.HasPrefix(k, dir); k, _ = cur.Next() {
		keys = append(keys, slices.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
