package index

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/siltsync/silt/backend"
)

// WriteHistory stores the history copy of the committed manifest h,
// create-if-absent: a copy already there holds the same bytes (one seq is
// one manifest), so losing that race is success. A commit calls it before
// the compare-and-swap that supersedes h, so every superseded manifest has
// a copy written no later than it was superseded.
func WriteHistory(ctx context.Context, b backend.Backend, h Head) error {
	if h.Version == "" || h.Data == nil {
		return nil // nothing committed yet: no history to keep
	}
	// One seq is one manifest: the key names its bytes, so Retry may
	// resend or settle the write.
	cond := backend.Cond{IfAbsent: true, ContentNamed: true}
	if caps := b.Capabilities(); !caps.ConditionalPut && !caps.AtomicCreate {
		cond = backend.Cond{ContentNamed: true} // commits run under the commit lock: one writer per seq
	}
	_, err := backend.PutBytes(ctx, b, HistoryKey(h.Manifest.Seq), h.Data, cond)
	if err != nil && !backend.IsPrecondition(err) {
		return fmt.Errorf("write manifest history %d: %w", h.Manifest.Seq, err)
	}
	return nil
}

// DefaultGCOlderThan is the grace period the command line uses: long enough
// for any push to commit what it uploaded and any reader to finish with the
// snapshot it opened.
const DefaultGCOlderThan = time.Hour

// GCOptions modify a GC.
type GCOptions struct {
	// OlderThan is the grace period. Snapshots current within it stay
	// whole, and an unreferenced object is removed only once it is older
	// than it, by its ModTime. Zero keeps only what the current manifest
	// references, which can break a push that has uploaded but not yet
	// committed and a reader of an older snapshot.
	OlderThan time.Duration
	// DryRun reports what would be removed and removes nothing.
	DryRun bool
	// Now is the clock ages are measured by; nil means time.Now.
	Now func() time.Time
	// RepackBelow is the live share under which a pack of the current
	// snapshot is repacked before the mark (see Repack); 0 means
	// DefaultRepackBelow, negative never repacks. A dry run never does.
	RepackBelow float64
}

// GCObject is one object GC removed (or, in a dry run, would remove).
type GCObject struct {
	Key     string    `json:"key"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mod_time"`
}

// GCReport is what GC found and did.
type GCReport struct {
	// Seq is the current manifest sequence (as read after the listing).
	Seq uint64 `json:"seq"`
	// Roots lists the sequences whose snapshots were kept whole.
	Roots []uint64 `json:"roots"`
	// Shards are the unreferenced shard objects.
	Shards []GCObject `json:"shards"`
	// Data are the unreferenced data objects.
	Data []GCObject `json:"data"`
	// Packs are the unreferenced packs.
	Packs []GCObject `json:"packs"`
	// History are the manifest history copies past the grace period.
	History []GCObject `json:"history"`
	// Bytes is the total size of Shards, Data, Packs and History.
	Bytes int64 `json:"bytes"`
	// Recent counts unreferenced objects kept because they are younger
	// than the grace period (or of unknown age).
	Recent int `json:"recent"`
	// DryRun is true when nothing was removed.
	DryRun bool `json:"dry_run"`
	// Repack is what the repack before the mark did.
	Repack RepackReport `json:"repack"`
}

