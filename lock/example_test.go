package lock_test

import (
	"context"
	"fmt"
	"log"

	"github.com/siltsync/silt/backend"
	_ "github.com/siltsync/silt/backend/mem" // registers mem://
	"github.com/siltsync/silt/lock"
)

// A lock is one object of the store; each acquisition gets a fencing token
// one higher than the last, which a commit records so that a paused
// ex-holder can never commit after its successor.
func ExampleLock_Acquire() {
	ctx := context.Background()
	b, err := backend.Open(ctx, "mem://example-lock")
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	l, err := lock.New(b, ".silt/locks/models/vpc", lock.Options{Holder: "worker-1"})
	if err != nil {
		log.Fatal(err)
	}
	for range 2 {
		lease, err := l.Acquire(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("token", lease.Token())
		// ... work under lease.Context(), which ends if the lease is lost ...
		if err := lease.Release(ctx); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// token 1
	// token 2
}
