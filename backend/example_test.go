package backend_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem" // registers mem://
	"github.com/siltsync/silt/backend/wrap"
)

// Open is how every program opens a store: the URL names the driver, and
// what comes back already retries and times out. A create-if-absent Put
// returns the version the next compare-and-swap needs.
func ExampleOpen() {
	ctx := context.Background()
	b, err := backend.Open(ctx, "mem://example-open/team-a?timeout=10s")
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	v1, err := backend.PutBytes(ctx, b, "notes.txt", []byte("hello"), backend.Cond{IfAbsent: true})
	if err != nil {
		log.Fatal(err)
	}
	_, err = backend.PutBytes(ctx, b, "notes.txt", []byte("again"), backend.Cond{IfAbsent: true})
	fmt.Println("second create:", backend.IsPrecondition(err))

	_, err = backend.PutBytes(ctx, b, "notes.txt", []byte("hello, world"), backend.Cond{IfMatch: v1.Version})
	if err != nil {
		log.Fatal(err)
	}
	data, _, err := backend.ReadAll(ctx, b, "notes.txt", backend.GetOptions{}, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(data))

	_, err = backend.PutBytes(ctx, b, "../escape", nil, backend.Cond{})
	fmt.Println("invalid key:", errors.Is(err, backend.ErrInvalidKey))
	// Output:
	// second create: true
	// hello, world
	// invalid key: true
}

// Production puts Open's layers over a store built directly, or over a
// test's fault injector, where a real network's failures would arise: a
// transient failure of the first Stat is resent and never reaches the
// caller.
func ExampleProduction() {
	ctx := context.Background()
	f := wrap.Faults(mem.New())
	f.Add(wrap.Rule{Verb: wrap.VerbStat, Nth: 1})
	b := backend.Production(f, backend.WithTimeout(5*time.Second))

	_, err := b.Stat(ctx, "missing")
	fmt.Println("not exist:", backend.IsNotExist(err), "faults fired:", f.Fired())
	// Output:
	// not exist: true faults fired: 1
}
