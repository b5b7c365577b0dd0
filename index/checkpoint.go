package index

// Checkpoints (FORMAT.md, "Checkpoints"). A checkpoint of seq C is the whole state of C, paged: a
// root (.silt/checkpoints/{C}.json, created once) naming immutable pages
// of shard references (.silt/pages/{id}.json, named by their hash) in key
// order. Page boundaries are chosen by the keys themselves (a hash of a
// shard's Lo), so a change to one shard changes one page and the next
// checkpoint writes that page and the root, naming the others again. The
// hint (manifest.json) is a copy of a root. Everything that reads a
// checkpoint checks the state it makes against the root's hash of it, and
// a checkpoint that does not read (a page gone, bytes that lie) is only
// skipped: the log above an older one still gives the head.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/siltsync/silt/backend"
)

const (
	// DefaultCheckpointEvery: a writer that commits a seq that is a
	// multiple of it writes a checkpoint of that seq (and points the hint
	// at it), unless configured otherwise (CommitOptions.CheckpointEvery).
	DefaultCheckpointEvery = 64
	// pageTarget is the mean page length in shard references; pageMax
	// the most a page holds whatever its keys.
	pageTarget = 64
	pageMax    = 4 * pageTarget
	// pageReads bounds the pages one checkpoint read fetches at once.
	pageReads = 8
	// MaxPageBytes bounds one page read.
	MaxPageBytes = 4 << 20
	// jumpAfter5 is how many deltas a reader reads forward before it
	// looks at the hint's checkpoint to skip ahead.
	jumpAfter5 = 4 * DefaultCheckpointEvery
)

// CheckpointKey names the checkpoint root of seq.
func CheckpointKey(seq uint64) string {
	return fmt.Sprintf("%s%0*d%s", CheckpointsPrefix, historySeqWidth, seq, historySuffix)
}

// ParseCheckpointKey returns the seq a checkpoint key names.
func ParseCheckpointKey(key string) (uint64, bool) { return parseSeqKey(CheckpointsPrefix, key) }

// PageKey names the checkpoint page with this id.
func PageKey(id string) string { return PagesPrefix + id + ".json" }

// PageRef is a root's pointer to one page: the page's first Lo, its id
// and how many shard references it holds.
type PageRef struct {
	Lo string `json:"lo"`
	ID string `json:"id"`
	N  int    `json:"n"`
}

// checkpointRoot is a checkpoint's root, and the hint's bytes.
type checkpointRoot struct {
	Format          int               `json:"format"`
	Seq             uint64            `json:"seq"`
	Prev            string            `json:"prev,omitempty"`
	State           string            `json:"state"`
	Fences          map[string]uint64 `json:"fences,omitempty"`
	ShardMaxEntries int               `json:"shard_max_entries,omitempty"`
	ShardMaxBytes   int               `json:"shard_max_bytes,omitempty"`
	Pages           []PageRef         `json:"pages"`
}

type pageFile struct {
	Format int        `json:"format"`
	Refs   []ShardRef `json:"refs"`
}

// pageCut reports whether a page boundary falls before the shard at lo.
func pageCut(lo string) bool {
	h := fnv.New32a()
	h.Write([]byte(lo))
	return h.Sum32()%pageTarget == 0
}

// paginate cuts shards into pages of a state in format, returning each
// page's stored bytes (a frame from FrameFormat on) and ref, which names
// the page by the hash of its plain bytes.
func paginate(format int, shards []ShardRef) ([][]byte, []PageRef) {
	var datas [][]byte
	refs := []PageRef{}
	for start := 0; start < len(shards); {
		end := start + 1
		for end < len(shards) && end-start < pageMax && !pageCut(shards[end].Lo) {
			end++
		}
		data, err := json.Marshal(pageFile{Format: format, Refs: shards[start:end]})
		if err != nil {
			panic(err)
		}
		datas = append(datas, storeIndexObject(format, data))
		refs = append(refs, PageRef{Lo: shards[start].Lo, ID: ShardID(data), N: end - start})
		start = end
	}
	return datas, refs
}

