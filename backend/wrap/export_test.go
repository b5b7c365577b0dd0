package wrap

import (
	"context"
	"fmt"
	"time"

	"github.com/siltsync/silt/backend"
)

// RetryWithSleep is Retry with sleep in place of the timer, so tests run
// without waiting and can see the backoffs chosen.
func RetryWithSleep(b backend.Backend, cfg RetryConfig, sleep func(context.Context, time.Duration) error) backend.Backend {
	r := Retry(b, cfg).(*retrying)
	r.sleep = sleep
	return r
}

// Layers names each layer of b from the outside in: a wrapper by its
// constructor, anything else by its type.
func Layers(b backend.Backend) []string {
	var names []string
	for b != nil {
		switch b.(type) {
		case *retrying:
			names = append(names, "Retry")
		case *latency:
			names = append(names, "Latency")
		case *Faulty:
			names = append(names, "Faults")
		case *Counting:
			names = append(names, "Count")
		default:
			names = append(names, fmt.Sprintf("%T", b))
		}
		u, ok := b.(backend.Unwrapper)
		if !ok {
			break
		}
		b = u.Unwrap()
	}
	return names
}
