//go:build linux

package syncer

import (
	"io/fs"
	"syscall"
)

// fileID is the inode and change time of a stat: with size and mtime, what
// tells an install that the file it is about to replace is still the one
// its operation planned on. The change time catches a rewrite that put the
// mtime back; the inode catches a file replaced by a rename.
func fileID(fi fs.FileInfo) (ino uint64, ctimeNs int64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return st.Ino, st.Ctim.Nano()
}

// fileDev is the device of a stat: a stamp of the file system's clock
// proves only files of the file system it was taken on.
func fileDev(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Dev), true //nolint:unconvert // uint32 on some architectures
}
