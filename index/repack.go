package index

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/siltsync/silt/backend"
)

// Repacking bounds.
const (
	// DefaultRepackBelow is the live share (live bytes / pack bytes) under
	// which GC rewrites a pack's live members into new packs.
	DefaultRepackBelow = 0.5
	// RepackPackBytes bounds the packs a repack writes.
	RepackPackBytes = 16 << 20
	// maxPackRead bounds the bytes of one pack a repack reads.
	maxPackRead = 256 << 20
	// repackAttempts bounds the manifest writes of one repack (see
	// Commit); past them it gives up for this round (a later GC tries
	// again).
	repackAttempts = 5
)

// RepackReport is what a repack did.
type RepackReport struct {
	// Packs are the packs whose live members were rewritten; they are
	// garbage once no snapshot within the grace period references them.
	Packs []GCObject `json:"packs"`
	// Written counts the new packs.
	Written int `json:"written"`
	// Entries counts the entries re-pointed.
	Entries int `json:"entries"`
	// Seq is the manifest the repack committed (0: none).
	Seq uint64 `json:"seq,omitempty"`
	// GaveUp, when set, says why this round committed nothing although it
	// had packs to repack (every attempt lost its race): a later GC tries
	// again.
	GaveUp string `json:"gave_up,omitempty"`
}

type spot struct {
	pack string
	at   PackPlace // Z, ZN and In 0 for an unframed member
}

// spotOf is the member e names.
func spotOf(e Entry) spot {
	return spot{e.Pack, PackPlace{Off: e.Off, Z: e.Z, ZN: e.ZN, In: e.In}}
}

// Repack rewrites the live members of every pack of the current snapshot
// whose live share is under below into new packs, and re-points the entries
// through Commit, the engine's commit (history copy, new shards,
// compare-and-swap of the manifest, read-back of an unknown outcome,
// backoff within the store's per-key mutation limit). Each member's bytes
// are verified against its entry's sha256 before they are copied. On a
// lost race Commit re-reads and the repack is redone on the new base, a
// bounded number of times, then it gives up this round (GaveUp): no entry
// is ever lost, and the old packs stay until GC sweeps them past the grace
// period. Stores without compare-and-swap are not repacked.
func Repack(ctx context.Context, b backend.Backend, below float64) (RepackReport, error) {
	return repack(ctx, b, below, time.Now)
}

