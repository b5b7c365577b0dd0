package verify_test

import (
	"context"
	"fmt"
	"log"

	"github.com/siltsync/silt/backend"
	_ "github.com/siltsync/silt/backend/mem" // registers mem://
	"github.com/siltsync/silt/verify"
)

// A store that keeps silt's contract is healthy, and the race saw every
// one of its writers' updates.
func Example() {
	ctx := context.Background()
	b, err := backend.Open(ctx, "mem://example-verify")
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	r, err := verify.Run(ctx, b)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Healthy, r.Race.Got == verify.Racers*verify.Increments, r.Problems)
	// Output: true true []
}
