package blob

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"

	gcblob "gocloud.dev/blob"

	"github.com/siltsync/silt/backend"
)

// getAttempts bounds how often Get re-reads an object that keeps changing
// under it before reporting a retryable error.
const getAttempts = 3

// Backend adapts a *blob.Bucket. Create it with New.
type Backend struct {
	b         *gcblob.Bucket
	cfg       Config
	ownBucket bool   // opened from a URL, so Close closes it
	scheme    string // the URL's scheme ("blob+azblob"), for Describe
	name      string // the URL's host, for Describe
}

var _ backend.Driver = (*Backend)(nil)

// Describe implements backend.Describer. The gocloud driver resolves its
// own credentials, which the adapter cannot see.
func (b *Backend) Describe() backend.Description {
	scheme := b.scheme
	if scheme == "" {
		scheme = "blob"
	}
	return backend.Description{Scheme: scheme, Bucket: b.name, Credentials: "the gocloud driver's own (its default chain)"}
}

// New adapts b, behind [backend.Portable], the only form in which a
// consumer may use a driver. Close does not close b; its owner does.
func New(b *gcblob.Bucket, cfg Config) backend.Backend {
	return backend.Portable(newDriver(b, cfg))
}

func newDriver(b *gcblob.Bucket, cfg Config) *Backend {
	return &Backend{b: b, cfg: cfg}
}

// version derives a Version from blob attributes; see the package doc for
// why MD5 comes first.
func version(md5 []byte, etag string, modNanos, size int64) backend.Version {
	switch {
	case len(md5) > 0:
		return backend.Version("md5:" + hex.EncodeToString(md5))
	case etag != "":
		return backend.Version("etag:" + etag)
	}
	return backend.Version("mod:" + strconv.FormatInt(modNanos, 10) + "-" + strconv.FormatInt(size, 10))
}

func attrsInfo(key string, a *gcblob.Attributes) backend.ObjectInfo {
	return backend.ObjectInfo{Key: key, Size: a.Size, ModTime: a.ModTime,
		Version: version(a.MD5, a.ETag, a.ModTime.UnixNano(), a.Size)}
}

// errChanged marks a Get attempt that saw the object change mid-read.
var errChanged = errors.New("object changed while it was being opened")

// Get implements backend.Backend by bracketing the read between two
// Attributes calls (see the package doc).
func (b *Backend) Get(ctx context.Context, key string, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	c := call{op: "get", key: key, conditional: opts.IfMatch != ""}
	for range getAttempts {
		r, info, err := b.getOnce(ctx, c, opts)
		if !errors.Is(err, errChanged) {
			return r, info, err
		}
	}
	return nil, backend.ObjectInfo{}, backend.Retryable("get", key, errChanged)
}

func (b *Backend) getOnce(ctx context.Context, c call, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	before, err := b.b.Attributes(ctx, c.key)
	if err != nil {
		return nil, backend.ObjectInfo{}, classify(c, err)
	}
	info := attrsInfo(c.key, before)
	if opts.IfMatch != "" && opts.IfMatch != info.Version {
		return nil, backend.ObjectInfo{}, backend.PreconditionFailed("get", c.key,
			fmt.Errorf("version is %s, want %s", info.Version, opts.IfMatch))
	}
	if opts.IfNoneMatch != "" && opts.IfNoneMatch == info.Version {
		// Decided from the first Attributes call, before any reader is
		// opened: the object was unchanged when that call answered.
		return nil, info, backend.NotModified("get", c.key, nil)
	}
	offset, length := int64(0), int64(-1)
	if rg := opts.Range; rg != nil {
		// Judged against the size the first Attributes call gave: gocloud
		// drivers differ on a range past the end (an error, a short
		// body), and the bracket below proves that size is the read's.
		if !rg.Within(before.Size) {
			return nil, info, backend.RangeOutside("get", c.key, *rg, before.Size)
		}
		offset, length = rg.Offset, rg.Length
	}
	r, err := b.b.NewRangeReader(ctx, c.key, offset, length, nil)
	if err != nil {
		return nil, backend.ObjectInfo{}, classify(c, err)
	}
	// The reader's size and time come from the read itself; a mismatch
	// means it opened a different object than the one described. Every
	// gocloud driver reports the whole object's size on a ranged reader
	// (azureblob from Content-Range, memblob and fileblob from the
	// object).
	if r.Size() != before.Size || !r.ModTime().Equal(before.ModTime) {
		r.Close()
		return nil, backend.ObjectInfo{}, errChanged
	}
	after, err := b.b.Attributes(ctx, c.key)
	if err != nil || attrsInfo(c.key, after).Version != info.Version || !after.ModTime.Equal(before.ModTime) {
		r.Close()
		if err != nil && ctx.Err() != nil {
			return nil, backend.ObjectInfo{}, ctx.Err()
		}
		return nil, backend.ObjectInfo{}, errChanged
	}
	return r, info, nil
}

