//go:build !unix

package bench

import "time"

// processCPU is not measured here.
func processCPU() time.Duration { return 0 }
