//go:build linux

package syncer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// dirFD is one open directory of a walk, shared by the jobs that open its
// subdirectories: the last to let go closes it.
type dirFD struct {
	fd   int
	refs atomic.Int32
	top  *os.File // the walk's first directory, opened through os.Root
}

// direntBuf is the getdents buffer of one walk goroutine.
const direntBuf = 32 << 10

// errBadDirent is returned when the kernel's directory records do not
// parse (never seen; a walk that cannot read a directory must fail, not
// skip it).
var errBadDirent = errors.New("malformed directory entry")

// openTop opens the walk's first directory through the cache's os.Root, so
// it cannot lie outside the cache; everything below is opened relative to
// it with O_NOFOLLOW, one segment at a time.
func openTop(l *local, start string) (*dirFD, error) {
	f, err := l.dir.Open(start)
	if err != nil {
		return nil, err
	}
	d := &dirFD{fd: int(f.Fd()), top: f}
	d.refs.Store(1)
	return d, nil
}

func (d *dirFD) hold() { d.refs.Add(1) }

func (d *dirFD) release() {
	if d.refs.Add(-1) != 0 {
		return
	}
	if d.top != nil {
		d.top.Close()
		return
	}
	unix.Close(d.fd)
}

// openDir opens the subdirectory name, refusing a symlink in its place.
func (d *dirFD) openDir(name string) (*dirFD, error) {
	for {
		fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		nd := &dirFD{fd: fd}
		nd.refs.Store(1)
		return nd, nil
	}
}

// list calls fn for every entry of d but "." and "..": the type comes from
// the directory record, and a regular file's size and mtime from one
// fstatat relative to d (which also settles a type the record leaves
// unknown). An entry that vanished before its stat is left out.
func (d *dirFD) list(buf []byte, fn func(name []byte, e dirEnt)) error {
	for {
		n, err := unix.Getdents(d.fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return nil
		}
		for b := buf[:n]; len(b) > 0; {
			if len(b) < 19 {
				return errBadDirent
			}
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return errBadDirent
			}
			rec := b[:reclen]
			b = b[reclen:]
			if binary.NativeEndian.Uint64(rec[0:8]) == 0 {
				continue // a deleted entry
			}
			typ, name := rec[18], rec[19:]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if string(name) == "." || string(name) == ".." {
				continue
			}
			switch m := direntIFMT(typ); m {
			case unix.S_IFDIR:
				fn(name, dirEnt{kind: entDir})
				continue
			case unix.S_IFREG, 0: // 0: DT_UNKNOWN, the stat tells
			default:
				fn(name, dirEnt{kind: entSkip, mode: typeMode(m)})
				continue
			}
			var st unix.Stat_t
			if err := fstatat(d.fd, string(name), &st); errors.Is(err, fs.ErrNotExist) {
				continue // vanished while walking
			} else if err != nil {
				return err
			}
			switch m := st.Mode & unix.S_IFMT; m {
			case unix.S_IFREG:
				fn(name, dirEnt{kind: entFile, lf: localFile{exists: true, size: st.Size, mtimeNs: st.Mtim.Nano(), exec: st.Mode&unix.S_IXUSR != 0}})
			case unix.S_IFDIR:
				fn(name, dirEnt{kind: entDir})
			default:
				fn(name, dirEnt{kind: entSkip, mode: typeMode(m)})
			}
		}
	}
}

func fstatat(fd int, name string, st *unix.Stat_t) error {
	for {
		err := unix.Fstatat(fd, name, st, unix.AT_SYMLINK_NOFOLLOW)
		if err != unix.EINTR {
			return err
		}
	}
}

// direntIFMT is the S_IFMT bits of a directory record's d_type: the
// kernel's DTTOIF, d_type being those bits shifted down by 12 (DT_UNKNOWN
// is 0). So one mapping, typeMode, serves records and stats.
func direntIFMT(typ byte) uint32 { return uint32(typ) << 12 }

// typeMode is the fs.FileMode type of a file's S_IFMT bits.
func typeMode(m uint32) fs.FileMode {
	switch m {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}
