package index

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/seal"
)

// Head is one manifest as read, with the version and bytes of that same
// response.
type Head struct {
	Manifest *Manifest
	Data     []byte          // the manifest's bytes; nil for an empty bucket
	Version  backend.Version // "" when no manifest exists yet
	Info     backend.ObjectInfo
	// sum, in a DeltaFormat head whose state does not read (Data nil),
	// is the hash of that state its entry names: recover commits a reset
	// on it.
	sum string
	// carry, in a DeltaFormat head, is what the next entry needs to be
	// cumulative (cumulative.go); nil: the next entry is a plain delta.
	carry *carry
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
	if seal.IsSealed(data) {
		return nil, info, &FormatError{Key: key, Reason: "sealed", Err: ErrEncrypted}
	}
	return data, info, nil
}

// ReadManifest reads the current manifest of the namespace root b. A
// missing manifest is the empty index of a fresh bucket only while no
// history copy exists: once one does, commits were made, and a missing
// (or, on file://, non-regular) manifest is a *ManifestMissingError
// matching ErrManifestMissing, never "empty". That costs one List of the
// history prefix, sent only when the manifest is absent. Anything
// unreadable is an error too. With opts.IfNoneMatch set, an unchanged
// manifest is backend.ErrNotModified.
//
// In a LogFormat bucket the manifest is a hint: the head is found by
// reading the log forward from it (FORMAT.md, "Reading older formats", "Format 4"), and
// opts.IfNoneMatch may be the version of a log head read earlier.
func ReadManifest(ctx context.Context, b backend.Backend, opts backend.GetOptions) (Head, error) {
	if seq, _, ok := parseLogVersion(opts.IfNoneMatch); ok {
		known := Head{Manifest: &Manifest{Format: LogFormat, Seq: seq}, Version: opts.IfNoneMatch}
		return ReadHeadSince(ctx, b, known, time.Now)
	}
	return readHead(ctx, b, opts, time.Now)
}

func readHead(ctx context.Context, b backend.Backend, opts backend.GetOptions, now func() time.Time) (Head, error) {
	data, info, err := readBounded(ctx, b, ManifestKey, opts, MaxManifestBytes)
	if backend.IsNotExist(err) {
		var me *ManifestMissingError
		switch herr := checkNoHistory(ctx, b); {
		case herr == nil:
			return Head{Manifest: Empty()}, nil
		case errors.Is(herr, errLogMarker):
			h, _, err := resolveByList(ctx, b, now)
			return h, err
		case !errors.As(herr, &me):
			return Head{}, herr
		}
		// The history may be younger than our read of the manifest: the
		// bucket's first commits can land between the two (F28). A
		// manifest that is there now was never missing.
		if data, info, err = readBounded(ctx, b, ManifestKey, opts, MaxManifestBytes); backend.IsNotExist(err) {
			return Head{}, me
		}
	}
	if err != nil {
		return Head{}, fmt.Errorf("read manifest: %w", err)
	}
	if isRoot(data) {
		// A DeltaFormat hint: a checkpoint's root. One that does not read
		// (a page gone, bytes that lie) is only a lost hint.
		h, err := decodeHint(ctx, b, data, info)
		if unreadable(err) {
			h, _, err = resolveByList(ctx, b, now)
			return h, err
		}
		if err != nil {
			return Head{}, err
		}
		if isDeltaLog(h.Manifest.Format) {
			j, done, err := jumpCold(ctx, b, h, now)
			if err != nil || done {
				return j, err
			}
			h = j
		}
		h, _, err = walkLog(ctx, b, h, now)
		return h, err
	}
	m, err := DecodeManifest(ManifestKey, data)
	if errors.Is(err, ErrCorruptIndex) {
		// In a log bucket a damaged hint is only a lost hint.
		if log, lerr := isLogMarker(ctx, b); lerr == nil && log {
			h, _, err := resolveByList(ctx, b, now)
			return h, err
		}
	}
	if err != nil {
		return Head{}, err
	}
	if m.Format >= LogFormat {
		h, _, err := walkLog(ctx, b, Head{Manifest: m, Data: data, Version: logVersion(m.Seq, time.Time{}), Info: info}, now)
		return h, err
	}
	return Head{Manifest: m, Data: data, Version: info.Version, Info: info}, nil
}

// errLogMarker is checkNoHistory's answer when the history holds only the
// marker of a LogFormat bucket: its hint is gone, its log is not.
var errLogMarker = errors.New("log bucket")

// ErrManifestMissing is returned (wrapped in a *ManifestMissingError) when
// the manifest is absent but history copies prove that commits were made:
// a deleted key, a lifecycle rule, a partial restore. Nothing is read as
// empty and nothing is written; `silt recover` (Recover) re-commits the
// newest readable snapshot.
var ErrManifestMissing = errors.New("remote manifest is missing but the bucket holds its history")

// ManifestMissingError says what was found instead of the manifest.
type ManifestMissingError struct {
	History int    // history copies found
	Newest  uint64 // the newest history copy's seq
}

func (e *ManifestMissingError) Error() string {
	return fmt.Sprintf("%s: %d history copies, newest seq %d; run silt recover: %v", ManifestKey, e.History, e.Newest, ErrManifestMissing)
}

// Unwrap returns ErrManifestMissing.
func (e *ManifestMissingError) Unwrap() error { return ErrManifestMissing }

// errFound stops a listing at its first history copy.
var errFound = errors.New("found")

// checkNoHistory returns a *ManifestMissingError when any history copy
// exists. The common answer (a fresh bucket) costs one List page of one
// key; only a bucket that holds history is listed whole, to name it.
func checkNoHistory(ctx context.Context, b backend.Backend) error {
	err := b.List(ctx, HistoryPrefix, backend.ListOptions{PageSize: 1}, func(page []backend.ObjectInfo) error {
		for _, o := range page {
			if seq, ok := ParseHistoryKey(o.Key); ok {
				if seq == genesisSeq {
					return errLogMarker
				}
				return errFound
			}
		}
		return nil
	})
	if err == nil {
		return nil
	}
	if errors.Is(err, errLogMarker) {
		return err
	}
	if !errors.Is(err, errFound) {
		return fmt.Errorf("read manifest: it is absent, and listing its history failed: %w", err)
	}
	seqs, err := historySeqs(ctx, b)
	if err != nil {
		return fmt.Errorf("read manifest: %w", err)
	}
	me := &ManifestMissingError{History: len(seqs)}
	if len(seqs) > 0 {
		me.Newest = seqs[len(seqs)-1]
	}
	return me
}

// historySeqs lists the seqs of every history copy, ascending; keys under
// the history prefix that are not history copies are skipped.
func historySeqs(ctx context.Context, b backend.Backend) ([]uint64, error) {
	var seqs []uint64
	err := b.List(ctx, HistoryPrefix, backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		for _, o := range page {
			if seq, ok := ParseHistoryKey(o.Key); ok {
				seqs = append(seqs, seq)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list manifest history: %w", err)
	}
	slices.Sort(seqs)
	return seqs, nil
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
