package mem

import (
	"bytes"
	"context"
	"io"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/siltsync/silt/backend"
)

// Scheme is the URL scheme this package registers.
const Scheme = "mem"

func init() {
	backend.Register(Scheme, openURL)
}

var (
	namedMu sync.Mutex
	named   = map[string]*Backend{}
)

func openURL(_ context.Context, u *url.URL) (backend.Driver, error) {
	if err := backend.CheckParams(u); err != nil {
		return nil, err
	}
	name, prefix, err := backend.BucketAndPrefix(u)
	if err != nil {
		return nil, err
	}
	namedMu.Lock()
	b, ok := named[name]
	if !ok {
		b = newDriver()
		b.name = name
		named[name] = b
	}
	namedMu.Unlock()
	return backend.Prefixed(backend.Portable(nopClose{b}), prefix), nil
}

// nopClose keeps a shared named bucket alive when one opener closes it.
type nopClose struct{ *Backend }

func (nopClose) Close() error { return nil }

type object struct {
	data    []byte
	version backend.Version
	modTime time.Time
}

// Backend is an in-memory bucket. The zero value is not usable; call New.
type Backend struct {
	mu      sync.Mutex
	objects map[string]object
	gen     uint64 // versions are never reused, so stale IfMatch always fails
	name    string // the URL's name, for Describe
}

var _ backend.Driver = (*Backend)(nil)

// New returns an empty bucket behind [backend.Portable], the only form in
// which a consumer may use a driver.
func New() backend.Backend {
	return backend.Portable(newDriver())
}

func newDriver() *Backend {
	return &Backend{objects: map[string]object{}}
}

// Get implements backend.Backend.
func (b *Backend) Get(ctx context.Context, key string, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	b.mu.Lock()
	o, ok := b.objects[key]
	b.mu.Unlock()
	switch {
	case !ok && opts.IfMatch != "":
		return nil, backend.ObjectInfo{}, backend.PreconditionFailed("get", key, nil)
	case !ok:
		return nil, backend.ObjectInfo{}, backend.NotFound("get", key, nil)
	case opts.IfMatch != "" && opts.IfMatch != o.version:
		return nil, backend.ObjectInfo{}, backend.PreconditionFailed("get", key, nil)
	case opts.IfNoneMatch != "" && opts.IfNoneMatch == o.version:
		return nil, info(key, o), backend.NotModified("get", key, nil)
	}
	data := o.data
	if r := opts.Range; r != nil {
		if !r.Within(int64(len(data))) {
			return nil, info(key, o), backend.InvalidRange("get", key, nil)
		}
		data = data[r.Offset:r.End()]
	}
	return io.NopCloser(bytes.NewReader(data)), info(key, o), nil
}

// Put implements backend.Backend. The body is read in full before the
// condition is checked, so a cancelled or failed read stores nothing.
func (b *Backend) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	data, err := io.ReadAll(io.LimitReader(body, size+1))
	if err != nil {
		return backend.ObjectInfo{}, backend.Permanent("put", key, err)
	}
	if err := backend.CheckBodySize(key, int64(len(data)), size); err != nil {
		return backend.ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return backend.ObjectInfo{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.condHolds("put", key, cond); err != nil {
		return backend.ObjectInfo{}, err
	}
	b.gen++
	o := object{data: data, version: backend.Version(strconv.FormatUint(b.gen, 10)), modTime: time.Now()}
	b.objects[key] = o
	return info(key, o), nil
}

// condHolds must be called with b.mu held.
func (b *Backend) condHolds(op, key string, cond backend.Cond) error {
	o, ok := b.objects[key]
	switch {
	case cond.IfAbsent && ok:
		return backend.PreconditionFailed(op, key, nil)
	case cond.IfMatch != "" && (!ok || o.version != cond.IfMatch):
		return backend.PreconditionFailed(op, key, nil)
	}
	return nil
}

// Delete implements backend.Backend.
func (b *Backend) Delete(ctx context.Context, key string, cond backend.Cond) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.condHolds("delete", key, cond); err != nil {
		return err
	}
	delete(b.objects, key)
	return nil
}

// Stat implements backend.Backend.
func (b *Backend) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	b.mu.Lock()
	o, ok := b.objects[key]
	b.mu.Unlock()
	if !ok {
		return backend.ObjectInfo{}, backend.NotFound("stat", key, nil)
	}
	return info(key, o), nil
}

// List implements backend.Backend. It snapshots the matching keys first, so
// fn may write to the bucket.
func (b *Backend) List(ctx context.Context, prefix string, opts backend.ListOptions, fn func([]backend.ObjectInfo) error) error {
	b.mu.Lock()
	var all []backend.ObjectInfo
	for k, o := range b.objects {
		if strings.HasPrefix(k, prefix) {
			all = append(all, info(k, o))
		}
	}
	b.mu.Unlock()
	sort.Slice(all, func(i, j int) bool { return all[i].Key < all[j].Key })
	size := opts.PageSize
	for len(all) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(size, len(all))
		if err := fn(all[:n:n]); err != nil {
			return err
		}
		all = all[n:]
	}
	return ctx.Err()
}

// Capabilities implements backend.Backend: everything, atomically.
func (b *Backend) Capabilities() backend.Capabilities {
	return backend.Capabilities{ConditionalPut: true, AtomicCreate: true, ConditionalDelete: true, ListAfterWrite: true}
}

// Close implements backend.Backend.
func (b *Backend) Close() error { return nil }

// Describe implements backend.Describer: an in-process bucket needs no
// credentials.
func (b *Backend) Describe() backend.Description {
	return backend.Description{Scheme: Scheme, Bucket: b.name, Credentials: "none (in-process memory)"}
}

func info(key string, o object) backend.ObjectInfo {
	return backend.ObjectInfo{Key: key, Size: int64(len(o.data)), Version: o.version, ModTime: o.modTime}
}
