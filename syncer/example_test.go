package syncer_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/siltsync/silt/backend"
	_ "github.com/siltsync/silt/backend/mem" // registers mem://
	"github.com/siltsync/silt/syncer"
)

// Two machines share one bucket: one writes and pushes, the other pulls
// one model only. A push sends only what was marked; a pull reads only
// the index shards that cover its scope.
func Example() {
	ctx := context.Background()
	b, err := backend.Open(ctx, "mem://example-syncer")
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	tmp, err := os.MkdirTemp("", "silt-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)

	a, err := syncer.Open(ctx, syncer.Config{Backend: b, Dir: filepath.Join(tmp, "a")})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	for _, p := range []string{"data/aws/vpc/m1/latest", "data/aws/vpc/m2/latest"} {
		abs := filepath.Join(tmp, "a", filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(abs, []byte("v1 of "+p), 0o644); err != nil {
			log.Fatal(err)
		}
		if err := a.MarkDirty(p); err != nil { // tell silt what changed
			log.Fatal(err)
		}
	}
	st, err := a.Push(ctx, syncer.PushOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("push: seq %d, %d uploaded\n", st.Seq, st.Files.Uploaded)

	other, err := syncer.Open(ctx, syncer.Config{Backend: b, Dir: filepath.Join(tmp, "b")})
	if err != nil {
		log.Fatal(err)
	}
	defer other.Close()
	st, err = other.Pull(ctx, syncer.PullOptions{Scope: []string{"data/aws/vpc/m2"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("scoped pull: %d downloaded\n", st.Files.Downloaded)

	st, err = a.Push(ctx, syncer.PushOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("push with nothing marked: %d requests\n", st.Requests.Total())
	// Output:
	// push: seq 1, 2 uploaded
	// scoped pull: 1 downloaded
	// push with nothing marked: 0 requests
}
