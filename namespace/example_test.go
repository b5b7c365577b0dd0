package namespace_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/siltsync/silt/backend"
	_ "github.com/siltsync/silt/backend/mem" // registers mem://
	"github.com/siltsync/silt/namespace"
)

// The first owner of a namespace keeps it: registering again is a no-op,
// another owner is refused.
func Example() {
	ctx := context.Background()
	b, err := backend.Open(ctx, "mem://example-namespace")
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	if err := namespace.Register(ctx, b, "team-a", "repo-1"); err != nil {
		log.Fatal(err)
	}
	fmt.Println(namespace.Register(ctx, b, "team-a", "repo-1"))
	err = namespace.Register(ctx, b, "team-a", "repo-2")
	fmt.Println(errors.Is(err, namespace.ErrTaken))
	list, err := namespace.List(ctx, b)
	if err != nil {
		log.Fatal(err)
	}
	for _, ns := range list {
		fmt.Println(ns.Namespace, ns.Owner)
	}
	// Output:
	// <nil>
	// true
	// team-a repo-1
}
