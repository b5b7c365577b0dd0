package fs

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"time"

	"syscall"

	"github.com/siltsync/silt/backend"
)

// staged is a fully written, synced temp file waiting to be published.
type staged struct {
	f       *os.File // open, holding the temp file's lock (see createTemp)
	path    string
	size    int64
	version backend.Version
	modTime time.Time // survives the rename, so it is the object's
}

// Put implements backend.Backend. The body goes to a temp file under
// .silt-fs/tmp first, outside any lock; only the check and the rename (or
// link) happen under the key's lock. A cancelled context or a failed read
// removes the temp file and leaves the key as it was.
func (b *Backend) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return backend.ObjectInfo{}, err
	}
	// A condition that already fails fails now: a losing compare-and-swap
	// then costs one hash, not a staged file and two fsyncs. It is checked
	// again under the lock.
	if err := b.checkCond(ctx, key, cond); err != nil {
		return backend.ObjectInfo{}, err
	}
	b.maybeSweepTemps()
	st, err := b.stage(ctx, key, body, size)
	if err != nil {
		return backend.ObjectInfo{}, err
	}
	// The descriptor holds the temp file's lock until the name is gone, so
	// no sweep takes it for abandoned. After a rename the name is gone;
	// after a link or a failure this removes the temp name.
	defer st.f.Close()
	defer os.Remove(st.path)
	if err := ctx.Err(); err != nil {
		return backend.ObjectInfo{}, err
	}
	unlock, err := b.locks.lock(ctx, key)
	if err != nil {
		return backend.ObjectInfo{}, classify("put", key, err)
	}
	defer unlock()
	if err := b.publish(ctx, key, st, cond); err != nil {
		return backend.ObjectInfo{}, err
	}
	return backend.ObjectInfo{Key: key, Size: st.size, Version: st.version, ModTime: st.modTime}, nil
}

// checkCond reports whether cond holds for key now. Under the key's lock
// the answer stays true until the lock is released.
func (b *Backend) checkCond(ctx context.Context, key string, cond backend.Cond) error {
	switch {
	case cond.IfAbsent:
		fi, err := os.Lstat(b.path(key))
		if err == nil && !fi.IsDir() {
			return precondition("put", key, "object exists")
		}
	case cond.IfMatch != "":
		cur, err := b.currentVersion(ctx, "put", key)
		switch {
		case err != nil:
			return err
		case cur == "":
			return precondition("put", key, "object does not exist")
		case cur != cond.IfMatch:
			return precondition("put", key, "object is at another version")
		}
	}
	return nil
}

// publish moves a staged file to key. The caller holds key's lock.
func (b *Backend) publish(ctx context.Context, key string, st staged, cond backend.Cond) error {
	target := b.path(key)
	var err error
	if cond.IfAbsent {
		// link(2) fails with EEXIST if anything holds the name, which makes
		// create-if-absent atomic even against writers that skip the lock.
		err = b.place(target, func() error { return os.Link(st.path, target) })
		if errors.Is(err, iofs.ErrExist) {
			if fi, serr := os.Lstat(target); serr == nil && fi.IsDir() {
				return classify("put", key, &os.LinkError{Op: "link", Old: st.path, New: target, Err: syscall.EISDIR})
			}
			return precondition("put", key, "object exists")
		}
	} else {
		if err := b.checkCond(ctx, key, cond); err != nil {
			return err
		}
		err = b.place(target, func() error { return os.Rename(st.path, target) })
	}
	if err != nil {
		return classify("put", key, err)
	}
	return classify("put", key, syncDir(filepath.Dir(target)))
}

// maxPlaceAttempts bounds how often place recreates a parent directory
// that a concurrent Delete pruned.
const maxPlaceAttempts = 64

// place runs a rename or link into target, creating target's parent
// directories when they are missing. The parent exists for most writes,
// so it is created only after the first attempt says it is missing.
func (b *Backend) place(target string, op func() error) error {
	for attempt := 1; ; attempt++ {
		err := op()
		if !errors.Is(err, iofs.ErrNotExist) || attempt == maxPlaceAttempts {
			return err
		}
		// MkdirAll itself can lose a directory it just made to a pruning
		// Delete: ENOENT, or EEXIST when its mkdir lost to another writer's
		// and the directory was pruned before MkdirAll looked again (a parent
		// that is a file is ENOTDIR). The next attempt then tries again.
		if err := os.MkdirAll(filepath.Dir(target), 0o777); err != nil && !errors.Is(err, iofs.ErrNotExist) && !errors.Is(err, iofs.ErrExist) {
			return err
		}
	}
}

// stage copies exactly size bytes of body to a new temp file, hashing them
// on the way, and syncs it. On any failure the temp file is removed.
func (b *Backend) stage(ctx context.Context, key string, body io.Reader, size int64) (st staged, err error) {
	f, err := b.createTemp()
	if err != nil {
		return staged{}, classify("put", key, err)
	}
	defer func() {
		if err != nil {
			os.Remove(f.Name()) // before the close drops the lock
			f.Close()
		}
	}()
	h := sha256.New()
	buf := make([]byte, min(size+1, 256<<10))
	var n int64
	for n <= size { // read one byte past size to see a body that is too long
		if err := ctx.Err(); err != nil {
			return staged{}, err
		}
		k, rerr := body.Read(buf[:min(int64(len(buf)), size+1-n)])
		if n+int64(k) > size {
			return staged{}, backend.Permanent("put", key, fmt.Errorf("body is longer than size %d", size))
		}
		if _, werr := f.Write(buf[:k]); werr != nil {
			return staged{}, classify("put", key, werr)
		}
		h.Write(buf[:k])
		n += int64(k)
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return staged{}, backend.Permanent("put", key, fmt.Errorf("read body: %w", rerr))
		}
	}
	if err := backend.CheckBodySize(key, n, size); err != nil {
		return staged{}, err
	}
	if err := f.Sync(); err != nil {
		return staged{}, classify("put", key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return staged{}, classify("put", key, err)
	}
	return staged{f: f, path: f.Name(), size: n, version: versionOf(h), modTime: fi.ModTime()}, nil
}
