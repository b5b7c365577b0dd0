package syncer

import (
	bolt "go.etcd.io/bbolt"
)

// bucketFilesJSON is where earlier builds kept the file records, as JSON
// (path -> json.Marshal(fileRecord)) in half-full pages.
var bucketFilesJSON = []byte("files")

// migrateChunk bounds one transaction of migrateRecords, so that moving a
// million records never holds them all as dirty pages at once.
const migrateChunk = 10000

// migrateRecords moves the records an earlier version left in
// bucketFilesJSON into bucketFiles in the binary form, packed (recordFill),
// a chunk per transaction. A chunk moves its records whole, so after a
// crash every record is in one bucket or the other and the next open goes
// on; a record in the old bucket is never older than one of the same path
// in the new (only an older silt writes there). A record that does not
// decode is dropped: it meant "verify by hash" and its absence means the
// same.
func migrateRecords(db *bolt.DB) error {
	for done := false; !done; {
		err := db.Update(func(tx *bolt.Tx) error {
			old := tx.Bucket(bucketFilesJSON)
			if old == nil {
				done = true
				return nil
			}
			recs := stx{tx}.records()
			var moved [][]byte
			c := old.Cursor()
			for k, v := c.First(); k != nil && len(moved) < migrateChunk; k, v = c.Next() {
				if r, ok := decodeRecord(v); ok {
					if err := recs.Put(k, encodeRecord(r)); err != nil {
						return err
					}
				}
				moved = append(moved, append([]byte(nil), k...))
			}
			if len(moved) == 0 {
				done = true
				return tx.DeleteBucket(bucketFilesJSON)
			}
			for _, k := range moved {
				if err := old.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
