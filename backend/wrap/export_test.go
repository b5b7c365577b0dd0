package wrap

import (
	"fmt"

	"github.com/siltsync/silt/backend"
)

// Layers names each layer of b from the outside in: a wrapper by its
// constructor, anything else by its type.
func Layers(b backend.Backend) []string {
	var names []string
	for b != nil {
		switch b.(type) {
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
