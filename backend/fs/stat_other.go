//go:build !linux

package fs

import "os"

// statFile describes the open file f. Off Linux it reports no identity
// (cacheable false): without the inode change time a rewritten file could
// keep its stamp, so every read hashes the file.
func statFile(f *os.File) (id fileID, sp stamp, regular, cacheable bool, err error) {
	fi, err := f.Stat()
	if err != nil {
		return fileID{}, stamp{}, false, false, err
	}
	return fileID{}, stamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}, fi.Mode().IsRegular(), false, nil
}
