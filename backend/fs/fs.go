package fs

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"syscall"

	"github.com/siltsync/silt/backend"
)

// Scheme is the URL scheme this package registers.
const Scheme = "file"

// Reserved is the name of the directory at the root of the bucket that
// holds this package's temp and lock files. Keys whose first segment is
// Reserved are invalid, and List never reports anything under it.
const Reserved = ".silt-fs"

// Backend is a directory used as a bucket. The zero value is not usable;
// call New.
type Backend struct {
	root   string // absolute
	tmpDir string // staged writes, on the same file system as root
	locks  *locker
	hashes hashCache
	swept  atomic.Int64 // unix nanoseconds of the last sweep of tmpDir
}

var _ backend.Driver = (*Backend)(nil)

// Describe implements backend.Describer: a directory needs no credentials
// beyond the file system's permissions.
func (b *Backend) Describe() backend.Description {
	return backend.Description{Scheme: Scheme, Bucket: b.root, Credentials: "none (local file system permissions)"}
}

// New opens the directory root as a bucket, creating it and its parents
// when missing (use the URL parameter create=false to insist that it
// exists). It also creates root/.silt-fs, where writes are staged and
// writers lock, so root must be writable.
//
// The store comes back behind [backend.Portable], the only form in which a
// consumer may use a driver.
func New(root string) (backend.Backend, error) {
	b, err := open(root, true)
	if err != nil {
		return nil, err
	}
	return backend.Portable(b), nil
}

func open(root string, create bool) (*Backend, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("fs: %w", err)
	}
	if create {
		if err := os.MkdirAll(abs, 0o777); err != nil {
			return nil, fmt.Errorf("fs: create bucket directory: %w", err)
		}
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("fs: bucket directory: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("fs: bucket %s is not a directory", abs)
	}
	b := &Backend{root: abs, tmpDir: filepath.Join(abs, Reserved, "tmp")}
	lockDir := filepath.Join(abs, Reserved, "locks")
	for _, d := range []string{b.tmpDir, lockDir} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			return nil, fmt.Errorf("fs: create %s: %w", d, err)
		}
	}
	b.locks = newLocker(lockDir)
	b.sweepTemps()
	return b, nil
}

// Root returns the absolute path of the bucket directory.
func (b *Backend) Root() string { return b.root }

// checkKey refuses the key this backend reserves; backend.Portable has
// checked the shared rules.
func checkKey(key string) error {
	if first, _, _ := strings.Cut(key, "/"); first == Reserved {
		return &backend.KeyError{Key: key, Reason: fmt.Sprintf("first segment %q is reserved by the file backend", Reserved)}
	}
	return nil
}

func (b *Backend) path(key string) string {
	return filepath.Join(b.root, filepath.FromSlash(key))
}

// openObject opens key's file and describes it. A directory, pipe or
// device is not an object.
func (b *Backend) openObject(ctx context.Context, op, key string) (*os.File, fileState, error) {
	if err := checkKey(key); err != nil {
		return nil, fileState{}, err
	}
	// O_NONBLOCK keeps a stray FIFO from hanging open; it changes nothing
	// for a regular file.
	f, err := os.OpenFile(b.path(key), os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, fileState{}, classify(op, key, err)
	}
	s, err := b.state(ctx, f)
	if err != nil {
		f.Close()
		return nil, fileState{}, classify(op, key, err)
	}
	return f, s, nil
}

func info(key string, s fileState) backend.ObjectInfo {
	return backend.ObjectInfo{Key: key, Size: s.size, Version: s.version, ModTime: s.modTime}
}

// Get implements backend.Backend. The reader is the descriptor that was
// hashed, so the version describes exactly the bytes it yields even if the
// key is replaced while it is read. GetOptions.IfNoneMatch is compared
// with that same hash; an unchanged object still costs the hash (usually
// cached), but no bytes are handed out.
func (b *Backend) Get(ctx context.Context, key string, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	f, s, err := b.openObject(ctx, "get", key)
	switch {
	case opts.IfMatch != "" && backend.IsNotExist(err):
		return nil, backend.ObjectInfo{}, precondition("get", key, "object does not exist")
	case err != nil:
		return nil, backend.ObjectInfo{}, err
	case opts.IfMatch != "" && opts.IfMatch != s.version:
		f.Close()
		return nil, backend.ObjectInfo{}, precondition("get", key, "object is at another version")
	case opts.IfNoneMatch != "" && opts.IfNoneMatch == s.version:
		// Compared after hashing the open descriptor, so "unchanged"
		// describes the very file that would have been read.
		f.Close()
		return nil, info(key, s), backend.NotModified("get", key, nil)
	}
	if r := opts.Range; r != nil {
		return rangeOf(f, key, s, *r)
	}
	return f, info(key, s), nil
}

