package backend

import (
	"context"
	"io"
	"strings"
)

// Prefixed returns a backend that stores every key under prefix in b. It is
// how a URL's path and a namespace are applied to stores whose native API
// has no prefix of its own. An empty prefix returns b. Unlike a driver it
// validates keys itself: it may sit above the production stack (a
// namespace), and an invalid key must be reported as the caller spelled it,
// not glued to the prefix.
func Prefixed(b Backend, prefix string) Backend {
	if prefix == "" {
		return b
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return &prefixed{inner: b, prefix: prefix}
}

type prefixed struct {
	inner  Backend
	prefix string
}

func (p *prefixed) Unwrap() Backend { return p.inner }

func (*prefixed) portableLayer() {}

func (p *prefixed) Get(ctx context.Context, key string, opts GetOptions) (io.ReadCloser, ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return nil, ObjectInfo{}, err
	}
	rc, info, err := p.inner.Get(ctx, p.prefix+key, opts)
	info.Key = key
	return rc, info, err
}

func (p *prefixed) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond Cond) (ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return ObjectInfo{}, err
	}
	info, err := p.inner.Put(ctx, p.prefix+key, body, size, cond)
	info.Key = key
	return info, err
}

func (p *prefixed) Delete(ctx context.Context, key string, cond Cond) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	return p.inner.Delete(ctx, p.prefix+key, cond)
}

func (p *prefixed) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return ObjectInfo{}, err
	}
	info, err := p.inner.Stat(ctx, p.prefix+key)
	info.Key = key
	return info, err
}

func (p *prefixed) List(ctx context.Context, prefix string, opts ListOptions, fn func([]ObjectInfo) error) error {
	if err := ValidatePrefix(prefix); err != nil {
		return err
	}
	return p.inner.List(ctx, p.prefix+prefix, opts, func(page []ObjectInfo) error {
		for i := range page {
			page[i].Key = strings.TrimPrefix(page[i].Key, p.prefix)
		}
		return fn(page)
	})
}

func (p *prefixed) Capabilities() Capabilities { return p.inner.Capabilities() }

func (p *prefixed) Close() error { return p.inner.Close() }
