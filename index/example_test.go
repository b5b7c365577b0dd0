package index_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/siltsync/silt/backend"
	_ "github.com/siltsync/silt/backend/mem" // registers mem://
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// A snapshot is read through the index alone: its manifest, then only the
// shards that cover a prefix. Each entry names its content-addressed
// object, which Open reads and verifies.
func ExampleOpenSnapshot() {
	ctx := context.Background()
	b, err := backend.Open(ctx, "mem://example-index")
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	dir, err := os.MkdirTemp("", "silt-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := syncer.Open(ctx, syncer.Config{Backend: b, Dir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := os.MkdirAll(filepath.Join(dir, "data", "m1"), 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data", "m1", "latest"), []byte("hello"), 0o644); err != nil {
		log.Fatal(err)
	}
	if _, err := s.Push(ctx, syncer.PushOptions{All: true}); err != nil {
		log.Fatal(err)
	}

	snap, err := index.OpenSnapshot(ctx, b)
	if err != nil {
		log.Fatal(err)
	}
	err = snap.Walk(ctx, "data/m1", func(p string, e index.Entry) error {
		fmt.Printf("seq %d: %s, %d bytes, object %s…\n", snap.Seq(), p, e.Size, index.ObjectKey(e.SHA256)[:24])
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// seq 1: data/m1/latest, 5 bytes, object .silt/objects/2c/2cf24db…
}

// A bucket commits each seq as a delta in the log
// and, every CheckpointEvery commits, a paged checkpoint of the whole
// shard list; a reader with nothing starts from the newest checkpoint.
func ExampleDefaultFormat() {
	ctx := context.Background()
	b, err := backend.Open(ctx, "mem://example-delta")
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	dir, err := os.MkdirTemp("", "silt-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := syncer.Open(ctx, syncer.Config{Backend: b, Dir: dir, CheckpointEvery: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for i := range 3 {
		p := filepath.Join(dir, "data", fmt.Sprintf("m%d", i), "latest")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("hello"), 0o644); err != nil {
			log.Fatal(err)
		}
		if _, err := s.Push(ctx, syncer.PushOptions{All: true}); err != nil {
			log.Fatal(err)
		}
	}
	for _, key := range []string{index.LogKey(3), index.CheckpointKey(2)} {
		_, err := b.Stat(ctx, key)
		fmt.Printf("%s: %v\n", key, err == nil)
	}
	head, err := index.ReadHead(ctx, b, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("head seq %d, format %d, %d files\n", head.Manifest.Seq, head.Manifest.Format, head.Manifest.Entries())
	// Output:
	// .silt/log/00000000000000000003.json: true
	// .silt/checkpoints/00000000000000000002.json: true
	// head seq 3, format 6, 3 files
}
