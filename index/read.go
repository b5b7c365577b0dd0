package index

import (
	"context"
	"fmt"
	"io"

	"github.com/siltsync/silt/backend"
)

// Head is one manifest as read, with the version and bytes of that same
// response.
type Head struct {
	Manifest *Manifest
	Data     []byte          // the manifest's bytes; nil for an empty bucket
	Version  backend.Version // "" when no manifest exists yet
	Info     backend.ObjectInfo
}

// readBounded reads at most bound bytes of key; a larger object is refused
// with ErrIndexTooLarge, naming its size, without reading past the bound.
func readBounded(ctx context.Context, b backend.Backend, key string, opts backend.GetOptions, bound int64) ([]byte, backend.ObjectInfo, error) {
	rc, info, err := b.Get(ctx, key, opts)
	if err != nil {
		return nil, info, err
	}
	defer rc.Close()
	if info.Size > bound {
		return nil, info, &FormatError{Key: key, Reason: fmt.Sprintf("%d bytes, bound %d", info.Size, bound), Err: ErrIndexTooLarge}
	}
	data, err := io.ReadAll(io.LimitReader(rc, bound+1))
	if err != nil {
		return nil, info, fmt.Errorf("read %s: %w", key, err)
	}
	if int64(len(data)) > bound {
		return nil, info, &FormatError{Key: key, Reason: fmt.Sprintf("more than %d bytes", bound), Err: ErrIndexTooLarge}
	}
	return data, info, nil
}

// ReadManifest reads the current manifest of the namespace root b. A missing
// manifest is the empty index of a fresh bucket; anything unreadable is an
// error, never "empty". With opts.IfNoneMatch set, an unchanged manifest
// is backend.ErrNotModified.
func ReadManifest(ctx context.Context, b backend.Backend, opts backend.GetOptions) (Head, error) {
	data, info, err := readBounded(ctx, b, ManifestKey, opts, MaxManifestBytes)
	if backend.IsNotExist(err) {
		return Head{Manifest: Empty()}, nil
	}
	if err != nil {
		return Head{}, fmt.Errorf("read manifest: %w", err)
	}
	m, err := DecodeManifest(ManifestKey, data)
	if err != nil {
		return Head{}, err
	}
	return Head{Manifest: m, Data: data, Version: info.Version, Info: info}, nil
}

// ReadHistory reads the history copy of the manifest at seq.
func ReadHistory(ctx context.Context, b backend.Backend, seq uint64) (Head, error) {
	key := HistoryKey(seq)
	data, info, err := readBounded(ctx, b, key, backend.GetOptions{}, MaxManifestBytes)
	if err != nil {
		return Head{}, fmt.Errorf("read manifest history: %w", err)
	}
	m, err := DecodeManifest(key, data)
	if err != nil {
		return Head{}, err
	}
	if m.Seq != seq {
		return Head{}, corrupt(key, "holds seq %d", m.Seq)
	}
	return Head{Manifest: m, Data: data, Version: info.Version, Info: info}, nil
}

// ReadShardBytes fetches the bytes of shard i of m and decodes them; the
// bytes are returned so callers may cache them (shards are immutable).
func ReadShardBytes(ctx context.Context, b backend.Backend, m *Manifest, i int) (map[string]Entry, []byte, error) {
	id := m.Shards[i].ID
	data, _, err := readBounded(ctx, b, ShardKey(id), backend.GetOptions{}, MaxShardBytes)
	if backend.IsNotExist(err) {
		return nil, nil, corrupt(ShardKey(id), "listed in the manifest but missing")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read shard %s: %w", id, err)
	}
	entries, err := DecodeShard(id, m.Range(i), data)
	return entries, data, err
}

// ReadShard fetches and decodes shard i of m.
func ReadShard(ctx context.Context, b backend.Backend, m *Manifest, i int) (map[string]Entry, error) {
	e, _, err := ReadShardBytes(ctx, b, m, i)
	return e, err
}
