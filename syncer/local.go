package syncer

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/internal/ignore"
	"github.com/siltsync/silt/internal/localhook"
)

// local is the cache directory as silt sees it. Every access goes through
// one os.Root opened on Config.Dir, so the kernel refuses any path that
// would leave the directory through a symlink or "..", with no window
// between a check and its use. Data paths live under ns ("" or
// "{namespace}/"); temporary downloads live in .silt/tmp of the same
// directory, so a rename into place never crosses a filesystem.
type local struct {
	dir  *os.Root
	path string // absolute directory data paths start at (Syncer.Root)
	ns   string // prefix of data paths inside dir
	// hashes counts the files hashed, so a test can pin that a push
	// hashes only what a stat cannot settle.
	hashes atomic.Int64
	// failOpen, set by tests, fails the opens of data files it names: the
	// way to make a file unreadable to root.
	failOpen func(p string) error
	// fast resolves a path in one system call where the kernel can
	// (beneath_linux.go).
	fast beneath
}

// tmpDir holds downloads until they are verified and renamed into place.
const tmpDir = index.InternalDir + "/tmp"

// localFile is what a stat of one data path found. The booleans come last:
// a push's walk holds one per file, and apart they padded it by 8 bytes.
type localFile struct {
	size    int64
	mtimeNs int64
	// ino and ctimeNs identify the inode and its last change (Linux; 0
	// elsewhere), for the check an install makes before replacing it.
	ino     uint64
	ctimeNs int64
	exists  bool
	exec    bool // the owner's execute bit, the one mode bit that syncs
}

// same reports whether two stats saw the same file, unchanged.
func (a localFile) same(b localFile) bool {
	return a.exists == b.exists && a.size == b.size && a.mtimeNs == b.mtimeNs && a.ino == b.ino && a.ctimeNs == b.ctimeNs && a.exec == b.exec
}

func (l *local) name(p string) string { return l.ns + p }

// explain turns a failed access into a index.PathError naming the symlink or
// file in the way, when that is the cause. It runs only after an error,
// so the common path costs one system call, not one per path segment.
func (l *local) explain(p string, err error) error {
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir := strings.TrimSuffix(l.ns, "/")
	segs := strings.Split(p, "/")
	for _, seg := range segs[:len(segs)-1] {
		dir = path.Join(dir, seg)
		fi, lerr := l.dir.Lstat(dir)
		switch {
		case lerr != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			return &index.PathError{Path: p, Reason: "a parent directory is a symlink that leads out of the cache"}
		case !fi.IsDir():
			return &index.PathError{Path: p, Reason: "a parent is not a directory"}
		}
	}
	return err
}

// stat looks at one data path. A symlink, directory or device at the path is
// refused: silt syncs regular files only and never follows a link.
func (l *local) stat(p string) (localFile, error) {
	if lf, ok := l.statBeneath(p); ok {
		return lf, nil
	}
	fi, err := l.dir.Lstat(l.name(p))
	if errors.Is(err, fs.ErrNotExist) {
		return localFile{}, nil
	}
	if err != nil {
		return localFile{}, l.explain(p, err)
	}
	if !fi.Mode().IsRegular() {
		return localFile{}, &index.PathError{Path: p, Reason: "not a regular file (" + fi.Mode().Type().String() + ")"}
	}
	return infoFile(fi), nil
}

func infoFile(fi fs.FileInfo) localFile {
	ino, ctime := fileID(fi)
	return localFile{exists: true, size: fi.Size(), mtimeNs: fi.ModTime().UnixNano(), exec: fi.Mode().Perm()&0o100 != 0, ino: ino, ctimeNs: ctime}
}

// open opens the data file at p for reading.
func (l *local) open(p string) (*os.File, error) {
	if l.failOpen != nil {
		if err := l.failOpen(p); err != nil {
			return nil, &fs.PathError{Op: "open", Path: p, Err: err}
		}
	}
	if f, ok := l.openFileBeneath(p); ok {
		return f, nil
	}
	f, err := l.dir.Open(l.name(p))
	return f, l.explain(p, err)
}

