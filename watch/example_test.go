package watch_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/syncer"
	"github.com/siltsync/silt/watch"
)

// Run keeps a cache in sync until its context ends; here it stops after
// the push of one write.
func ExampleRun() {
	tmp, err := os.MkdirTemp("", "silt-watch-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	ctx, stop := context.WithCancel(context.Background())
	b, err := backend.Open(ctx, "file://"+filepath.Join(tmp, "bucket"))
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	s, err := syncer.Open(ctx, syncer.Config{Backend: b, Dir: filepath.Join(tmp, "cache")})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	err = watch.Run(ctx, s, watch.Options{OnEvent: func(e watch.Event) {
		switch {
		case e.Kind == watch.KindStarted:
			// The loop runs: a write is found by its file-system event.
			if err := os.WriteFile(filepath.Join(s.Root(), "notes.txt"), []byte("hello"), 0o644); err != nil {
				log.Fatal(err)
			}
		case e.Kind == watch.KindPush && e.Stats.Files.Uploaded > 0:
			fmt.Printf("pushed %d file, seq %d\n", e.Stats.Files.Uploaded, e.Stats.Seq)
			stop()
		case e.Kind == watch.KindStopped:
			fmt.Println("stopped")
		}
	}})
	fmt.Println("Run:", err)
	// Output:
	// pushed 1 file, seq 1
	// stopped
	// Run: <nil>
}
