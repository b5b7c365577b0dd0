package backend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
)

// PutBytes stores data under key, subject to cond.
func PutBytes(ctx context.Context, b Backend, key string, data []byte, cond Cond) (ObjectInfo, error) {
	return b.Put(ctx, key, bytes.NewReader(data), int64(len(data)), cond)
}

// ReadAll reads a whole object with its version. maxSize > 0 bounds the
// bytes read; a larger object is an error rather than an allocation the
// caller did not expect.
func ReadAll(ctx context.Context, b Backend, key string, opts GetOptions, maxSize int64) ([]byte, ObjectInfo, error) {
	rc, info, err := b.Get(ctx, key, opts)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	defer rc.Close()
	r := io.Reader(rc)
	if maxSize > 0 {
		r = io.LimitReader(rc, maxSize+1)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, ObjectInfo{}, fmt.Errorf("read %q: %w", key, err)
	}
	if maxSize > 0 && int64(len(data)) > maxSize {
		return nil, ObjectInfo{}, Permanent("get", key, fmt.Errorf("object larger than %d bytes", maxSize))
	}
	return data, info, nil
}

// Exists reports whether key exists.
func Exists(ctx context.Context, b Backend, key string) (bool, error) {
	_, err := b.Stat(ctx, key)
	switch {
	case err == nil:
		return true, nil
	case IsNotExist(err):
		return false, nil
	}
	return false, err
}

// IsNotExist reports whether err means the key does not exist.
func IsNotExist(err error) bool { return errors.Is(err, ErrNotExist) }

// IsPrecondition reports whether err is a failed precondition.
func IsPrecondition(err error) bool { return errors.Is(err, ErrPrecondition) }

// Base returns the driver under any wrappers and the portable layer, for
// naming its type; a consumer never calls it, since a Driver is no Backend.
func Base(b Backend) Driver {
	var d Driver = b
	for {
		next, ok := under(d)
		if !ok {
			return d
		}
		d = next
	}
}

// RemovePrefix deletes every object under prefix: it lists them all, then
// deletes each, so a listing is never paged while its keys go away. It
// stops at the first failed delete and returns it.
func RemovePrefix(ctx context.Context, b Backend, prefix string) error {
	var keys []string
	err := b.List(ctx, prefix, ListOptions{}, func(page []ObjectInfo) error {
		for _, o := range page {
			keys = append(keys, o.Key)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := b.Delete(ctx, k, Cond{}); err != nil {
			return err
		}
	}
	return nil
}
