package syncer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// testRecord is the record of a cache's i-th file, as a push leaves it.
func testRecord(i int) fileRecord {
	h := sha256.Sum256(fmt.Append(nil, "content", i))
	p := sha256.Sum256(fmt.Append(nil, "pack", i/11))
	return fileRecord{Size: 5120, SHA256: hex.EncodeToString(h[:]), MtimeNs: 1764700000000000000 + int64(i), Hydrated: true,
		VerifiedNs: 1764700003000000000 + int64(i), Pack: hex.EncodeToString(p[:]), Off: int64(i%11) * 5200, Exec: i%7 == 0}
}

func testRecordPath(i int) string {
	return fmt.Sprintf("workflows/m%06d/nodes/file-%02d.json", i/11, i%11)
}

// A state of an earlier build keeps its records as JSON in bucket
// "files". Opening it moves every record to the binary form, over
// several transactions, drops the unreadable, keeps the newer of two
// records of one path (the old bucket's: only an older silt writes
// there), and leaves no old bucket.
func TestState_MigratesJSONRecords(t *testing.T) {
	dir := t.TempDir()
	n := 2*migrateChunk + 17
	db, err := bolt.Open(filepath.Join(dir, "state.db"), 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		old, err := tx.CreateBucket(bucketFilesJSON)
		if err != nil {
			return err
		}
		for i := range n {
			v, _ := json.Marshal(testRecord(i))
			if err := old.Put([]byte(testRecordPath(i)), v); err != nil {
				return err
			}
		}
		if err := old.Put([]byte("unreadable"), []byte(`{"size":`)); err != nil {
			return err
		}
		// A crash mid-migration left an older record of path 3 moved.
		recs, err := tx.CreateBucket(bucketFiles)
		if err != nil {
			return err
		}
		stale := testRecord(3)
		stale.SHA256 = "00"
		return recs.Put([]byte(testRecordPath(3)), encodeRecord(stale))
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	st, err := openState(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	err = st.view(func(tx stx) error {
		if tx.tx.Bucket(bucketFilesJSON) != nil {
			t.Error("the old bucket of JSON records is still there")
		}
		if _, ok := tx.file("unreadable"); ok {
			t.Error("an unreadable record became a record")
		}
		got := 0
		c := tx.tx.Bucket(bucketFiles).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if len(v) == 0 || v[0] != recBinary {
				t.Fatalf("record %s not in the binary form: %q", k, v)
			}
			got++
		}
		if got != n {
			t.Errorf("%d records after the migration, want %d", got, n)
		}
		for i := range n {
			if r, ok := tx.file(testRecordPath(i)); !ok || r != testRecord(i) {
				t.Fatalf("record %d = %+v, %v; want %+v", i, r, ok, testRecord(i))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The records of a large cache take at most 200 bytes each of pages (845
// as JSON in half-full pages, which a push of a million files read into
// memory), written the way pulls and pushes write them: sorted batches of
// a thousand in no particular order.
func TestState_RecordBytesPerFile(t *testing.T) {
	st, err := openState(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	const n, batch = 50000, 1000
	starts := rand.New(rand.NewSource(1)).Perm(n / batch)
	for _, s := range starts {
		var done []pullDone
		for i := s * batch; i < (s+1)*batch; i++ {
			r := testRecord(i)
			done = append(done, pullDone{path: testRecordPath(i), record: &r})
		}
		if err := st.update(func(t stx) error { return t.putRecords(done) }); err != nil {
			t.Fatal(err)
		}
	}
	_ = st.view(func(tx stx) error {
		s := tx.tx.Bucket(bucketFiles).Stats()
		if s.KeyN != n {
			t.Fatalf("%d records, want %d", s.KeyN, n)
		}
		per := float64(s.LeafAlloc+s.BranchAlloc) / n
		t.Logf("%.0f bytes of pages per record (%d leaf pages)", per, s.LeafPageN)
		if per > 200 {
			t.Errorf("%.0f bytes of pages per record, want at most 200", per)
		}
		return nil
	})
}
