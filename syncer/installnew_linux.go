package syncer

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/internal/localhook"
)

// A new file of a batch (a path the pull found absent) is installed
// through directories the batch holds open: its temporary is created in
// one of sixteen shards of .silt/tmp (a single directory serialises every
// create and unlink of a pull behind its lock) and moved to its name by
// one renameat2(RENAME_NOREPLACE), which fails if anything took the name
// meanwhile: the no-clobber create of local.create in one system call,
// with no unlink after it. Missing directories are made one mkdirat each,
// relative to their open parent, not by a walk from the cache's root per
// directory. On a cold pull of 10,010 files that cut the openat calls
// from 95,000 and the client CPU per file by about a third (BENCHMARKS.md,
// "Cold download: CPU per file").
//
// Every name opened relative to a held directory is one validated path
// segment, opened with O_NOFOLLOW: a symlink put in the way is refused,
// as os.Root refuses it. A directory the batch holds that is moved away
// meanwhile takes its new files with it, as if they were installed
// before the move; one removed meanwhile is made again (ENOENT).

// dirFDs holds the directories a batch installs into, open. Downloads run
// in path order, so a few dozen cover the directories in use; one evicted
// while an install still uses it closes when that install releases it.
type dirFDs struct {
	mu   sync.Mutex
	open map[string]*openDir
	// unsupported is set once RENAME_NOREPLACE was refused here (a
	// filesystem without it): the batch's installs take the portable path.
	unsupported bool
}

// openDir is one directory a batch holds open.
type openDir struct {
	f       *os.File
	fd      int
	refs    int
	evicted bool
}

// renameNoReplace is renameat2(RENAME_NOREPLACE); a test replaces it to
// play a filesystem without the flag.
var renameNoReplace = func(olddirfd int, oldpath string, newdirfd int, newpath string) error {
	return unix.Renameat2(olddirfd, oldpath, newdirfd, newpath, unix.RENAME_NOREPLACE)
}

// maxDirFDs bounds the directories a batch keeps open.
const maxDirFDs = 128

// get returns dir (cache-relative, "." the cache root) open, made if
// missing, for release when done.
func (c *dirFDs) get(l *local, dir string) (*openDir, error) {
	c.mu.Lock()
	if d, ok := c.open[dir]; ok {
		d.refs++
		c.mu.Unlock()
		return d, nil
	}
	c.mu.Unlock()
	f, err := c.openFresh(l, dir)
	if err != nil {
		return nil, err
	}
	d := &openDir{f: f, fd: int(f.Fd()), refs: 1}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open == nil {
		c.open = map[string]*openDir{}
	}
	if have, ok := c.open[dir]; ok { // opened meanwhile by another install
		have.refs++
		f.Close()
		return have, nil
	}
	if len(c.open) >= maxDirFDs {
		for k, old := range c.open {
			if old.refs == 0 {
				c.evictLocked(k, old)
				break
			}
		}
	}
	c.open[dir] = d
	return d, nil
}

// openFresh opens dir relative to its parent (held open through c), making
// it first if it is missing.
func (c *dirFDs) openFresh(l *local, dir string) (*os.File, error) {
	if dir == "." || dir == "" {
		return l.dir.Open(".")
	}
	parent, base := path.Dir(dir), path.Base(dir)
	if base == "." || base == ".." || strings.Contains(base, "/") {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: fs.ErrInvalid}
	}
	for retried := false; ; retried = true {
		pd, err := c.get(l, parent)
		if err != nil {
			return nil, err
		}
		fd, err := openDirAt(pd.fd, base)
		c.release(pd)
		if errors.Is(err, unix.ENOENT) && !retried {
			// The parent was removed since the batch opened it.
			c.forget(parent)
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
		}
		return os.NewFile(uintptr(fd), dir), nil
	}
}

// openDirAt opens the directory name in dirfd, making it if missing.
func openDirAt(dirfd int, name string) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(dirfd, name, flags, 0)
	if !errors.Is(err, unix.ENOENT) {
		return fd, err
	}
	if err := unix.Mkdirat(dirfd, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, err
	}
	return unix.Openat(dirfd, name, flags, 0)
}

