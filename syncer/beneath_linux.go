//go:build linux

package syncer

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// beneath resolves a data path in one system call: openat2 on the cache's
// directory with RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS, which the kernel
// refuses for any path leaving the directory or crossing a symlink. A
// Root's Lstat and Open walk the path one segment at a time (an openat and
// a close per directory: nine calls for a file four directories down),
// and a host's step stats and hashes every file of its model. Only a
// success is taken: every error (a symlink on the way, a missing file, no
// openat2 before Linux 5.6) goes the Root's way, whose answer is the same
// whenever this one succeeds, since a path with no symlink resolves alike
// both ways.
type beneath struct {
	once sync.Once
	dir  *os.File    // the cache directory; nil if it could not be opened
	fd   int         // dir's descriptor
	off  atomic.Bool // openat2 is missing: never try again
}

var beneathHow = unix.OpenHow{Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}

// openBeneath returns a descriptor of name (a path inside the cache
// directory), or false.
func (l *local) openBeneath(name string, flags int) (int, bool) {
	b := &l.fast
	if b.off.Load() {
		return -1, false
	}
	b.once.Do(func() {
		if f, err := l.dir.Open("."); err == nil {
			b.dir, b.fd = f, int(f.Fd())
		}
	})
	if b.dir == nil {
		return -1, false
	}
	how := beneathHow
	how.Flags = uint64(flags | unix.O_CLOEXEC | unix.O_NOFOLLOW)
	fd, err := unix.Openat2(b.fd, name, &how)
	if err != nil {
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
			b.off.Store(true) // no openat2, or a seccomp filter refusing it
		}
		return -1, false
	}
	return fd, true
}

// statBeneath is stat's single-call path: the regular file at p, or false.
func (l *local) statBeneath(p string) (localFile, bool) {
	fd, ok := l.openBeneath(l.name(p), unix.O_PATH)
	if !ok {
		return localFile{}, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return localFile{}, false // the Root's way says what it is
	}
	return localFile{exists: true, size: st.Size, mtimeNs: st.Mtim.Nano(), exec: st.Mode&unix.S_IXUSR != 0, ino: st.Ino, ctimeNs: st.Ctim.Nano()}, true
}

// openFileBeneath is open's single-call path, or false.
func (l *local) openFileBeneath(p string) (*os.File, bool) {
	fd, ok := l.openBeneath(l.name(p), unix.O_RDONLY)
	if !ok {
		return nil, false
	}
	return os.NewFile(uintptr(fd), l.name(p)), true
}

func (b *beneath) close() error {
	if b.dir == nil {
		return nil
	}
	return b.dir.Close()
}
