//go:build !unix

package syncer

import "os"

// processAlive reports whether pid names a running process: on Windows
// finding it opens a handle, which fails once it has exited.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
