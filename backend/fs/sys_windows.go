//go:build windows

package fs

import (
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// oNonblock: Windows has no FIFOs in the file tree to hang an open.
const oNonblock = 0

// unlink removes a file, never a directory (unlike os.Remove).
func unlink(p string) error { return syscall.Unlink(p) }

// rmdir removes an empty directory, never a file.
func rmdir(p string) error { return syscall.Rmdir(p) }

// lockFile takes f's exclusive lock (LockFileEx on its first byte); the
// system drops it when the holder's handle closes or the holder dies.
func lockFile(f *os.File) error {
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, new(windows.Overlapped))
}

// tryLockFile takes f's exclusive lock if no one holds it: locked is
// false when another handle has it.
func tryLockFile(f *os.File) (locked bool, err error) {
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, new(windows.Overlapped))
	if err == windows.ERROR_LOCK_VIOLATION {
		return false, nil
	}
	return err == nil, err
}