// GC collects the garbage of the namespace root b by mark and sweep. The
// roots are the current manifest, read before and after the listing, and
// every manifest that was current within the grace period (its history
// copy, or its successor's, is younger than the grace period; or its
// successor is current and was committed within it). Objects and shards no
// root references and older than the grace period are deleted, and so are
// history copies of manifests superseded before it. GC only lists and
// deletes under .silt/objects/, .silt/packs/, .silt/shards/ and
// .silt/manifests/: it
// never touches the manifest, control records, locks, or a nested
// namespace.
func GC(ctx context.Context, b backend.Backend, opts GCOptions) (GCReport, error) {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	rep := GCReport{DryRun: opts.DryRun, Roots: []uint64{}, Shards: []GCObject{}, Data: []GCObject{}, Packs: []GCObject{}, History: []GCObject{}}
	start := now()
	cutoff := start.Add(-opts.OlderThan)
	young := func(t time.Time) bool {
		return opts.OlderThan > 0 && (t.IsZero() || t.After(cutoff))
	}
	if below := opts.RepackBelow; below >= 0 && !opts.DryRun {
		if below == 0 {
			below = DefaultRepackBelow
		}
		rr, err := repack(ctx, b, below, now)
		if err != nil {
			return rep, fmt.Errorf("gc: %w", err)
		}
		rep.Repack = rr
	}
	if rep.Repack.Packs == nil {
		rep.Repack.Packs = []GCObject{}
	}
	marks := gcMarks{objects: map[string]bool{}, shards: map[string]bool{}, seqs: map[uint64]bool{}}
	first, err := readHead(ctx, b, backend.GetOptions{}, now)
	if err != nil {
		return rep, fmt.Errorf("gc: %w", err)
	}
	if first.IsLog() {
		return gcLog(ctx, b, opts, now, start, young, rep, first, &marks)
	}
	if first.Version == "" {
		// No manifest was read, so nothing is provably unreachable: the
		// data of a killed first push and of a lost first manifest look
		// alike. A missing manifest beside history is an error above.
		return rep, nil
	}
	if err := marks.add(ctx, b, first); err != nil {
		return rep, err
	}
	list := func(prefix string) ([]backend.ObjectInfo, error) { return listAll(ctx, b, prefix) }
	hist, err := list(HistoryPrefix)
	if err != nil {
		return rep, err
	}
	objects, err := list(ObjectsPrefix)
	if err != nil {
		return rep, err
	}
	packs, err := list(PacksPrefix)
	if err != nil {
		return rep, err
	}
	shards, err := list(ShardsPrefix)
	if err != nil {
		return rep, err
	}
	// A commit may have landed during the listing: what it references is
	// kept too.
	second, err := readHead(ctx, b, backend.GetOptions{}, now)
	if err != nil {
		return rep, fmt.Errorf("gc: %w", err)
	}
	if second.Version != first.Version {
		if err := marks.add(ctx, b, second); err != nil {
			return rep, err
		}
	}
	rep.Seq = second.Manifest.Seq
	// Manifests committed and superseded during the listing were current
	// within the grace period too; their history copies may be missing
	// from the listing, but exist (each is written before its successor).
	if first.Version != "" && second.Version != first.Version {
		for seq := first.Manifest.Seq + 1; seq < second.Manifest.Seq; seq++ {
			h, err := ReadHistory(ctx, b, seq)
			if err != nil {
				return rep, fmt.Errorf("gc: %w", err)
			}
			if err := marks.add(ctx, b, h); err != nil {
				return rep, err
			}
		}
	}
	histAt := map[uint64]backend.ObjectInfo{}
	for _, o := range hist {
		if seq, ok := ParseHistoryKey(o.Key); ok {
			histAt[seq] = o
		}
	}
	// Manifest K was superseded when K+1 was committed, which is no later
	// than K+1's history copy was written (or K+1's own write, if current).
	supersededRecently := func(k uint64) bool {
		if next, ok := histAt[k+1]; ok && young(next.ModTime) {
			return true
		}
		for _, h := range []Head{first, second} {
			if h.Version != "" && h.Manifest.Seq == k+1 && young(h.Info.ModTime) {
				return true
			}
		}
		return young(histAt[k].ModTime)
	}
	var oldHist []backend.ObjectInfo
	for _, o := range hist {
		seq, ok := ParseHistoryKey(o.Key)
		if !ok || marks.seqs[seq] || seq == genesisSeq {
			continue // seq 0 is no snapshot: a killed migration's marker
		}
		if !supersededRecently(seq) {
			if !young(o.ModTime) {
				oldHist = append(oldHist, o)
			}
			continue
		}
		h, err := ReadHistory(ctx, b, seq)
		if err != nil {
			return rep, fmt.Errorf("gc: %w", err)
		}
		if err := marks.add(ctx, b, h); err != nil {
			return rep, err
		}
	}
	for seq := range marks.seqs {
		rep.Roots = append(rep.Roots, seq)
	}
	slices.Sort(rep.Roots)

	sweep := func(cands []backend.ObjectInfo, referenced func(key string) bool, out *[]GCObject) error {
		return rep.sweep(ctx, b, opts.DryRun, young, cands, referenced, out)
	}
	// History copies go first: a snapshot leaves the log before any data
	// only it references, so a GC killed between its sweeps leaves no
	// listed snapshot unreadable.
	if err := sweep(oldHist, func(string) bool { return false }, &rep.History); err != nil {
		return rep, err
	}
	return rep, rep.sweepData(ctx, b, opts.DryRun, young, &marks, shards, objects, packs)
}

