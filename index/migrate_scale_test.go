package index_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
)

// The cost of migrating a format-3 bucket of a million entries (issue 34's
// figure): a synthetic index of shards at format 3's bound, as silt-bench's
// peers layout writes them, then index.Migrate on a counted store. It
// logs the requests, bytes and time it took, and checks the migrated head
// holds every entry. A million entries only with SILT_SCALE_MIGRATE=1
// (.ci/run sets it); 100k otherwise.
func TestMigrate_Format3AtScale_RequestsAndBytes(t *testing.T) {
	n := 100_000
	if os.Getenv("SILT_SCALE_MIGRATE") != "" {
		n = 1_000_000
	}
	ctx := context.Background()
	store := mem.New()
	per := index.DefaultShardMaxEntries * 3 / 4
	m := &index.Manifest{Format: index.FormatVersion, Seq: 41, ShardMaxEntries: index.DefaultShardMaxEntries, Shards: []index.ShardRef{}}
	for first := 0; first < n; first += per {
		data, id := index.EncodeShard(scaleShard(first, min(per, n-first), 7))
		if _, err := backend.PutBytes(ctx, store, index.ShardKey(id), data, backend.Cond{}); err != nil {
			t.Fatal(err)
		}
		lo := scalePath(first)
		if first == 0 {
			lo = ""
		}
		m.Shards = append(m.Shards, index.ShardRef{Lo: lo, ID: id, Count: min(per, n-first), Bytes: int64(len(data))})
	}
	if _, err := backend.PutBytes(ctx, store, index.ManifestKey, index.EncodeManifest(m), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	c := wrap.Count(store)
	start := time.Now()
	rep, err := index.Migrate(ctx, c, index.MigrateOptions{})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	got := c.Counts()
	t.Logf("%d entries in %d shards: migrated to format %d at seq %d in %v: %d requests (%d get, %d put, %d cond put, %d list, %d stat), %d B up, %d B down",
		n, len(m.Shards), rep.To, rep.Seq, took.Round(time.Millisecond), got.Total(), got.Get, got.Put, got.CondPut, got.List, got.Stat, got.BytesUp, got.BytesDown)
	h := readHead(t, store)
	if h.Manifest.Format != index.DefaultFormat || h.Manifest.Seq != 42 || h.Manifest.Entries() != n {
		t.Fatalf("head after the migration: format %d seq %d, %d entries; want %d at 42 with %d", h.Manifest.Format, h.Manifest.Seq, h.Manifest.Entries(), index.DefaultFormat, n)
	}
	if want := fmt.Sprint(rep.Entries); want != fmt.Sprint(n) {
		t.Errorf("report counts %s entries, want %d", want, n)
	}
}
