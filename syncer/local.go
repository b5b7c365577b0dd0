package syncer

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// local is the cache directory as silt sees it: data under root, silt's
// own files under meta (DIR/.silt), temporary downloads in meta/tmp so a
// rename into place never crosses a filesystem.
type local struct {
	root string // where data paths start ({Dir} or {Dir}/{namespace})
	tmp  string
}

// localFile is what a stat of one data path found.
type localFile struct {
	exists  bool
	size    int64
	mtimeNs int64
}

func (l *local) abs(p string) string { return filepath.Join(l.root, filepath.FromSlash(p)) }

// checkParents refuses a path whose parent directories include a symlink
// (or a file), so nothing silt reads or writes can land outside root.
func (l *local) checkParents(p string) error {
	dir := l.root
	segs := strings.Split(p, "/")
	for _, seg := range segs[:len(segs)-1] {
		dir = filepath.Join(dir, seg)
		fi, err := os.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return &PathError{Path: p, Reason: "a parent directory is a symlink"}
		}
		if !fi.IsDir() {
			return &PathError{Path: p, Reason: "a parent is not a directory"}
		}
	}
	return nil
}

// stat looks at one data path. A symlink, directory or device at the path is
// refused: silt syncs regular files only and never follows a link.
func (l *local) stat(p string) (localFile, error) {
	if err := l.checkParents(p); err != nil {
		return localFile{}, err
	}
	fi, err := os.Lstat(l.abs(p))
	if errors.Is(err, fs.ErrNotExist) {
		return localFile{}, nil
	}
	if err != nil {
		return localFile{}, err
	}
	if !fi.Mode().IsRegular() {
		return localFile{}, &PathError{Path: p, Reason: "not a regular file (" + fi.Mode().Type().String() + ")"}
	}
	return localFile{exists: true, size: fi.Size(), mtimeNs: fi.ModTime().UnixNano()}, nil
}

// hash returns the sha256 of the file at p, with the size and mtime of the
// bytes hashed.
func (l *local) hash(p string) (sum string, lf localFile, err error) {
	f, err := os.Open(l.abs(p))
	if err != nil {
		return "", localFile{}, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", localFile{}, fmt.Errorf("hash %s: %w", p, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return "", localFile{}, err
	}
	return hex.EncodeToString(h.Sum(nil)), localFile{exists: true, size: fi.Size(), mtimeNs: fi.ModTime().UnixNano()}, nil
}

// errChecksum is returned when downloaded bytes do not match the index.
var errChecksum = errors.New("downloaded bytes do not match the index's sha256")

// install writes r to p atomically: a temp file in the same filesystem,
// checked against wantSHA before it is renamed into place, so a reader
// never sees a partial file and wrong bytes never enter the cache.
func (l *local) install(p string, r io.Reader, wantSHA string) (localFile, error) {
	if err := l.checkParents(p); err != nil {
		return localFile{}, err
	}
	dst := l.abs(p)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return localFile{}, err
	}
	if err := l.checkParents(p); err != nil { // MkdirAll may have raced a symlink in
		return localFile{}, err
	}
	if err := os.MkdirAll(l.tmp, 0o755); err != nil {
		return localFile{}, err
	}
	f, err := os.CreateTemp(l.tmp, "dl-*")
	if err != nil {
		return localFile{}, err
	}
	defer os.Remove(f.Name()) // no-op after a successful rename
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(f, h), r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return localFile{}, err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != wantSHA {
		return localFile{}, fmt.Errorf("%s: %w (got %s, want %s)", p, errChecksum, got, wantSHA)
	}
	if fi, err := os.Lstat(dst); err == nil && fi.IsDir() {
		return localFile{}, &PathError{Path: p, Reason: "a local directory is in the way"}
	}
	if err := os.Rename(f.Name(), dst); err != nil {
		return localFile{}, err
	}
	return l.stat(p)
}

// remove deletes the file at p and the directories it leaves empty, up to
// (not including) root.
func (l *local) remove(p string) error {
	if err := l.checkParents(p); err != nil {
		return err
	}
	if err := os.Remove(l.abs(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for dir := filepath.Dir(l.abs(p)); dir != l.root && strings.HasPrefix(dir, l.root); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			break // not empty (or gone): stop climbing
		}
	}
	return nil
}

// walk calls fn, in path order, for every regular file at or below p ("" =
// everything). It skips silt's own directory and never follows symlinks.
func (l *local) walk(p string, fn func(p string, lf localFile) error) error {
	if p != "" {
		if err := l.checkParents(p); err != nil {
			return err
		}
	}
	start := l.abs(p)
	fi, err := os.Lstat(start)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().IsRegular() {
		return fn(p, localFile{exists: true, size: fi.Size(), mtimeNs: fi.ModTime().UnixNano()})
	}
	if !fi.IsDir() {
		return nil
	}
	// WalkDir never follows symlinks, so below a checked start nothing can
	// lead outside root.
	type found struct {
		p  string
		lf localFile
	}
	var files []found
	err = filepath.WalkDir(start, func(abs string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // vanished while walking
			}
			return err
		}
		rel, _ := filepath.Rel(l.root, abs)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && isInternal(rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || validDataPath(rel) != nil {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // vanished while walking
		}
		files = append(files, found{rel, localFile{exists: true, size: fi.Size(), mtimeNs: fi.ModTime().UnixNano()}})
		return nil
	})
	if err != nil {
		return err
	}
	// Byte order, the order of the index.
	sort.Slice(files, func(i, j int) bool { return files[i].p < files[j].p })
	for _, f := range files {
		if err := fn(f.p, f.lf); err != nil {
			return err
		}
	}
	return nil
}
