package syncer

import (
	"os"

	"golang.org/x/sys/unix"
)

// batchDurable is true where one syncCache makes a whole batch of installs
// durable, so an install in a batch skips its own fsync.
const batchDurable = true

// syncCache makes everything written to the cache's filesystem durable
// (syncfs(2) on the cache directory): file contents and the directory
// entries of their renames alike.
func syncCache(dir *os.Root) error {
	f, err := dir.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	return os.NewSyscallError("syncfs", unix.Syncfs(int(f.Fd())))
}
