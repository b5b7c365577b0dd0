package fs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/siltsync/silt/backend"
)

// versionOf names content by its hash, so a file copied in by hand has a
// version as good as one this package wrote.
func versionOf(h hash.Hash) backend.Version {
	return backend.Version(hex.EncodeToString(h.Sum(nil)))
}

// fileID and stamp together identify one state of one file for the hash
// cache.
type fileID struct{ dev, ino uint64 }

type stamp struct{ size, mtime, ctime int64 }

type cached struct {
	stamp   stamp
	version backend.Version
}

// cacheMax bounds the cache; past it the cache starts again empty rather
// than tracking recency.
const cacheMax = 1 << 16

// racyWindow is how old a file's ctime must be before its hash is cached.
// An inode freed by a rename can be reused at once by a file of the same
// size whose timestamps fall in the same clock tick; such a file would
// match a cached stamp. A file whose change time is older than the window
// cannot be confused with one created after the entry was cached, so only
// those are cached (git's "racy clean" rule).
const racyWindow = 2 * time.Second

type hashCache struct {
	mu sync.Mutex
	m  map[fileID]cached
}

func (c *hashCache) get(id fileID, st stamp) (backend.Version, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	if !ok || e.stamp != st {
		return "", false
	}
	return e.version, true
}

func (c *hashCache) put(id fileID, st stamp, v backend.Version) {
	if time.Since(time.Unix(0, st.ctime)) < racyWindow {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= cacheMax {
		c.m = make(map[fileID]cached)
	}
	c.m[id] = cached{st, v}
}

// fileState describes an open regular file: its size, modification time
// and content version.
type fileState struct {
	size    int64
	modTime time.Time
	version backend.Version
}

// ErrNotRegular is returned (wrapped in a *backend.Error) when a key names
// a pipe, a device or an empty directory: something that is not an
// object, where reading "absent" would hide that the bucket was tampered
// with (a manifest that is a FIFO must not read as a fresh bucket).
var ErrNotRegular = errors.New("not a regular file")

// notRegular describes what f, which is not a regular file, is. A
// directory holding entries is only the parent of other keys, as a prefix
// is in an object store: that key names no object (syscall.EISDIR, which
// classify reads as absent).
func notRegular(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	kind := "a device or socket"
	switch m := fi.Mode(); {
	case m.IsDir():
		if names, _ := f.Readdirnames(1); len(names) > 0 {
			return syscall.EISDIR
		}
		kind = "an empty directory"
	case m&os.ModeNamedPipe != 0:
		kind = "a named pipe (FIFO)"
	case m&os.ModeDevice != 0:
		kind = "a device"
	}
	return fmt.Errorf("%w: the key is %s, not an object", ErrNotRegular, kind)
}

// state hashes f from its start and leaves it positioned at its start, so
// the caller can hand out the same descriptor and the version describes
// exactly the bytes read from it. Files are only ever replaced by rename,
// never rewritten in place, so an open descriptor is a stable snapshot.
func (b *Backend) state(ctx context.Context, f *os.File) (fileState, error) {
	id, sp, regular, cacheable, err := statFile(f)
	if err != nil {
		return fileState{}, err
	}
	if !regular {
		return fileState{}, notRegular(f)
	}
	s := fileState{size: sp.size, modTime: time.Unix(0, sp.mtime)}
	if v, ok := b.hashes.get(id, sp); ok && cacheable {
		s.version = v
		return s, nil
	}
	h := sha256.New()
	n, err := io.Copy(h, ctxReader{ctx, f})
	if err != nil {
		return fileState{}, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fileState{}, err
	}
	s.version = versionOf(h)
	if n == sp.size && cacheable {
		b.hashes.put(id, sp, s.version)
	}
	s.size = n // the bytes hashed are the bytes the reader will yield
	return s, nil
}

// ctxReader stops a long read or hash when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