// rootOf returns the root of the checkpoint of state h, with its pages.
func rootOf(h Head) (*checkpointRoot, [][]byte) {
	m := h.Manifest
	datas, refs := paginate(m.Format, m.Shards)
	return &checkpointRoot{Format: m.Format, Seq: m.Seq, Prev: m.Prev, State: hashHex(h.Data), Fences: m.Fences, ShardMaxEntries: m.ShardMaxEntries, ShardMaxBytes: m.ShardMaxBytes, Pages: refs}, datas
}

func encodeRoot(r *checkpointRoot) []byte {
	data, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return data
}

// genesisDelta is the hint and marker a bucket of the log of deltas in
// format is created with: the root of the empty state of seq 0.
func genesisDelta(format int) (root []byte, state Head) {
	m := &Manifest{Format: format, Seq: genesisSeq, Shards: []ShardRef{}}
	data := EncodeManifest(m)
	h := Head{Manifest: m, Data: data, carry: rolled(genesisSeq)}
	r, _ := rootOf(h)
	return encodeRoot(r), h
}

// isRoot reports whether bytes read as a hint, a marker or a checkpoint
// are a DeltaFormat root.
func isRoot(data []byte) bool {
	return isDeltaLog(entryFormat(data)) && bytes.Contains(data, []byte(`"pages"`))
}

// decodeRoot decodes and checks root bytes read from key.
func decodeRoot(key string, data []byte) (*checkpointRoot, error) {
	var r checkpointRoot
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, corrupt(key, "%v", err)
	}
	if err := checkFormat(key, r.Format); err != nil {
		return nil, err
	}
	if !isDeltaLog(r.Format) || !ValidSHA256(r.State) || r.Pages == nil {
		return nil, corrupt(key, "not a checkpoint root")
	}
	for i, p := range r.Pages {
		if !validID(p.ID) || p.N <= 0 || p.N > pageMax || (i == 0) != (p.Lo == "") || i > 0 && p.Lo <= r.Pages[i-1].Lo {
			return nil, corrupt(key, "page %d: bad reference", i)
		}
	}
	return &r, nil
}