func (c *dirFDs) evictLocked(k string, d *openDir) {
	delete(c.open, k)
	d.evicted = true
	if d.refs == 0 {
		d.f.Close()
	}
}

// release ends one use of d.
func (c *dirFDs) release(d *openDir) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d.refs--
	if d.evicted && d.refs == 0 {
		d.f.Close()
	}
}

// forget closes the directories at or below dir: it vanished.
func (c *dirFDs) forget(dir string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, d := range c.open {
		if under(k, dir) {
			c.evictLocked(k, d)
		}
	}
}

// close closes every directory the batch holds; the batch is over.
func (c *dirFDs) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, d := range c.open {
		c.evictLocked(k, d)
	}
}

func (c *dirFDs) setUnsupported() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unsupported = true
}

func (c *dirFDs) off() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unsupported
}

// installNew is installIn for a path the operation found absent and may
// only create (want.local absent, no backup), in batch b. handled is
// false when this filesystem cannot rename without replacing; then
// nothing of r was consumed and the caller installs the portable way.
func (l *local) installNew(b *installBatch, p string, r io.Reader, e index.Entry) (in installed, handled bool, err error) {
	if b == nil || b.fds.off() {
		return installed{}, false, nil
	}
	name := l.name(p)
	parent, base := path.Dir(name), path.Base(name)
	// The parent first, as the portable install makes it: a local writer
	// may put a file there while the download runs.
	d, err := b.fds.get(l, parent)
	if err != nil {
		return installed{}, true, l.explain(p, err)
	}
	defer func() {
		if d != nil {
			b.fds.release(d)
		}
	}()
	// The shard is the name's first hex digit: 16 directories, which
	// cleanTmp knows.
	tmp := "dl-" + randID()
	td, err := b.fds.get(l, tmpDir+"/"+tmp[3:4])
	if err != nil {
		return installed{}, true, err
	}
	defer b.fds.release(td)
	fd, err := unix.Openat(td.fd, tmp, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, installMode(e.Exec))
	if err != nil {
		return installed{}, true, &fs.PathError{Op: "create", Path: tmpDir + "/" + tmp, Err: err}
	}
	f := os.NewFile(uintptr(fd), tmp)
	renamed := false
	defer func() {
		f.Close()
		if !renamed {
			_ = unix.Unlinkat(td.fd, tmp, 0)
		}
	}()
	fi, err := writeVerified(f, l.path, p, r, e, b.fsyncEach())
	if err != nil {
		return installed{}, true, err
	}
	localhook.Fire(l.path, p, localhook.BeforeCheck)
	localhook.Fire(l.path, p, localhook.BeforeRename)
	for retried := false; ; retried = true {
		err = renameNoReplace(td.fd, tmp, d.fd, base)
		switch {
		case err == nil:
			renamed = true
			return installed{lf: infoFile(fi)}, true, nil
		case errors.Is(err, unix.ENOENT) && !retried:
			// The parent was removed since the batch opened it: make
			// it again, once.
			b.forget(parent)
			b.fds.release(d)
			if d, err = b.fds.get(l, parent); err != nil {
				d = nil
				return installed{}, true, l.explain(p, err)
			}
			continue
		case errors.Is(err, unix.EEXIST):
			return installed{}, true, l.inTheWay(p, &LocalEditError{Path: p, Reason: "created locally while the download ran; kept the local copy"})
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS):
			// No RENAME_NOREPLACE on this filesystem: the verified
			// temporary is linked the portable way, and later files of
			// the batch take that way from the start.
			b.fds.setUnsupported()
			kept, moved, err := l.replace(p, tmpDir+"/"+tmp[3:4]+"/"+tmp, want{})
			renamed = moved
			if err != nil {
				return installed{}, true, l.inTheWay(p, err)
			}
			return installed{lf: infoFile(fi), kept: kept}, true, nil
		}
		return installed{}, true, l.explain(p, &fs.PathError{Op: "rename", Path: p, Err: err})
	}
}
