// Package namespace is the bucket's namespace registry: one record per
// namespace under .silt/namespaces/ at the bucket root (FORMAT.md's
// layout), claimed once by create-if-absent so the first owner wins.
//
// [Validate] is the one rule for a namespace's name; the syncer calls it
// before it prefixes the bucket with a namespace, and hosts call it on
// what they are given.
package namespace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
)

// dir holds one registration per namespace, at the bucket root.
const dir = index.InternalDir + "/namespaces/"

// maxRecord bounds one registration: a few fields of JSON.
const maxRecord = 1 << 20

// ErrTaken is returned when a namespace is registered to another owner
// (repository id): the first registration wins.
var ErrTaken = errors.New("namespace is registered to another owner")

// Info is one namespace's registration.
type Info struct {
	Namespace    string    `json:"namespace"`
	Owner        string    `json:"owner"`
	RegisteredAt time.Time `json:"registered_at"`
}

// Validate checks a namespace name: one path segment of letters, digits,
// '-', '_' and '.', not starting with '.'. It fails with an
// [*index.PathError], so errors.Is(err, index.ErrInvalidPath) holds.
func Validate(ns string) error {
	if ns == "" || len(ns) > 128 || ns[0] == '.' {
		return &index.PathError{Path: ns, Reason: "not a valid namespace name"}
	}
	for _, r := range ns {
		ok := r == '-' || r == '_' || r == '.' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !ok {
			return &index.PathError{Path: ns, Reason: "namespace may hold only letters, digits, '-', '_' and '.'"}
		}
	}
	return nil
}

// Register claims ns for owner in the bucket b (not a namespace root) by
// create-if-absent. Registering again with the same owner is a no-op;
// another owner gets ErrTaken.
func Register(ctx context.Context, b backend.Backend, ns, owner string) error {
	if err := Validate(ns); err != nil {
		return err
	}
	if owner == "" {
		return errors.New("namespace: Register needs an owner")
	}
	data, _ := json.Marshal(Info{Namespace: ns, Owner: owner, RegisteredAt: time.Now().UTC()})
	key := dir + ns + ".json"
	_, err := backend.PutBytes(ctx, b, key, data, backend.Cond{IfAbsent: true})
	if !backend.IsPrecondition(err) {
		return err
	}
	cur, _, err := backend.ReadAll(ctx, b, key, backend.GetOptions{}, maxRecord)
	if err != nil {
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	var info Info
	if err := json.Unmarshal(cur, &info); err != nil {
		return &index.FormatError{Key: key, Reason: err.Error(), Err: index.ErrCorruptIndex}
	}
	if info.Owner != owner {
		return fmt.Errorf("%w: %s belongs to %q, not %q", ErrTaken, ns, info.Owner, owner)
	}
	return nil
}

// List returns the registered namespaces of bucket b, sorted. It lists
// only the registry, never the data.
func List(ctx context.Context, b backend.Backend) ([]Info, error) {
	var out []Info
	err := b.List(ctx, dir, backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		for _, o := range page {
			if !strings.HasSuffix(o.Key, ".json") {
				continue
			}
			data, _, err := backend.ReadAll(ctx, b, o.Key, backend.GetOptions{}, maxRecord)
			if backend.IsNotExist(err) {
				continue
			}
			if err != nil {
				return err
			}
			var info Info
			if err := json.Unmarshal(data, &info); err != nil {
				return &index.FormatError{Key: o.Key, Reason: err.Error(), Err: index.ErrCorruptIndex}
			}
			out = append(out, info)
		}
		return nil
	})
	return out, err
}
