// Package legacy is a frozen writer of the formats silt no longer writes
// (3; 4, the log of whole states; 5, the log of deltas with plain
// shards): what an older silt does to a bucket. It exists for tests only, so that migration, the model's
// older-silt peers and the crash sweep have old buckets and old writers
// to work against; no command, engine or server links it (.ci/run checks).
//
// It writes what FORMAT.md's appendix "Reading older formats" describes:
// in format 3 the history copy of the manifest being superseded, then the
// manifest by compare-and-swap; in format 4 the entry log/{seq} by
// create-if-absent, holding the whole state, and the hint every 16th seq;
// in format 5 the entry log/{seq} holding the delta from its predecessor
// (plain deltas only, no checkpoints past the genesis: FORMAT.md, "Reading
// older formats"). Every commit stores the index in one plain shard, which
// the formats allow.
package legacy

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/internal/backoff"
)

// hintEvery is how often a format-4 writer rewrote the hint.
const hintEvery = 16

// Push commits files onto b's current head as an older silt would: a
// path mapped to nil bytes is removed, any other is stored as an object
// and named by its entry. An empty bucket is created in format (3, 4 or
// 5); a bucket in another format it reads keeps its own. A bucket in a
// format newer than the writer read (4 for a writer of format 3 or 4, 5
// for one of 5) is refused with index.ErrNewerFormat, as an older silt
// refuses it. A race lost to another writer is retried on the new head, a few
// times. It returns the seq committed.
func Push(ctx context.Context, b backend.Backend, format int, files map[string][]byte) (uint64, error) {
	if format != index.FormatVersion && format != index.LogFormat && format != index.DeltaFormat {
		return 0, fmt.Errorf("legacy: format %d: want %d, %d or %d", format, index.FormatVersion, index.LogFormat, index.DeltaFormat)
	}
	var last error
	for range 20 {
		seq, err := pushOnce(ctx, b, format, files)
		if !backend.IsPrecondition(err) {
			return seq, err
		}
		last = err
		if err := backoff.Sleep(ctx, 5*time.Millisecond); err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("legacy: push: %w", last)
}

func pushOnce(ctx context.Context, b backend.Backend, format int, files map[string][]byte) (uint64, error) {
	head, err := index.ReadHead(ctx, b, nil)
	if err != nil {
		return 0, err
	}
	if head.Version == "" && format >= index.LogFormat {
		if err := createLog(ctx, b, format); err != nil {
			return 0, err
		}
		if head, err = index.ReadHead(ctx, b, nil); err != nil {
			return 0, err
		}
	}
	m := head.Manifest
	// A silt of format 3 or 4 read up to 4; one of format 5 up to 5.
	reads := max(format, index.LogFormat)
	if head.Version != "" && m.Format > reads && m.Seq != 0 {
		return 0, &index.FormatError{Key: index.ManifestKey, Reason: fmt.Sprintf("format %d, this (older) silt reads up to %d", m.Format, reads), Err: index.ErrNewerFormat}
	}
	entries := map[string]index.Entry{}
	for i := range m.Shards {
		e, err := index.ReadShard(ctx, b, m, i)
		if err != nil {
			return 0, err
		}
		maps.Copy(entries, e)
	}
	seq := m.Seq + 1
	for p, data := range files {
		if data == nil {
			delete(entries, p)
			continue
		}
		sum := sha256.Sum256(data)
		sha := hex.EncodeToString(sum[:])
		if _, err := backend.PutBytes(ctx, b, index.ObjectKey(sha), data, backend.Cond{IfAbsent: true, ContentNamed: true}); err != nil && !backend.IsPrecondition(err) {
			return 0, fmt.Errorf("legacy: object of %s: %w", p, err)
		}
		entries[p] = index.Entry{Size: int64(len(data)), SHA256: sha, Seq: seq}
	}
	shard, id := plainShard(entries)
	if _, err := backend.PutBytes(ctx, b, index.ShardKey(id), shard, backend.Cond{IfAbsent: true, ContentNamed: true}); err != nil && !backend.IsPrecondition(err) {
		return 0, fmt.Errorf("legacy: shard: %w", err)
	}
	next := &index.Manifest{Format: min(m.Format, reads), Seq: seq, Shards: []index.ShardRef{{Lo: "", ID: id, Count: len(entries), Bytes: int64(len(shard))}},
		Fences: m.Fences, ShardMaxEntries: m.ShardMaxEntries}
	if head.Version == "" {
		next.Format = index.FormatVersion
	}
	if len(next.Fences) == 0 {
		next.Fences = nil
	}
	switch {
	case next.Format < index.LogFormat:
		return seq, commit3(ctx, b, head, next)
	case next.Format == index.DeltaFormat:
		return seq, commit5(ctx, b, head, next)
	}
	return seq, commit4(ctx, b, head, next)
}

// plainShard is a shard as formats 3 to 5 store it: the JSON itself,
// salted, named by its hash.
func plainShard(entries map[string]index.Entry) ([]byte, string) {
	salt := make([]byte, 8)
	_, _ = rand.Read(salt)
	data, err := json.Marshal(struct {
		Format  int                    `json:"format"`
		Entries map[string]index.Entry `json:"entries"`
		Salt    string                 `json:"salt"`
	}{index.FormatVersion, entries, hex.EncodeToString(salt)})
	if err != nil {
		panic(err)
	}
	return data, index.ShardID(data)
}

// commit3 is a format-3 commit: the history copy of head, then next by
// compare-and-swap on head's version.
func commit3(ctx context.Context, b backend.Backend, head index.Head, next *index.Manifest) error {
	if err := index.WriteHistory(ctx, b, head); err != nil {
		return err
	}
	cond := backend.Cond{IfMatch: head.Version}
	if head.Version == "" {
		cond = backend.Cond{IfAbsent: true}
	}
	_, err := backend.PutBytes(ctx, b, index.ManifestKey, index.EncodeManifest(next), cond)
	return err
}

// commit4 is a format-4 commit: the entry of next's seq by
// create-if-absent, holding the whole state and the hash of head's.
func commit4(ctx context.Context, b backend.Backend, head index.Head, next *index.Manifest) error {
	if head.Manifest.Seq != 0 {
		sum := sha256.Sum256(head.Data)
		next.Prev = hex.EncodeToString(sum[:])
	}
	data := index.EncodeManifest(next)
	if _, err := backend.PutBytes(ctx, b, index.LogKey(next.Seq), data, backend.Cond{IfAbsent: true}); err != nil {
		return err
	}
	if next.Seq%hintEvery == 0 {
		_, _ = backend.PutBytes(ctx, b, index.ManifestKey, data, backend.Cond{})
	}
	return nil
}

// createLog makes b an empty bucket of format 4 or 5: the marker, then
// the genesis hint, both create-if-absent.
func createLog(ctx context.Context, b backend.Backend, format int) error {
	g := index.EncodeManifest(&index.Manifest{Format: format, Seq: 0, Shards: []index.ShardRef{}})
	if format == index.DeltaFormat {
		g = genesisRoot5()
	}
	if _, err := backend.PutBytes(ctx, b, index.HistoryKey(0), g, backend.Cond{IfAbsent: true, ContentNamed: true}); err != nil && !backend.IsPrecondition(err) {
		return fmt.Errorf("legacy: marker: %w", err)
	}
	if _, err := backend.PutBytes(ctx, b, index.ManifestKey, g, backend.Cond{IfAbsent: true}); err != nil && !backend.IsPrecondition(err) {
		return fmt.Errorf("legacy: genesis: %w", err)
	}
	return nil
}
