package index_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/internal/frame"
	"github.com/siltsync/silt/internal/legacy"
)

// In a format-6 bucket the objects an older silt reads first (the hint,
// the marker, log entries, checkpoint roots) are JSON naming format 6,
// so a silt that reads up to 5 refuses the bucket as a newer format
// before it meets a frame; shards and pages are frames, named by the
// hash of their plain bytes.
func TestFrameFormat_OlderReaderMeetsJSONFirst_ShardsAndPagesAreFrames(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	for i := range 5 {
		refsCommit(t, b, 2, func(refs []index.ShardRef, shard func(lo string) index.ShardRef) []index.ShardRef {
			return append(refs[:0:0], shard(""), shard(fmt.Sprintf("m%d", i)))
		})
	}
	kinds := map[string]int{}
	var keys []string
	if err := b.List(ctx, index.InternalDir+"/", backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		for _, info := range page {
			keys = append(keys, info.Key)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		data, _, err := backend.ReadAll(ctx, b, k, backend.GetOptions{}, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasPrefix(k, index.ShardsPrefix), strings.HasPrefix(k, index.PagesPrefix):
			kinds["frame"]++
			if !frame.Is(data) {
				t.Errorf("%s is not a frame: %.40q", k, data)
			}
		default:
			kinds["json"]++
			var f struct{ Format int }
			if err := json.Unmarshal(data, &f); err != nil || f.Format != index.FrameFormat {
				t.Errorf("%s: format %d (%v), want JSON of format %d", k, f.Format, err, index.FrameFormat)
			}
		}
	}
	if kinds["frame"] == 0 || kinds["json"] < 5 {
		t.Fatalf("objects seen: %v", kinds)
	}
	h, err := index.ReadHead(ctx, b, nil)
	if err != nil || h.Manifest.Format != index.FrameFormat || h.Manifest.Seq != 5 {
		t.Fatalf("head %+v, %v", h.Manifest, err)
	}
	// What an older silt does with the bucket: refuse it.
	if _, err := legacy.Push(ctx, b, index.DeltaFormat, map[string][]byte{"data/x": []byte("x")}); !errors.Is(err, index.ErrNewerFormat) {
		t.Fatalf("a format-5 writer on a format-6 bucket: %v, want ErrNewerFormat", err)
	}
}

// A format-5 bucket (plain shards, its deltas) reads, refuses a push
// with the advice to migrate, and after Migrate is format 6 with every
// snapshot still readable; the next commit writes frames beside the
// plain shards it keeps.
func TestFrameFormat_MigrateFrom5_KeepsPlainShardsAndSnapshots(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	for i := range 3 {
		if _, err := legacy.Push(ctx, b, index.DeltaFormat, map[string][]byte{fmt.Sprintf("data/m/f%d", i): []byte(fmt.Sprint("v", i))}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := index.ReadHead(ctx, b, nil)
	if err != nil || h.Manifest.Format != index.DeltaFormat || h.Manifest.Seq != 3 {
		t.Fatalf("format-5 head %+v, %v", h.Manifest, err)
	}
	if err := index.Writable(h); !errors.Is(err, index.ErrMigrateRequired) {
		t.Fatalf("Writable(format 5) = %v, want ErrMigrateRequired", err)
	}
	rep, err := index.Migrate(ctx, b, index.MigrateOptions{})
	if err != nil || rep.From != index.DeltaFormat || rep.To != index.FrameFormat || rep.Seq != 4 {
		t.Fatalf("migrate: %+v, %v", rep, err)
	}
	h, err = index.ReadHead(ctx, b, nil)
	if err != nil || h.Manifest.Format != index.FrameFormat || h.Manifest.Seq != 4 || h.Manifest.Entries() != 3 {
		t.Fatalf("head after the migration %+v, %v", h.Manifest, err)
	}
	if h.Manifest.ShardMaxBytes != index.DefaultShardMaxBytes6 {
		t.Errorf("byte bound after the migration %d, want format 6's %d", h.Manifest.ShardMaxBytes, index.DefaultShardMaxBytes6)
	}
	for seq := uint64(1); seq <= 4; seq++ {
		s, err := index.ReadLogEntry(ctx, b, seq)
		if err != nil || s.Manifest.Entries() != min(int(seq), 3) {
			t.Errorf("snapshot %d after the migration: %v entries, %v", seq, s.Manifest, err)
		}
	}
	if _, err := index.Migrate(ctx, b, index.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	next := refsCommit(t, b, 0, func(refs []index.ShardRef, shard func(lo string) index.ShardRef) []index.ShardRef {
		return append(refs, shard("data/z"))
	})
	if next.Manifest.Format != index.FrameFormat || next.Manifest.Seq != 5 {
		t.Fatalf("commit after the migration: %+v", next.Manifest)
	}
	for i := range next.Manifest.Shards {
		if _, err := index.ReadShard(ctx, b, next.Manifest, i); err != nil {
			t.Fatalf("shard %d after the migration: %v", i, err)
		}
	}
}
