package syncer

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

// namespacesDir holds one registration per namespace, at the bucket root.
const namespacesDir = InternalDir + "/namespaces/"

// ErrNamespaceTaken is returned when a namespace is registered to another
// owner (repository id): the first registration wins.
var ErrNamespaceTaken = errors.New("namespace is registered to another owner")

// NamespaceInfo is one namespace's registration.
type NamespaceInfo struct {
	Namespace    string    `json:"namespace"`
	Owner        string    `json:"owner"`
	RegisteredAt time.Time `json:"registered_at"`
}

// RegisterNamespace claims ns for owner in the bucket b (not a namespace
// root) by create-if-absent. Registering again with the same owner is a
// no-op; another owner gets ErrNamespaceTaken.
func RegisterNamespace(ctx context.Context, b backend.Backend, ns, owner string) error {
	if err := ValidateNamespace(ns); err != nil {
		return err
	}
	if owner == "" {
		return errors.New("syncer: RegisterNamespace needs an owner")
	}
	data, _ := json.Marshal(NamespaceInfo{Namespace: ns, Owner: owner, RegisteredAt: time.Now().UTC()})
	key := namespacesDir + ns + ".json"
	_, err := backend.PutBytes(ctx, b, key, data, backend.Cond{IfAbsent: true})
	if !backend.IsPrecondition(err) {
		return err
	}
	cur, _, err := backend.ReadAll(ctx, b, key, backend.GetOptions{}, 1<<20)
	if err != nil {
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	var info NamespaceInfo
	if err := json.Unmarshal(cur, &info); err != nil {
		return &index.FormatError{Key: key, Reason: err.Error(), Err: index.ErrCorruptIndex}
	}
	if info.Owner != owner {
		return fmt.Errorf("%w: %s belongs to %q, not %q", ErrNamespaceTaken, ns, info.Owner, owner)
	}
	return nil
}

// Namespaces lists the registered namespaces of bucket b, sorted. It lists
// only the registry, never the data.
func Namespaces(ctx context.Context, b backend.Backend) ([]NamespaceInfo, error) {
	var out []NamespaceInfo
	err := b.List(ctx, namespacesDir, backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		for _, o := range page {
			if !strings.HasSuffix(o.Key, ".json") {
				continue
			}
			data, _, err := backend.ReadAll(ctx, b, o.Key, backend.GetOptions{}, 1<<20)
			if backend.IsNotExist(err) {
				continue
			}
			if err != nil {
				return err
			}
			var info NamespaceInfo
			if err := json.Unmarshal(data, &info); err != nil {
				return &index.FormatError{Key: o.Key, Reason: err.Error(), Err: index.ErrCorruptIndex}
			}
			out = append(out, info)
		}
		return nil
	})
	return out, err
}
