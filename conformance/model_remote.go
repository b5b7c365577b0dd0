package conformance

// This file is the model harness's only window on the committed remote
// index and on the one push option that does not exist yet. When the
// engine moves to format 2 (index.OpenSnapshot, content-addressed objects,
// a manifest history, PushOptions.Paths), only this file changes.

import (
	"context"
	"fmt"
	"io"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/serve"
	"github.com/siltsync/silt/syncer"
)

// format1 was the single switch between the format-1 engine (data at real
// paths, overwritten in place) and format 2. Format 2 has landed: every
// property holds and every regression test runs.
const format1 = false

// remoteEntry is one committed entry as the model sees it.
type remoteEntry struct {
	SHA256 string
	Size   int64
	Pack   string // where the bytes are: read through index.Open, never by key
	Off    int64
	Z      int64 // a framed member: its frame's length, plain length and place
	ZN     int64
	In     int64
}

// snapshotView is one committed snapshot: its sequence and its entries.
type snapshotView struct {
	Seq     uint64
	Entries map[string]remoteEntry
}

func viewOf(ctx context.Context, snap *index.Snapshot) (snapshotView, error) {
	v := snapshotView{Seq: snap.Seq(), Entries: map[string]remoteEntry{}}
	err := snap.Walk(ctx, "", func(p string, e index.Entry) error {
		v.Entries[p] = remoteEntry{SHA256: e.SHA256, Size: e.Size, Pack: e.Pack, Off: e.Off, Z: e.Z, ZN: e.ZN, In: e.In}
		return nil
	})
	return v, err
}

// readSnapshot reads the committed index of the namespace root b.
func readSnapshot(ctx context.Context, b backend.Backend) (snapshotView, error) {
	snap, err := index.OpenSnapshot(ctx, b)
	if err != nil {
		return snapshotView{}, err
	}
	return viewOf(ctx, snap)
}

// readEntry returns the bytes a committed entry names, and an error when
// they are gone or do not match its sha256: the readability property.
func readEntry(ctx context.Context, b backend.Backend, p string, e remoteEntry) ([]byte, error) {
	rc, err := index.Open(ctx, b, p, index.Entry{SHA256: e.SHA256, Size: e.Size, Pack: e.Pack, Off: e.Off, Z: e.Z, ZN: e.ZN, In: e.In})
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != e.Size {
		return nil, fmt.Errorf("%s: %d bytes, the entry says %d", p, len(data), e.Size)
	}
	return data, nil
}

// readSnapshotAt reads the committed snapshot of an older sequence from
// the manifest history.
func readSnapshotAt(ctx context.Context, b backend.Backend, seq uint64) (snapshotView, error) {
	if seq == 0 {
		return snapshotView{Entries: map[string]remoteEntry{}}, nil // the empty bucket: nothing committed
	}
	snap, err := index.OpenSnapshotAt(ctx, b, seq)
	if err != nil {
		return snapshotView{}, err
	}
	return viewOf(ctx, snap)
}

// checkIndexStructure runs the engine's own structural check of the index
// (shards exist, hash, ranges, counts), without data.
func checkIndexStructure(ctx context.Context, b backend.Backend) error {
	snap, err := index.OpenSnapshot(ctx, b)
	if err != nil {
		return err
	}
	_, err = snap.Check(ctx, false)
	return err
}

// pushPaths pushes only the given paths.
func pushPaths(ctx context.Context, s serve.Cache, paths []string) (syncer.Stats, error) {
	return s.Push(ctx, syncer.PushOptions{Paths: paths})
}

// pathsPushCovers returns the marks a successful pushPaths(paths) settles:
// those at or under the paths, and the paths themselves.
func pathsPushCovers(marks map[string]bool, paths []string) map[string]bool {
	out := map[string]bool{}
	for m := range marks {
		for _, p := range paths {
			if index.Under(m, p) {
				out[m] = true
			}
		}
	}
	for _, p := range paths {
		out[p] = true
	}
	return out
}

// pathsPushMarks returns the marks a pushPaths(paths) call adds before it
// runs: none, since PushOptions.Paths acts as a mark for that push only.
func pathsPushMarks(paths []string) []string { return nil }
