package fs

import (
	"os"

	"golang.org/x/sys/unix"
)

// statFile describes the open file f: whether it is a regular file, its
// identity and stamp (cacheable: a hash kept under them is valid while
// they do not change).
func statFile(f *os.File) (id fileID, sp stamp, regular, cacheable bool, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fileID{}, stamp{}, false, false, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fileID{}, stamp{}, false, false, nil
	}
	return fileID{uint64(st.Dev), st.Ino}, stamp{st.Size, unix.TimespecToNsec(st.Mtim), unix.TimespecToNsec(st.Ctim)}, true, true, nil
}