// hash returns the sha256 of the file at p, with the size and mtime of the
// bytes hashed, and whether the clock stamp c, taken before the read,
// proves them (see clockStamp).
func (l *local) hash(p string, c clockStamp) (sum string, lf localFile, proved bool, err error) {
	l.hashes.Add(1)
	f, err := l.open(p)
	if err != nil {
		return "", localFile{}, false, err
	}
	defer f.Close()
	h := sha256.New()
	buf := hashBufs.Get().(*[]byte)
	defer hashBufs.Put(buf)
	// The struct hides the file's WriteTo, which would allocate a buffer
	// of its own for every file.
	if _, err := io.CopyBuffer(h, struct{ io.Reader }{f}, *buf); err != nil {
		return "", localFile{}, false, fmt.Errorf("hash %s: %w", p, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return "", localFile{}, false, err
	}
	return hex.EncodeToString(h.Sum(nil)), infoFile(fi), c.proves(fi), nil
}

// hashBufs are the read buffers of hash: a step hashes many small files.
var hashBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// installIn writes r to p atomically: a temporary file, checked against
// the entry before it is renamed into place, so a reader never sees a
// partial file and wrong bytes never enter the cache (an
// *index.ObjectError matching index.ErrCorruptObject). What it may replace
// is w (see replace): a local edit made since the operation planned is
// never lost. Alone (b nil) the file is durable when installIn returns;
// in batch b it is durable once the batch is (see installBatch), and the
// parent directories are created once per batch. A new file of a batch
// goes through directories the batch holds open where the system allows
// (installNew, Linux).
func (l *local) installIn(b *installBatch, p string, r io.Reader, e index.Entry, w want) (installed, error) {
	if !w.local.exists && !w.backup {
		if in, handled, err := l.installNew(b, p, r, e); handled {
			return in, err
		}
	}
	parent := path.Dir(l.name(p))
	if err := b.mkdirAll(l, parent); err != nil {
		return installed{}, l.explain(p, err)
	}
	if err := b.mkdirAll(l, tmpDir); err != nil {
		return installed{}, err
	}
	tmp := tmpDir + "/dl-" + randID()
	flags := os.O_RDWR | os.O_CREATE | os.O_EXCL
	mode := fs.FileMode(installMode(e.Exec))
	f, err := l.dir.OpenFile(tmp, flags, mode)
	if errors.Is(err, fs.ErrNotExist) && b != nil {
		// .silt/tmp vanished since the batch made it.
		b.forget(tmpDir)
		if err = b.mkdirAll(l, tmpDir); err == nil {
			f, err = l.dir.OpenFile(tmp, flags, mode)
		}
	}
	if err != nil {
		return installed{}, err
	}
	renamed := false
	defer func() {
		if !renamed {
			l.dir.Remove(tmp)
		}
	}()
	fi, err := writeVerified(f, l.path, p, r, e, b.fsyncEach())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return installed{}, err
	}
	kept, moved, err := l.replace(p, tmp, w)
	if errors.Is(err, fs.ErrNotExist) && b != nil {
		// The parent vanished since the batch made or saw it: make it
		// again, once.
		b.forget(parent)
		if err = b.mkdirAll(l, parent); err != nil {
			return installed{}, l.explain(p, err)
		}
		kept, moved, err = l.replace(p, tmp, w)
	}
	renamed = moved
	if err != nil {
		return installed{}, l.inTheWay(p, err)
	}
	return installed{lf: infoFile(fi), kept: kept}, nil
}

// writeVerified writes r into the temporary f (fsynced if fsync) and
// returns f's stat once the bytes are checked against e: wrong bytes are
// an *index.ObjectError matching index.ErrCorruptObject. The temporary's
// stat is the installed file's: a rename or link keeps the inode, its
// size and mtime, and an edit landing after the rename then shows as a
// change against the record.
func writeVerified(f *os.File, root, p string, r io.Reader, e index.Entry, fsync bool) (fs.FileInfo, error) {
	if err := localhook.WriteFault(root, p); err != nil {
		return nil, &os.PathError{Op: "write", Path: f.Name(), Err: err}
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, e.Size+1)); err != nil {
		return nil, err
	}
	if fsync {
		if err := f.Sync(); err != nil {
			return nil, err
		}
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != e.SHA256 {
		return nil, &index.ObjectError{Path: p, SHA256: e.SHA256, Reason: "downloaded bytes hash to " + got, Err: index.ErrCorruptObject}
	}
	return fi, nil
}

// inTheWay turns an install's *LocalEditError into the *index.PathError
// it is when a local directory holds the path.
func (l *local) inTheWay(p string, err error) error {
	var le *LocalEditError
	if errors.As(err, &le) {
		if fi, serr := l.dir.Lstat(l.name(p)); serr == nil && fi.IsDir() {
			return &index.PathError{Path: p, Reason: "a local directory is in the way"}
		}
	}
	return err
}

