// Package control is a namespace's control plane: small records under
// .silt/control/ ([index.ControlPrefix]) that bypass the index and every
// cache. Hosts keep their own bookkeeping there (run claims, for one), so
// a pull never downloads it and a push never commits it.
//
// A [Store] is opened on a namespace root, the same backend a syncer's
// index lives in; it needs no cache directory, so a bucket-wide service
// opens one without a Syncer. Every call is one request, or one per List
// page.
package control

import (
	"context"
	"fmt"
	"strings"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
)

// Store is the control-plane store of one namespace root.
type Store struct{ b backend.Backend }

// New returns the control-plane store of the namespace root b.
func New(b backend.Backend) *Store { return &Store{b: b} }

// maxRecord bounds one control record: they are bookkeeping, not data.
const maxRecord = 16 << 20

func recordKey(key string) (string, error) {
	if err := backend.ValidateKey(key); err != nil {
		return "", err
	}
	return index.ControlPrefix + key, nil
}

// Get returns the record's bytes, or an error matching backend.ErrNotExist.
func (c *Store) Get(ctx context.Context, key string) ([]byte, error) {
	k, err := recordKey(key)
	if err != nil {
		return nil, err
	}
	data, _, err := backend.ReadAll(ctx, c.b, k, backend.GetOptions{}, maxRecord)
	return data, err
}

// Put stores the record, replacing any other.
func (c *Store) Put(ctx context.Context, key string, data []byte) error {
	k, err := recordKey(key)
	if err != nil {
		return err
	}
	_, err = backend.PutBytes(ctx, c.b, k, data, backend.Cond{})
	return err
}

// PutIfAbsent stores the record only if none exists, and reports whether it
// did. It needs a store with atomic create-if-absent.
func (c *Store) PutIfAbsent(ctx context.Context, key string, data []byte) (bool, error) {
	k, err := recordKey(key)
	if err != nil {
		return false, err
	}
	if caps := c.b.Capabilities(); !caps.ConditionalPut && !caps.AtomicCreate {
		return false, fmt.Errorf("control: put-if-absent: %w", backend.ErrNotSupported)
	}
	_, err = backend.PutBytes(ctx, c.b, k, data, backend.Cond{IfAbsent: true})
	if backend.IsPrecondition(err) {
		return false, nil
	}
	return err == nil, err
}

// Delete removes the record; a missing record is not an error.
func (c *Store) Delete(ctx context.Context, key string) error {
	k, err := recordKey(key)
	if err != nil {
		return err
	}
	return c.b.Delete(ctx, k, backend.Cond{})
}

// List returns the keys that begin with prefix, sorted.
func (c *Store) List(ctx context.Context, prefix string) ([]string, error) {
	if err := backend.ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	var keys []string
	err := c.b.List(ctx, index.ControlPrefix+prefix, backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		for _, o := range page {
			keys = append(keys, strings.TrimPrefix(o.Key, index.ControlPrefix))
		}
		return nil
	})
	return keys, err
}
