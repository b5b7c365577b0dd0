//go:build unix

package fs

import (
	"os"

	"golang.org/x/sys/unix"
)

// oNonblock keeps a stray FIFO from hanging an open; it changes nothing
// for a regular file.
const oNonblock = unix.O_NONBLOCK

// unlink removes a file, never a directory (unlike os.Remove).
func unlink(p string) error { return unix.Unlink(p) }

// rmdir removes an empty directory, never a file.
func rmdir(p string) error { return unix.Rmdir(p) }

// lockFile takes f's exclusive advisory lock; the kernel drops it when the
// holder dies.
func lockFile(f *os.File) error {
	for {
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != unix.EINTR {
			return err
		}
	}
}

// tryLockFile takes f's exclusive advisory lock if no one holds it:
// locked is false when another holder has it.
func tryLockFile(f *os.File) (locked bool, err error) {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EWOULDBLOCK:
			return false, nil
		}
		return err == nil, err
	}
}