// chmod sets or clears the executable bits of the file at p (all three,
// where the read bit allows: 0644 becomes 0755), never following a link,
// and returns its stat.
func (l *local) chmod(p string, exec bool) (localFile, error) {
	fi, err := l.dir.Lstat(l.name(p))
	if err != nil {
		return localFile{}, l.explain(p, err)
	}
	if !fi.Mode().IsRegular() {
		return localFile{}, &index.PathError{Path: p, Reason: "not a regular file (" + fi.Mode().Type().String() + ")"}
	}
	perm := fi.Mode().Perm() &^ 0o111
	if exec {
		perm |= (perm & 0o444) >> 2 // execute where it may be read
		perm |= 0o100
	}
	if err := l.dir.Chmod(l.name(p), perm); err != nil {
		return localFile{}, l.explain(p, err)
	}
	return l.stat(p)
}

// randID is a fresh name for a temporary or kept file.
func randID() string {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	return hex.EncodeToString(rnd[:])
}

// pruneDirs removes the directories removing p left empty, up to (not
// including) the data root and only while within accepts them (the
// operation's scope: a directory above it may be one a concurrent
// operation is about to download into). A pull calls it only after all its
// downloads finished, so it never removes a directory its own download
// renames into.
func (l *local) pruneDirs(p string, within func(dir string) bool) {
	top := strings.TrimSuffix(l.ns, "/")
	if top == "" {
		top = "."
	}
	for dir := path.Dir(l.name(p)); dir != top && dir != "."; dir = path.Dir(dir) {
		if !within(strings.TrimPrefix(dir, l.ns)) || l.dir.Remove(dir) != nil {
			break // not empty (or gone): stop climbing
		}
	}
}

// cleanTmp removes temporary downloads a killed pull left behind, in
// .silt/tmp and in its shards (.silt/tmp/0 to f, see installNew). It runs
// at Open, while this process holds the state lock, so no download of
// another process is in flight.
func (l *local) cleanTmp() error {
	return l.cleanTmpIn(tmpDir, true)
}

func (l *local) cleanTmpIn(dir string, top bool) error {
	entries, err := fs.ReadDir(l.dir.FS(), dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, "dl-"):
			if err := l.dir.Remove(dir + "/" + name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		case top && e.IsDir() && len(name) == 1 && strings.Contains("0123456789abcdef", name):
			if err := l.cleanTmpIn(dir+"/"+name, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// tree reads what lies at or below the data path p ("" = everything): a
// tree whose visit (dirNode.each from prefix) yields p's files in path
// order, and how many entries ex excluded (p itself counts one when it is
// excluded). It skips every directory named .silt (this cache's own, or a
// cache nested inside it) and never follows symlinks: a symlink, device
// or socket is an entSkip entry. Nothing at p is an empty tree.
func (l *local) tree(ctx context.Context, p string, ex *ignore.Matcher) (n *dirNode, prefix string, excluded int, err error) {
	start := l.name(p)
	if start == "" {
		start = "."
	}
	start = strings.TrimSuffix(start, "/")
	fi, err := l.dir.Lstat(start)
	if errors.Is(err, fs.ErrNotExist) {
		return &dirNode{}, "", 0, nil
	}
	if err != nil {
		return nil, "", 0, l.explain(p, err)
	}
	if !fi.IsDir() {
		if ex.Path(p, false) == ignore.Excluded {
			return &dirNode{}, "", 1, nil
		}
		// One file (or one entry to skip): a tree of one entry, in p's
		// parent directory.
		n = &dirNode{}
		dir, base := path.Split(p)
		e := dirEnt{kind: entSkip, mode: fi.Mode().Type()}
		if fi.Mode().IsRegular() {
			e = dirEnt{kind: entFile, lf: infoFile(fi)}
		}
		n.add([]byte(base), e)
		return n, dir, 0, nil
	}
	v := ignore.Keep
	if p != "" {
		v = ex.Path(p, true)
	}
	if !ex.Descend(p, v) {
		return &dirNode{}, "", 1, nil
	}
	n, excluded, err = l.readTree(ctx, start, p, ex, v)
	if errors.Is(err, fs.ErrNotExist) {
		return &dirNode{}, "", 0, nil // vanished after the Lstat
	}
	if err != nil {
		return nil, "", 0, l.explain(p, err)
	}
	return n, walkPrefix(p), excluded, nil
}

// notRegular says why a walk skipped a file that is not a regular file.
func notRegular(m fs.FileMode) string {
	if m&fs.ModeSymlink != 0 {
		return "a symlink (silt syncs regular files only)"
	}
	return "not a regular file (" + m.Type().String() + "); silt syncs regular files only"
}
