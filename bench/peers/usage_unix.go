//go:build unix

package peers

import (
	"os"
	"syscall"
	"time"
)

// childUsage is the CPU time (ms) and peak RSS (KiB on Linux) of an exited
// child, from its rusage.
func childUsage(ps *os.ProcessState) (cpuMs float64, maxRSSKiB int64) {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ms(time.Duration(ru.Utime.Nano() + ru.Stime.Nano())), ru.Maxrss
	}
	return 0, 0
}
