package conformance

// This file is the model harness's only window on the committed remote
// index and on the one push option that does not exist yet. When the
// engine moves to format 2 (index.OpenSnapshot, content-addressed objects,
// a manifest history, PushOptions.Paths), only this file changes.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/syncer"
)

// format1 is the single switch between today's engine (format 1: data at
// real paths, overwritten in place) and format 2. It turns off the model
// properties that cannot hold before format 2 (see failsOnFormat1) and
// skips the regression tests of the failures format 2 fixes. Flip it to
// false once format 2 lands.
const format1 = true

// remoteEntry is one committed entry as the model sees it.
type remoteEntry struct {
	SHA256  string
	Size    int64
	Version backend.Version
}

// snapshotView is one committed snapshot: its sequence and its entries.
type snapshotView struct {
	Seq     uint64
	Entries map[string]remoteEntry
}

// readSnapshot reads the committed index of the namespace root b.
func readSnapshot(ctx context.Context, b backend.Backend) (snapshotView, error) {
	snap, err := syncer.OpenSnapshot(ctx, b)
	if err != nil {
		return snapshotView{}, err
	}
	v := snapshotView{Seq: snap.Manifest().Seq, Entries: map[string]remoteEntry{}}
	err = snap.Walk(ctx, "", func(p string, e syncer.Entry) error {
		v.Entries[p] = remoteEntry{SHA256: e.SHA256, Size: e.Size, Version: e.Version}
		return nil
	})
	return v, err
}

// readEntry returns the bytes a committed entry names, and an error when
// they are gone or do not match its sha256: the readability property.
func readEntry(ctx context.Context, b backend.Backend, p string, e remoteEntry) ([]byte, error) {
	rc, _, err := b.Get(ctx, p, backend.GetOptions{IfMatch: e.Version})
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != e.SHA256 || int64(len(data)) != e.Size {
		return nil, fmt.Errorf("%s: bytes do not match the entry's sha256/size", p)
	}
	return data, nil
}

// errNoHistory is returned by readSnapshotAt while the format keeps no
// manifest history (format 1).
var errNoHistory = errors.New("this format keeps no readable manifest history")

// readSnapshotAt reads the committed snapshot of an older sequence.
// Format 1 keeps none; format 2 reads .silt/manifests/{seq}.json.
func readSnapshotAt(ctx context.Context, b backend.Backend, seq uint64) (snapshotView, error) {
	_ = ctx
	_ = b
	_ = seq
	return snapshotView{}, errNoHistory
}

// checkIndexStructure runs the engine's own structural check of the index
// (shards exist, hash, ranges, counts), without data.
func checkIndexStructure(ctx context.Context, b backend.Backend) error {
	snap, err := syncer.OpenSnapshot(ctx, b)
	if err != nil {
		return err
	}
	return snap.Check(ctx, false)
}

// pushPaths pushes only the given paths. PushOptions.Paths does not exist
// yet, so for now it marks them and pushes the whole dirty set; format 2
// replaces the body with Push(ctx, PushOptions{Paths: paths}).
func pushPaths(ctx context.Context, s *syncer.Syncer, paths []string) (syncer.Stats, error) {
	for _, p := range paths {
		if err := s.MarkDirty(p); err != nil {
			return syncer.Stats{Op: "push"}, err
		}
	}
	return s.Push(ctx, syncer.PushOptions{})
}

// pathsPushCovers returns the marks a pushPaths(paths) push settles, given
// every mark pending: with the format-1 body above, all of them; with
// PushOptions.Paths, only those under paths.
func pathsPushCovers(marks map[string]bool, paths []string) map[string]bool {
	out := map[string]bool{}
	for m := range marks {
		out[m] = true
	}
	for _, p := range paths {
		out[p] = true
	}
	return out
}

// pathsPushMarks returns the marks a pushPaths(paths) call leaves pending
// when it fails: with the format-1 body, the paths it marked.
func pathsPushMarks(paths []string) []string { return paths }