// loadRoot reads the pages of root r (read from key) and returns the state
// it names, checked against the root's hash of it.
func loadRoot(ctx context.Context, b backend.Backend, key string, r *checkpointRoot, info backend.ObjectInfo) (Head, error) {
	parts := make([][]ShardRef, len(r.Pages))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(pageReads)
	for i, p := range r.Pages {
		g.Go(func() error {
			pk := PageKey(p.ID)
			data, _, err := readBounded(gctx, b, pk, backend.GetOptions{}, MaxPageBytes)
			if err != nil {
				return fmt.Errorf("read checkpoint page: %w", err)
			}
			if data, err = openIndexObject(pk, data, MaxPageBytes); err != nil {
				return err
			}
			if ShardID(data) != p.ID {
				return corrupt(pk, "content hash does not match its name")
			}
			var f pageFile
			if err := json.Unmarshal(data, &f); err != nil {
				return corrupt(pk, "%v", err)
			}
			if f.Format != r.Format || len(f.Refs) != p.N || f.Refs[0].Lo != p.Lo {
				return corrupt(pk, "does not hold what root %s names", key)
			}
			parts[i] = f.Refs
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return Head{}, err
	}
	m := &Manifest{Format: r.Format, Seq: r.Seq, Prev: r.Prev, Fences: r.Fences, ShardMaxEntries: r.ShardMaxEntries, ShardMaxBytes: r.ShardMaxBytes, Shards: slices.Concat(parts...)}
	if m.Shards == nil {
		m.Shards = []ShardRef{}
	}
	if len(m.Fences) == 0 {
		m.Fences = nil
	}
	if err := checkState(key, m); err != nil {
		return Head{}, err
	}
	data := EncodeManifest(m)
	if hashHex(data) != r.State {
		return Head{}, corrupt(key, "its pages make another state than the one it names")
	}
	return Head{Manifest: m, Data: data, Version: logVersion(m.Seq, time.Time{}), Info: info, carry: rolled(m.Seq)}, nil
}

// readCheckpoint reads the checkpoint of seq; ok is false when its root is
// absent.
func readCheckpoint(ctx context.Context, b backend.Backend, seq uint64) (h Head, ok bool, err error) {
	key := CheckpointKey(seq)
	data, info, err := readBounded(ctx, b, key, backend.GetOptions{}, MaxManifestBytes)
	if backend.IsNotExist(err) {
		return Head{}, false, nil
	}
	if err != nil {
		return Head{}, false, fmt.Errorf("read checkpoint %d: %w", seq, err)
	}
	r, err := decodeRoot(key, data)
	if err != nil {
		return Head{}, false, err
	}
	if r.Seq != seq {
		return Head{}, false, corrupt(key, "holds seq %d", r.Seq)
	}
	h, err = loadRoot(ctx, b, key, r, info)
	return h, err == nil, err
}

// writeCheckpoint writes the checkpoint of the DeltaFormat head h: the
// pages not among known (ids of pages a root this writer read names), then
// the root, created once. It returns the root and its bytes.
func writeCheckpoint(ctx context.Context, b backend.Backend, h Head, known map[string]bool) (*checkpointRoot, []byte, error) {
	r, datas := rootOf(h)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(pageReads)
	for i, p := range r.Pages {
		if known[p.ID] {
			continue
		}
		g.Go(func() error {
			// A plain write, named by content: a page this writer did not
			// see named is written again, so its age is this write's.
			_, err := backend.PutBytes(gctx, b, PageKey(p.ID), datas[i], backend.Cond{ContentNamed: true})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, fmt.Errorf("write checkpoint %d: %w", h.Manifest.Seq, err)
	}
	data := encodeRoot(r)
	if _, err := backend.PutBytes(ctx, b, CheckpointKey(r.Seq), data, backend.Cond{IfAbsent: true, ContentNamed: true}); err != nil && !backend.IsPrecondition(err) {
		return nil, nil, fmt.Errorf("write checkpoint %d: %w", h.Manifest.Seq, err)
	}
	return r, data, nil
}

// rootPages returns the page ids the root bytes data names (none when
// they are no root).
func rootPages(data []byte) map[string]bool {
	ids := map[string]bool{}
	if r, err := decodeRoot(ManifestKey, data); err == nil {
		for _, p := range r.Pages {
			ids[p.ID] = true
		}
	}
	return ids
}

// checkpointAfter writes the checkpoint of h, a DeltaFormat head this
// writer committed, and points the hint at it. Best effort: a reader never
// needs a checkpoint to be current, and gc deletes no log entry a
// checkpoint that reads does not hold.
func checkpointAfter(ctx context.Context, b backend.Backend, h Head, start time.Time, now func() time.Time) {
	hint, _, err := readBounded(ctx, b, ManifestKey, backend.GetOptions{}, MaxManifestBytes)
	known := map[string]bool{}
	if err == nil {
		known = rootPages(hint)
	}
	_, root, err := writeCheckpoint(ctx, b, h, known)
	// Pages this writer took as written are only as safe as the root that
	// named them when it read it: past LogTrust it does not point the
	// hint at what it wrote (readers check, and skip it if it does not
	// read).
	if err != nil || now().Sub(start) >= LogTrust {
		return
	}
	_, _ = backend.PutBytes(backend.SendOnce(ctx), b, ManifestKey, root, backend.Cond{})
}

// listCheckpoints lists the seqs of the checkpoint roots, ascending.
func listCheckpoints(ctx context.Context, b backend.Backend) ([]uint64, map[uint64]backend.ObjectInfo, error) {
	roots, err := listAll(ctx, b, CheckpointsPrefix)
	if err != nil {
		return nil, nil, err
	}
	at := map[uint64]backend.ObjectInfo{}
	var seqs []uint64
	for _, o := range roots {
		if seq, ok := ParseCheckpointKey(o.Key); ok {
			at[seq] = o
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	return seqs, at, nil
}

// unreadable reports whether err says a checkpoint does not read (a page
// gone, bytes that do not check), as opposed to a failed request.
func unreadable(err error) bool {
	return backend.IsNotExist(err) || errors.Is(err, ErrCorruptIndex)
}
