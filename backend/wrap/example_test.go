package wrap_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
)

// Count reports what an operation cost in requests and bytes.
func ExampleCount() {
	ctx := context.Background()
	c := wrap.Count(mem.New())
	if _, err := backend.PutBytes(ctx, c, "k", []byte("hello"), backend.Cond{IfAbsent: true}); err != nil {
		log.Fatal(err)
	}
	if _, _, err := backend.ReadAll(ctx, c, "k", backend.GetOptions{}, 0); err != nil {
		log.Fatal(err)
	}
	n := c.Counts()
	fmt.Printf("cond puts %d, gets %d, bytes up %d, down %d\n", n.CondPut, n.Get, n.BytesUp, n.BytesDown)
	// Output:
	// cond puts 1, gets 1, bytes up 5, down 5
}

// Faults fails chosen requests; under backend.Production the retry layer
// absorbs a transient one, while a fault on a conditional write is never
// resent and reaches the caller, still retryable.
func ExampleFaults() {
	ctx := context.Background()
	f := wrap.Faults(mem.New())
	b := backend.Production(f)

	f.Add(wrap.Rule{Verb: wrap.VerbPut, Nth: 1})
	_, err := backend.PutBytes(ctx, b, "a", []byte("x"), backend.Cond{})
	fmt.Println("plain put:", err)

	f.Add(wrap.Rule{Verb: wrap.VerbCondPut, Nth: 1})
	_, err = backend.PutBytes(ctx, b, "b", []byte("x"), backend.Cond{IfAbsent: true})
	fmt.Println("conditional put retryable:", backend.IsRetryable(err))
	// Output:
	// plain put: <nil>
	// conditional put retryable: true
}

// Latency makes round trips cost time, so a benchmark on the in-memory
// store shows the cost of requests rather than of CPU.
func ExampleLatency() {
	b := wrap.Latency(mem.New(), wrap.LatencyConfig{Delay: 2 * time.Millisecond})
	start := time.Now()
	_, err := b.Stat(context.Background(), "k")
	fmt.Println(backend.IsNotExist(err), time.Since(start) >= 2*time.Millisecond)
	// Output:
	// true true
}