// rangeOf serves a ranged Get from the hashed descriptor: a section of it,
// read in place, so a range of a large file costs only its own bytes.
func rangeOf(f *os.File, key string, s fileState, r backend.Range) (io.ReadCloser, backend.ObjectInfo, error) {
	if !r.Within(s.size) {
		f.Close()
		return nil, info(key, s), backend.RangeOutside("get", key, r, s.size)
	}
	return sectionFile{SectionReader: io.NewSectionReader(f, r.Offset, r.Length), f: f}, info(key, s), nil
}

// sectionFile reads a section of a file and closes the file.
type sectionFile struct {
	*io.SectionReader
	f *os.File
}

func (s sectionFile) Close() error { return s.f.Close() }

// Stat implements backend.Backend. It hashes the file (or finds the hash
// in the cache), since the version is the content hash.
func (b *Backend) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	f, s, err := b.openObject(ctx, "stat", key)
	if err != nil {
		return backend.ObjectInfo{}, err
	}
	f.Close()
	return info(key, s), nil
}

// currentVersion is the version of key's object, or "" when there is none.
func (b *Backend) currentVersion(ctx context.Context, op, key string) (backend.Version, error) {
	f, s, err := b.openObject(ctx, op, key)
	if backend.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	f.Close()
	return s.version, nil
}

// Delete implements backend.Backend. It also removes the parent
// directories the deletion leaves empty, up to the root, so the tree holds
// no directory an object store would not show.
func (b *Backend) Delete(ctx context.Context, key string, cond backend.Cond) error {
	if err := checkKey(key); err != nil {
		return err
	}
	unlock, err := b.locks.lock(ctx, key)
	if err != nil {
		return classify("delete", key, err)
	}
	defer unlock()
	target := b.path(key)
	if cond.IfMatch != "" {
		cur, err := b.currentVersion(ctx, "delete", key)
		switch {
		case err != nil:
			return err
		case cur == "":
			return precondition("delete", key, "object does not exist")
		case cur != cond.IfMatch:
			return precondition("delete", key, "object is at another version")
		}
	} else if fi, err := os.Lstat(target); err != nil || fi.IsDir() {
		// Nothing stored under key: a missing key, or only keys below it.
		return nil
	}
	if err := unlink(target); err != nil {
		if errors.Is(err, iofs.ErrNotExist) && cond.IfMatch == "" {
			return nil
		}
		return classify("delete", key, &os.PathError{Op: "unlink", Path: target, Err: err})
	}
	// A concurrent Delete of a sibling may already have pruned the emptied
	// directory; then there is nothing left to sync.
	if err := syncDir(filepath.Dir(target)); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return classify("delete", key, err)
	}
	b.pruneDirs(filepath.Dir(target))
	return nil
}

// pruneDirs removes dir and its ancestors below the root while they are
// empty. A Put racing to fill one of them sees its rename fail and
// recreates the directory (see place).
func (b *Backend) pruneDirs(dir string) {
	for dir != b.root && strings.HasPrefix(dir, b.root+string(filepath.Separator)) {
		if rmdir(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}

// syncDir makes a rename, link or unlink in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err // EINVAL: the file system cannot sync a directory
	}
	return nil
}

// Capabilities implements backend.Backend. Conditions are atomic across
// processes on one machine sharing the directory; see the package
// documentation for network file systems.
func (b *Backend) Capabilities() backend.Capabilities {
	return backend.Capabilities{ConditionalPut: true, AtomicCreate: true, ConditionalDelete: true, ListAfterWrite: true}
}

// Close implements backend.Backend. It holds no open files between
// calls, so there is nothing to release.
func (b *Backend) Close() error { return nil }

// Endpoint names the bucket directory, for error messages.
func (b *Backend) Endpoint() string { return "file bucket " + b.root }
