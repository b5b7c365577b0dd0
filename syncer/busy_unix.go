//go:build unix

package syncer

import (
	"errors"
	"syscall"
)

// processAlive reports whether pid names a running process. EPERM means
// it runs under another user.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
