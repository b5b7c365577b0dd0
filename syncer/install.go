package syncer

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"time"

	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/internal/localhook"
)

// keptDir holds local copies an install displaced: an edit that landed in
// a file while a pull replaced it, or the copy resolve --take-remote
// replaced. Each is one flat file, named in the state (Conflict.Copy,
// Backup.Copy), on the cache's filesystem, so keeping one is a copy of
// bytes silt already holds open.
const keptDir = index.InternalDir + "/kept"

// want is what an install may replace at its path.
type want struct {
	// local is the file the operation planned on (exists false: none). An
	// install replaces only that file, unchanged.
	local localFile
	// sum is local's content hash, when known: the replaced file is hashed
	// against it when a stat alone cannot prove it unchanged.
	sum string
	// backup keeps whatever is replaced, planned or not (resolve
	// --take-remote replaces a local copy on purpose).
	backup bool
}

// installed is what an install left.
type installed struct {
	lf   localFile // the installed file
	kept string    // the displaced file's copy (under keptDir), or ""
}

// LocalEditError reports that a local file changed after the operation
// planned on it: the install left it in place, and the operation reports a
// conflict for the path.
type LocalEditError struct {
	Path   string
	Reason string
}

func (e *LocalEditError) Error() string { return e.Path + ": " + e.Reason }

// replace moves the verified download tmp to p, replacing only what w
// allows, and returns the copy it kept of the replaced file, if any, and
// whether tmp is gone (renamed into place; after a hard link it stays, for
// the caller to remove).
//
// The file at p is opened before it is checked and stays open across the
// rename, so an edit that lands in it after the check (a write through a
// descriptor opened before the rename) is seen by the stat after the
// rename and kept from the still-open file, never lost. A path that was
// absent is created without replacing anything (a hard link, which fails
// if a file appeared).
func (l *local) replace(p, tmp string, w want) (kept string, moved bool, err error) {
	name := l.name(p)
	localhook.Fire(l.path, p, localhook.BeforeCheck)
	f, err := l.dir.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		if w.local.exists && !w.backup {
			return "", false, &LocalEditError{Path: p, Reason: "deleted locally while the download ran; left absent"}
		}
		moved, err = l.create(p, tmp)
		var le *LocalEditError
		if !w.backup || !errors.As(err, &le) {
			return "", moved, err
		}
		// A file appeared and this install keeps what it replaces.
		f, err = l.dir.Open(name)
	}
	if err != nil {
		return "", false, l.explain(p, err)
	}
	defer f.Close()
	cur, err := l.openedAt(p, name, f, "download")
	if err != nil {
		return "", false, err
	}
	if !w.backup && !cur.same(w.local) {
		reason := "changed locally while the download ran; kept the local copy"
		if !w.local.exists {
			reason = "created locally while the download ran; kept the local copy"
		}
		return "", false, &LocalEditError{Path: p, Reason: reason}
	}
	localhook.Fire(l.path, p, localhook.BeforeRename)
	if err := l.dir.Rename(tmp, name); err != nil {
		return "", false, l.explain(p, err)
	}
	localhook.Fire(l.path, p, localhook.AfterRename)
	if !w.backup && !l.changedSince(f, cur, w.sum) {
		return "", true, nil
	}
	kept, err = l.keep(f)
	return kept, true, err
}

// create puts tmp at p only if nothing is there, and reports whether tmp
// is gone (renamed, not linked).
func (l *local) create(p, tmp string) (moved bool, err error) {
	name := l.name(p)
	localhook.Fire(l.path, p, localhook.BeforeRename)
	err = l.dir.Link(tmp, name)
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, fs.ErrExist):
		return false, &LocalEditError{Path: p, Reason: "created locally while the download ran; kept the local copy"}
	case errors.Is(err, fs.ErrNotExist):
		return false, err // the parent directory is gone
	}
	// No hard links here (some FUSE and network filesystems): a check and
	// a rename, with the window between them (RELIABILITY.md, promise 5).
	if _, serr := l.dir.Lstat(name); serr == nil {
		return false, &LocalEditError{Path: p, Reason: "created locally while the download ran; kept the local copy"}
	}
	if err := l.dir.Rename(tmp, name); err != nil {
		return false, l.explain(p, err)
	}
	return true, nil
}

// changedSince reports whether the replaced file f changed after the check
// that saw cur. The rename itself changes the inode's ctime (its link
// count), so size and mtime are compared; when the mtime is too recent to
// prove anything (a write within the same timestamp tick keeps it), the
// bytes are hashed against sum.
func (l *local) changedSince(f *os.File, cur localFile, sum string) bool {
	fi, err := f.Stat()
	if err != nil {
		return true
	}
	now := infoFile(fi)
	if now.size != cur.size || now.mtimeNs != cur.mtimeNs {
		return true
	}
	if sum == "" || time.Now().UnixNano()-cur.mtimeNs >= racyWindow {
		return false
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, math.MaxInt64)); err != nil {
		return true
	}
	return hex.EncodeToString(h.Sum(nil)) != sum
}

// keep copies the open file f into keptDir and returns the copy's name,
// relative to the cache directory.
func (l *local) keep(f *os.File) (string, error) {
	if err := l.dir.MkdirAll(keptDir, 0o755); err != nil {
		return "", err
	}
	name := keptDir + "/" + time.Now().UTC().Format("20060102T150405") + "-" + randID()
	out, err := l.dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	_, err = io.Copy(out, io.NewSectionReader(f, 0, math.MaxInt64))
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = l.dir.Remove(name)
		return "", err
	}
	return name, nil
}

// removeAs removes the file at p, the way replace replaces it: only the file
// w planned on, unchanged (a LocalEditError otherwise), held open across
// the removal so a write that lands in it after the check is kept (or,
// with w.backup, whatever it holds is kept). It returns the kept copy.
func (l *local) removeAs(p string, w want) (string, error) {
	name := l.name(p)
	localhook.Fire(l.path, p, localhook.BeforeCheck)
	f, err := l.dir.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", l.explain(p, err)
	}
	defer f.Close()
	cur, err := l.openedAt(p, name, f, "pull")
	if err != nil {
		return "", err
	}
	if !w.backup && !cur.same(w.local) {
		return "", &LocalEditError{Path: p, Reason: "deleted remotely and changed locally while the pull ran; kept the local copy"}
	}
	localhook.Fire(l.path, p, localhook.BeforeRename)
	if err := l.dir.Remove(name); err != nil {
		return "", l.explain(p, err)
	}
	localhook.Fire(l.path, p, localhook.AfterRename)
	if !w.backup && !l.changedSince(f, cur, w.sum) {
		return "", nil
	}
	return l.keep(f)
}

// openedAt returns the stat of f, opened at name, if name still is that
// regular file; anything that took its place meanwhile is a
// *LocalEditError naming the operation that was running (during).
func (l *local) openedAt(p, name string, f *os.File, during string) (localFile, error) {
	fi, err := f.Stat()
	if err != nil {
		return localFile{}, err
	}
	lfi, err := l.dir.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() || !os.SameFile(fi, lfi) {
		return localFile{}, &LocalEditError{Path: p, Reason: "replaced locally while the " + during + " ran; left in place"}
	}
	return infoFile(fi), nil
}
