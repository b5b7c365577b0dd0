//go:build !linux

package syncer

import "io/fs"

// fileID reports no inode or change time outside Linux: size and mtime
// alone tell an install whether the file it replaces changed.
func fileID(fs.FileInfo) (ino uint64, ctimeNs int64) { return 0, 0 }

// fileDev reports no device outside Linux, so no clock stamp proves a file
// there: a file system mounted inside the cache could keep another clock.
func fileDev(fs.FileInfo) (uint64, bool) { return 0, false }
