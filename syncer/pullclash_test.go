package syncer_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// hostileIndex commits files (path -> content) as one shard at seq 1,
// without the checks a push makes.
func hostileIndex(t *testing.T, b backend.Backend, files map[string]string) {
	t.Helper()
	ctx := context.Background()
	entries := map[string]index.Entry{}
	for p, c := range files {
		sum := sha256.Sum256([]byte(c))
		sha := hex.EncodeToString(sum[:])
		entries[p] = index.Entry{Size: int64(len(c)), SHA256: sha, Seq: 1}
		if _, err := backend.PutBytes(ctx, b, index.ObjectKey(sha), []byte(c), backend.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	data, id := index.EncodeShard(entries)
	if _, err := backend.PutBytes(ctx, b, index.ShardKey(id), data, backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	m := &index.Manifest{Format: index.FormatVersion, Seq: 1, Shards: []index.ShardRef{{Lo: "", ID: id, Count: len(entries), Bytes: int64(len(data))}}}
	if _, err := backend.PutBytes(ctx, b, index.ManifestKey, index.EncodeManifest(m), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
}

// TestPull_Regression_FileDirPairFailsPull: an index holding both data/a
// and data/a/inner made every fresh pull exit 1. It is one conflict per
// pull (the file), and the directory's files are pulled.
func TestPull_Regression_FileDirPairFailsPull(t *testing.T) {
	ctx := context.Background()
	b := openBucket(t)
	hostileIndex(t, b, map[string]string{"data/a": "file", "data/a/inner": "inner", "data/a/more": "more", "data/ok": "ok"})
	c := openCache(t, b)
	for round := range 2 {
		st, err := c.Pull(ctx, syncer.PullOptions{})
		if err != nil {
			t.Fatalf("pull %d: %v", round, err)
		}
		if st.Files.Conflicts != 1 || len(st.Conflicts) != 1 || st.Conflicts[0].Path != "data/a" || !strings.Contains(st.Conflicts[0].Reason, "both as a file and as a directory") {
			t.Errorf("pull %d: conflicts %+v, want one for data/a", round, st.Conflicts)
		}
	}
	for p, want := range map[string]string{"data/a/inner": "inner", "data/a/more": "more", "data/ok": "ok"} {
		if got := readLocal(t, c, p); got != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
}

// A file already in the cache where a later index puts a directory is a
// conflict, not a failed pull: one, of the local file in the way, naming
// both sides (however many remote files it blocks).
func TestPull_DirectoryOverLocalFile_IsAConflict(t *testing.T) {
	ctx := context.Background()
	b := openBucket(t)
	a := openCache(t, b)
	writeDirty(t, a, map[string]string{"data/ok": "ok"})
	if _, err := a.Push(ctx, syncer.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	c := openCache(t, b)
	writeDirty(t, c, map[string]string{"data/a": "local file, never pushed"})
	hostileIndex(t, b, map[string]string{"data/a/inner": "inner", "data/ok": "ok"})
	st, err := c.Pull(ctx, syncer.PullOptions{Reanchor: true})
	if err != nil {
		t.Fatalf("pull: %v", err)
	}
	if st.Files.Conflicts != 1 || st.Conflicts[0].Path != "data/a" || !strings.Contains(st.Conflicts[0].Reason, "data/a/inner") {
		t.Errorf("conflicts %+v, want one for data/a naming data/a/inner", st.Conflicts)
	}
	if got := readLocal(t, c, "data/a"); got != "local file, never pushed" {
		t.Errorf("data/a = %q", got)
	}
}
