package control_test

import (
	"context"
	"fmt"
	"log"

	"github.com/siltsync/silt/backend"
	_ "github.com/siltsync/silt/backend/mem" // registers mem://
	"github.com/siltsync/silt/control"
)

// Two hosts claim the same run; create-if-absent lets exactly one win,
// and the claim never enters the index.
func Example() {
	ctx := context.Background()
	b, err := backend.Open(ctx, "mem://example-control")
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	c := control.New(b)
	first, err := c.PutIfAbsent(ctx, "runs/42", []byte("host-a"))
	if err != nil {
		log.Fatal(err)
	}
	second, err := c.PutIfAbsent(ctx, "runs/42", []byte("host-b"))
	if err != nil {
		log.Fatal(err)
	}
	owner, err := c.Get(ctx, "runs/42")
	if err != nil {
		log.Fatal(err)
	}
	keys, err := c.List(ctx, "runs/")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(first, second, string(owner), keys)
	// Output: true false host-a [runs/42]
}