// sweepData deletes the shards, objects and packs no root marked and
// older than the grace period, in that order.
func (rep *GCReport) sweepData(ctx context.Context, b backend.Backend, dryRun bool, young func(time.Time) bool, marks *gcMarks, shards, objects, packs []backend.ObjectInfo) error {
	if err := rep.sweep(ctx, b, dryRun, young, shards, func(k string) bool { return marks.shards[k] }, &rep.Shards); err != nil {
		return err
	}
	// The empty object is never deleted: a writer may always deduplicate
	// against it (it cannot be re-stored under a fresh name).
	empty := ObjectKey(emptySHA256)
	if err := rep.sweep(ctx, b, dryRun, young, objects, func(k string) bool { return marks.objects[k] || k == empty }, &rep.Data); err != nil {
		return err
	}
	return rep.sweep(ctx, b, dryRun, young, packs, func(k string) bool { return marks.objects[k] }, &rep.Packs)
}

// sweep deletes the candidates not referenced and not young, one by one,
// in the order given, and reports them in out.
func (rep *GCReport) sweep(ctx context.Context, b backend.Backend, dryRun bool, young func(time.Time) bool, cands []backend.ObjectInfo, referenced func(key string) bool, out *[]GCObject) error {
	for _, o := range cands {
		if referenced(o.Key) {
			continue
		}
		if young(o.ModTime) {
			rep.Recent++
			continue
		}
		if !dryRun {
			if err := b.Delete(ctx, o.Key, backend.Cond{}); err != nil && !backend.IsNotExist(err) {
				return fmt.Errorf("gc: delete %q: %w", o.Key, err)
			}
		}
		*out = append(*out, GCObject{Key: o.Key, Size: o.Size, ModTime: o.ModTime})
		rep.Bytes += o.Size
	}
	return nil
}

// listAll lists every key under prefix.
func listAll(ctx context.Context, b backend.Backend, prefix string) ([]backend.ObjectInfo, error) {
	var out []backend.ObjectInfo
	err := b.List(ctx, prefix, backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		out = append(out, page...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("gc: list %s: %w", prefix, err)
	}
	return out, nil
}

// emptySHA256 is the sha256 of no bytes.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// gcMarks is the set of keys the roots reference.
type gcMarks struct {
	objects map[string]bool
	shards  map[string]bool
	seqs    map[uint64]bool
}

func (g *gcMarks) add(ctx context.Context, b backend.Backend, h Head) error {
	m := h.Manifest
	if h.Version != "" {
		g.seqs[m.Seq] = true
	}
	for i, ref := range m.Shards {
		key := ShardKey(ref.ID)
		if g.shards[key] {
			continue // immutable: its entries are already marked
		}
		g.shards[key] = true
		entries, err := ReadShard(ctx, b, m, i)
		if err != nil {
			return fmt.Errorf("gc: %w", err)
		}
		for _, e := range entries {
			if e.Packed() {
				g.objects[PackKey(e.Pack)] = true
			} else {
				g.objects[ObjectKey(e.SHA256)] = true
			}
		}
	}
	return nil
}