// Put implements backend.Backend. The writer commits only in Close, which
// is never reached after an error: the writer's context is cancelled
// instead, which every gocloud driver treats as "discard".
func (b *Backend) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	// backend.Portable refuses IfMatch (Capabilities claim no
	// ConditionalPut) and IfAbsent unless Config.AtomicCreate.
	c := call{op: "put", key: key, conditional: cond.IfAbsent}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := b.b.NewWriter(wctx, key, &gcblob.WriterOptions{
		IfNotExist:  cond.IfAbsent,
		ContentType: "application/octet-stream", // no sniffing: bytes are opaque
	})
	if err != nil {
		return backend.ObjectInfo{}, classify(c, err)
	}
	abort := func(err error) (backend.ObjectInfo, error) {
		cancel()
		_ = w.Close() // fails with the cancellation; nothing is stored
		return backend.ObjectInfo{}, err
	}
	n, err := io.Copy(w, io.LimitReader(body, size+1))
	if ctxErr := ctx.Err(); ctxErr != nil {
		return abort(ctxErr)
	}
	if err != nil {
		return abort(classify(c, err))
	}
	if err := backend.CheckBodySize(key, n, size); err != nil {
		return abort(err)
	}
	if err := w.Close(); err != nil {
		return backend.ObjectInfo{}, classify(c, err)
	}
	a, err := b.b.Attributes(ctx, key)
	if err != nil {
		return backend.ObjectInfo{}, classify(call{op: "put", key: key}, fmt.Errorf("written, but reading its version back failed: %w", err))
	}
	return attrsInfo(key, a), nil
}

// Delete implements backend.Backend. Deleting a missing key succeeds.
func (b *Backend) Delete(ctx context.Context, key string, cond backend.Cond) error {
	// Any condition was refused by backend.Portable: no ConditionalDelete.
	err := classify(call{op: "delete", key: key}, b.b.Delete(ctx, key))
	if backend.IsNotExist(err) {
		return nil
	}
	return err
}

// Stat implements backend.Backend.
func (b *Backend) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	a, err := b.b.Attributes(ctx, key)
	if err != nil {
		return backend.ObjectInfo{}, classify(call{op: "stat", key: key}, err)
	}
	return attrsInfo(key, a), nil
}

// List implements backend.Backend. Objects listed without an MD5 cost one
// Attributes call each, so their version matches Stat's.
func (b *Backend) List(ctx context.Context, prefix string, opts backend.ListOptions, fn func([]backend.ObjectInfo) error) error {
	size := opts.PageSize
	c := call{op: "list", key: prefix}
	token := gcblob.FirstPageToken
	for len(token) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		objs, next, err := b.b.ListPage(ctx, token, size, &gcblob.ListOptions{Prefix: prefix})
		if err != nil {
			return classify(c, err)
		}
		page := make([]backend.ObjectInfo, 0, len(objs))
		for _, o := range objs {
			if o.IsDir {
				continue
			}
			info := backend.ObjectInfo{Key: o.Key, Size: o.Size, ModTime: o.ModTime}
			if len(o.MD5) > 0 {
				info.Version = version(o.MD5, "", 0, 0)
			} else {
				a, err := b.b.Attributes(ctx, o.Key)
				if err != nil {
					if backend.IsNotExist(classify(c, err)) {
						continue // deleted since it was listed
					}
					return classify(c, err)
				}
				info = attrsInfo(o.Key, a)
			}
			page = append(page, info)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(page) > 0 {
			if err := fn(page); err != nil {
				return err
			}
		}
		token = next
	}
	return ctx.Err()
}

// Capabilities implements backend.Backend.
func (b *Backend) Capabilities() backend.Capabilities {
	return backend.Capabilities{AtomicCreate: b.cfg.AtomicCreate, ListAfterWrite: b.cfg.ListAfterWrite}
}

// Close implements backend.Backend. It closes the bucket only if it was
// opened from a URL.
func (b *Backend) Close() error {
	if b.ownBucket {
		return b.b.Close()
	}
	return nil
}
