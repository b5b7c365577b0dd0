//go:build !unix

package peers

import "os"

// childUsage is the CPU time (ms) of an exited child; its peak RSS is not
// reported off Unix.
func childUsage(ps *os.ProcessState) (cpuMs float64, maxRSSKiB int64) {
	return ms(ps.UserTime() + ps.SystemTime()), 0
}