func repack(ctx context.Context, b backend.Backend, below float64, now func() time.Time) (RepackReport, error) {
	var rep RepackReport
	if !b.Capabilities().ConditionalPut || below <= 0 {
		return rep, nil
	}
	sizes := map[string]backend.ObjectInfo{}
	err := b.List(ctx, PacksPrefix, backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		for _, o := range page {
			sizes[o.Key] = o
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("repack: list: %w", err)
	}
	head, err := readHead(ctx, b, backend.GetOptions{}, now)
	if err != nil {
		return rep, fmt.Errorf("repack: %w", err)
	}
	if head.Version == "" || Writable(head) != nil {
		// Nothing committed (or the manifest is lost): no pack is live,
		// and a commit here would create the bucket. Or a bucket of an
		// older format, which this silt does not write: gc collects it
		// but does not repack it.
		return rep, nil
	}
	build := func(ctx context.Context, head Head) (Proposal, error) {
		rep = RepackReport{}
		return repackOnce(ctx, b, head, below, sizes, &rep)
	}
	res, err := Commit(ctx, b, head, build, CommitOptions{Attempts: repackAttempts, Now: now})
	switch {
	case errors.Is(err, ErrCommitContention):
		// Lost every race: nothing is lost, a later GC tries again.
		return RepackReport{GaveUp: err.Error()}, nil
	case err != nil:
		return RepackReport{}, err
	case res.Noop:
		return RepackReport{}, nil
	}
	rep.Seq = res.Head.Manifest.Seq
	return rep, nil
}

// repackOnce builds one attempt on head: it writes the new packs and
// proposes the manifest that re-points the entries (nil: nothing to do).
func repackOnce(ctx context.Context, b backend.Backend, head Head, below float64, sizes map[string]backend.ObjectInfo, rep *RepackReport) (Proposal, error) {
	m := head.Manifest
	if head.Version == "" || m.Seq >= MaxSeq {
		return Proposal{}, nil
	}
	var err error
	shards := make([]map[string]Entry, len(m.Shards))
	live := map[string]map[spot]Entry{} // pack -> member -> an entry naming it
	for i := range m.Shards {
		if shards[i], err = ReadShard(ctx, b, m, i); err != nil {
			return Proposal{}, fmt.Errorf("repack: %w", err)
		}
		for _, e := range shards[i] {
			if !e.Packed() {
				continue
			}
			if live[e.Pack] == nil {
				live[e.Pack] = map[spot]Entry{}
			}
			live[e.Pack][spotOf(e)] = e
		}
	}
	var cands []string
	for _, pack := range slices.Sorted(maps.Keys(live)) {
		info, ok := sizes[PackKey(pack)]
		if !ok || info.Size <= 0 {
			continue // not listed (written meanwhile, or missing: check reports it)
		}
		if liveBytes(live[pack]) < below*float64(info.Size) {
			cands = append(cands, pack)
		}
	}
	if len(cands) == 0 {
		return Proposal{}, nil
	}
	// The live members are rewritten as a format-6 pack is built: their
	// plain bytes regrouped into new frames, so a frame's dead neighbours
	// go with the old pack.
	moved := map[spot]spot{}
	var pb *PackBuilder
	var pending []spot
	var plain int64
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		data, places := pb.Finish()
		sha, _, err := PutPack(ctx, b, data)
		if err != nil {
			return fmt.Errorf("repack: %w", err)
		}
		rep.Written++
		for i, from := range pending {
			moved[from] = spot{sha, places[i]}
		}
		pb, pending, plain = nil, nil, 0
		return nil
	}
	for _, pack := range cands {
		data, _, err := readBounded(ctx, b, PackKey(pack), backend.GetOptions{}, maxPackRead)
		if err != nil {
			return Proposal{}, fmt.Errorf("repack: read pack %s: %w", pack, err)
		}
		frames := map[int64][]byte{} // decoded, by offset
		members := slices.SortedFunc(maps.Keys(live[pack]), func(x, y spot) int {
			return cmp.Or(cmp.Compare(x.at.Off, y.at.Off), cmp.Compare(x.at.In, y.at.In))
		})
		for _, at := range members {
			e := live[pack][at]
			mb, ok := memberBytes(data, e, frames)
			if !ok {
				return Proposal{}, &ObjectError{Path: "(repack)", SHA256: e.SHA256, Reason: fmt.Sprintf("pack %s at %d does not hold it", pack, e.Off), Err: ErrCorruptObject}
			}
			if plain > 0 && plain+e.Size > RepackPackBytes {
				if err := flush(); err != nil {
					return Proposal{}, err
				}
			}
			if pb == nil {
				pb = NewPackBuilder(RepackPackBytes, RepackPackBytes, 0)
			}
			copy(pb.Next(e.Size), mb)
			pb.Keep()
			pending = append(pending, at)
			plain += e.Size
		}
		rep.Packs = append(rep.Packs, GCObject{Key: PackKey(pack), Size: sizes[PackKey(pack)].Size, ModTime: sizes[PackKey(pack)].ModTime})
	}
	if err := flush(); err != nil {
		return Proposal{}, err
	}
	next := &Manifest{Format: FormatVersion, Seq: m.Seq + 1, Fences: maps.Clone(m.Fences), ShardMaxEntries: m.ShardMaxEntries}
	type shardObject struct {
		id   string
		data []byte // as stored: named by the plain bytes' hash, not these
	}
	var written []shardObject
	for i, ref := range m.Shards {
		changed := false
		entries := maps.Clone(shards[i])
		for p, e := range entries {
			if to, ok := moved[spotOf(e)]; ok && e.Packed() {
				e.Pack, e.Off, e.Z, e.ZN, e.In = to.pack, to.at.Off, to.at.Z, to.at.ZN, to.at.In
				entries[p] = e
				changed = true
				rep.Entries++
			}
		}
		if !changed {
			next.Shards = append(next.Shards, ref)
			continue
		}
		data, id := EncodeFreshShard(entries)
		written = append(written, shardObject{id, data})
		next.Shards = append(next.Shards, ShardRef{Lo: ref.Lo, ID: id, Count: len(entries), Bytes: int64(len(data))})
	}
	write := func(ctx context.Context) error {
		for _, s := range written {
			if _, err := backend.PutBytes(ctx, b, ShardKey(s.id), s.data, backend.Cond{IfAbsent: true, ContentNamed: true}); err != nil && !backend.IsPrecondition(err) {
				return fmt.Errorf("repack: write shard: %w", err)
			}
		}
		return nil
	}
	return Proposal{Next: next, Write: write}, nil
}

// memberBytes returns e's plain bytes from data, its pack's bytes,
// checked against its sha256; frames caches the frames decoded so far.
func memberBytes(data []byte, e Entry, frames map[int64][]byte) ([]byte, bool) {
	if e.Off+e.Stored() > int64(len(data)) {
		return nil, false
	}
	if !e.Framed() {
		plain := data[e.Off : e.Off+e.Size]
		return plain, PackSHA(plain) == e.SHA256
	}
	f, ok := frames[e.Off]
	if !ok {
		var err error
		if f, err = decodeFrame(data[e.Off:e.Off+e.Z], "(repack)", e); err != nil {
			return nil, false
		}
		frames[e.Off] = f
	}
	plain, err := Member(f, "(repack)", e)
	return plain, err == nil && PackSHA(plain) == e.SHA256
}

// liveBytes estimates the bytes of a pack its live members take: an
// unframed member its size, a frame its length in the share of its
// plain bytes that live members hold.
func liveBytes(members map[spot]Entry) float64 {
	var n float64
	inFrame := map[int64]int64{} // frame offset -> live plain bytes
	frames := map[int64]Entry{}
	for _, e := range members {
		if !e.Framed() {
			n += float64(e.Size)
			continue
		}
		inFrame[e.Off] += e.Size
		frames[e.Off] = e
	}
	for off, e := range frames {
		n += float64(e.Z) * min(1, float64(inFrame[off])/float64(e.ZN))
	}
	return n
}
