package main

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
)

// noMatchError is a path argument that matches no file (a typo, most
// often): push --path with nothing under it locally or in the bucket,
// pull --scope or ls PREFIX with nothing committed under it. Exit 1.
type noMatchError struct {
	paths []string // as given to the library, slash paths in the cache
	where string   // "locally or in the bucket URL", "in the bucket URL"
	ls    string   // the arguments of the silt ls the hint suggests
}

func (e *noMatchError) Error() string {
	return fmt.Sprintf("no file under %s, %s", strings.Join(e.paths, ", "), e.where)
}

// hint is the hint of a noMatchError.
func (e *noMatchError) hint() string {
	return "check the path for a typo (inside a cache, paths are relative to the working directory); list what the bucket holds with: silt ls" + e.ls
}

// unmatchedPushPaths returns the push paths that match nothing: no local
// file at or under them and no committed one either. A path that is only
// committed is a deletion, not a typo. The bucket is read only for paths
// missing locally (none, most often); a cache whose bucket cannot be
// opened here is not checked.
func unmatchedPushPaths(ctx context.Context, bd *bound, paths []string) ([]string, error) {
	var missing []string
	for _, p := range paths {
		if _, err := os.Lstat(filepath.Join(bd.s.Root(), filepath.FromSlash(p))); errors.Is(err, iofs.ErrNotExist) {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 || bd.b == nil {
		return nil, nil
	}
	root, err := namespaceOf(bd.b, bd.cfg.Namespace)
	if err != nil {
		return nil, err
	}
	snap, err := index.OpenSnapshot(ctx, root)
	if backend.IsNotExist(err) {
		return missing, nil // an empty bucket: nothing is committed
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range missing {
		found, err := committedUnder(ctx, snap, p)
		if err != nil {
			return nil, err
		}
		if !found {
			out = append(out, p)
		}
	}
	return out, nil
}

// errFound stops a walk at its first entry.
var errFound = errors.New("found")

// committedUnder tells whether the snapshot holds a file at or under p.
func committedUnder(ctx context.Context, snap *index.Snapshot, p string) (bool, error) {
	if p == "." || p == "" {
		p = ""
	}
	err := snap.Walk(ctx, p, func(string, index.Entry) error { return errFound })
	if errors.Is(err, errFound) {
		return true, nil
	}
	return false, err
}
