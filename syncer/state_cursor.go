package syncer

import (
	"bytes"

	bolt "go.etcd.io/bbolt"

	"github.com/siltsync/silt/index"
)

// fileCursor visits the records of one range in key order, for a merge
// with a walk in the same order: one read transaction, no lookup per
// path.
type fileCursor struct {
	c    *bolt.Cursor
	hi   []byte // "" = no bound
	k, v []byte
}

func (t stx) fileCursor(r index.Range) *fileCursor {
	fc := &fileCursor{c: t.tx.Bucket(bucketFiles).Cursor(), hi: []byte(r.Hi)}
	fc.k, fc.v = fc.c.Seek([]byte(r.Lo))
	fc.bound()
	return fc
}

func (fc *fileCursor) bound() {
	if fc.k != nil && len(fc.hi) > 0 && bytes.Compare(fc.k, fc.hi) >= 0 {
		fc.k, fc.v = nil, nil
	}
}

// key is the current record's path, nil past the end. It is valid until
// the transaction ends.
func (fc *fileCursor) key() []byte { return fc.k }

// record decodes the current record (false: unreadable, treat as absent).
func (fc *fileCursor) record() (fileRecord, bool) { return decodeRecord(fc.v) }

// unchanged reports whether the current record proves lf unchanged
// (fileRecord.unchanged), decoding no more than it needs to.
func (fc *fileCursor) unchanged(lf localFile) bool {
	if r, hasSHA, ok := decodeRecordFast(fc.v, false); ok {
		return hasSHA && r.unchanged(lf)
	}
	r, ok := decodeRecord(fc.v)
	return ok && r.unchanged(lf)
}

func (fc *fileCursor) next() {
	fc.k, fc.v = fc.c.Next()
	fc.bound()
}
