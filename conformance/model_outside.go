package conformance

// Outside actors on the bucket: tools other than silt (an `aws s3 rm`, a
// lifecycle rule, a partial restore, a stray upload) delete the manifest,
// a history copy, a shard or an object (in a delta log, a checkpoint root
// or page too), put an older manifest back, or
// write a foreign file under .silt/. The model runs them between the
// caches' pushes and pulls and checks three properties after every step:
// nothing local is lost (a local edit not yet committed stays on disk,
// whatever the bucket did), every error is typed (no error escapes that a
// caller cannot act on by sentinel or type), and index.Recover brings back
// the newest snapshot whose manifest copy and shards are still there.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// The outside model's properties.
const (
	propOutsideLocalKept property = "outside actors: a local edit not yet committed is never lost"
	propOutsideTyped     property = "outside actors: every error is typed"
	propOutsideRecover   property = "outside actors: Recover brings back the newest readable snapshot"
)

// outsideRun is one sequence: a bucket, two caches, and what the model
// knows of every snapshot committed.
type outsideRun struct {
	t      *rapid.T
	ctx    context.Context
	store  backend.Backend
	caches []*outsideCache
	snaps  map[string]map[string]string // shardSig -> path -> sha256, as committed
	format int                          // the bucket's format (3, or index.LogFormat)
	n      int
	log    []string
}

type outsideCache struct {
	id    int
	dir   string
	s     *syncer.Syncer
	dirty map[string]string // path -> content written and not yet committed
}

// outsideFigures counts what outside-model runs did, for RELIABILITY.md.
var outsideFigures struct {
	sequences, steps, outside, recovered, typedErrors atomic.Int64
}

// RunOutsideModel runs generated sequences of pushes, pulls, outside
// actors and recoveries against stores from newBackend.
func RunOutsideModel(t *testing.T, newBackend Factory, budget ModelBudget) {
	budget = budget.resolved()
	withRapidBudget(budget, false, func() {
		rapid.Check(t, func(rt *rapid.T) {
			store := newBackend(t)
			o := &outsideRun{t: rt, ctx: context.Background(), store: store, snaps: map[string]map[string]string{}, format: index.DefaultFormat}
			for i := range 2 {
				dir := t.TempDir()
				s, err := syncer.Open(o.ctx, syncer.Config{Backend: o.store, Dir: dir, ShardMaxEntries: 4, PackThreshold: modelPackThreshold, PackSize: modelPackSize, CheckpointEvery: modelCheckpointEvery})
				if err != nil {
					rt.Fatal(err)
				}
				rt.Cleanup(func() { s.Close() })
				o.caches = append(o.caches, &outsideCache{id: i, dir: dir, s: s, dirty: map[string]string{}})
			}
			rt.Repeat(map[string]func(*rapid.T){
				"writePush":  o.actWritePush,
				"pull":       o.actPull,
				"rmManifest": o.actRmManifest,
				"rmHistory":  o.actRmKey(index.HistoryPrefix),
				"rmShard":    o.actRmKey(index.ShardsPrefix),
				"rmObject":   o.actRmKey(index.ObjectsPrefix),
				// A delta log's checkpoints and pages (none elsewhere).
				"rmCheckpoint":  o.actRmKey(index.CheckpointsPrefix),
				"rmPage":        o.actRmKey(index.PagesPrefix),
				"olderManifest": o.actOlderManifest,
				"foreign":       o.actForeign,
				"gc":            o.actGC,
				"recover":       o.actRecover,
				"":              o.checkLocal,
			})
			outsideFigures.sequences.Add(1)
		})
	})
	f := &outsideFigures
	t.Logf("outside model totals in this process: %d sequences, %d steps, %d outside actions, %d recoveries committed, %d typed errors, 0 untyped",
		f.sequences.Load(), f.steps.Load(), f.outside.Load(), f.recovered.Load(), f.typedErrors.Load())
}

func (o *outsideRun) logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	o.log = append(o.log, line)
	o.t.Log(line)
	outsideFigures.steps.Add(1)
	if strings.HasPrefix(line, "outside:") {
		outsideFigures.outside.Add(1)
	}
}

func (o *outsideRun) fail(p property, format string, args ...any) {
	o.t.Fatalf("%s: %s\nsequence: %s", p, fmt.Sprintf(format, args...), strings.Join(o.log, "; "))
}

// typed reports whether err is one a caller can act on: a sentinel or an
// error type of index, syncer or backend.
func typed(err error) bool {
	for _, s := range []error{index.ErrManifestMissing, index.ErrCorruptIndex, index.ErrMissingObject, index.ErrCorruptObject,
		index.ErrNoSnapshot, index.ErrInvalidPath, syncer.ErrRollback, syncer.ErrSeqExhausted, backend.ErrNotExist, backend.ErrPrecondition} {
		if errors.Is(err, s) {
			return true
		}
	}
	var fe *index.FormatError
	var oe *index.ObjectError
	var be *backend.Error
	return errors.As(err, &fe) || errors.As(err, &oe) || errors.As(err, &be)
}

func (o *outsideRun) checkErr(what string, err error) {
	if err != nil {
		o.logf("  (%s: %v)", what, err)
		if !typed(err) {
			o.fail(propOutsideTyped, "%s: untyped error %T: %v", what, err, err)
		}
		outsideFigures.typedErrors.Add(1)
	}
}

// record notes the current snapshot, if readable, as committed: its
// entries under the signature of its shard list. Seqs alone do not name a
// snapshot here: a cache re-anchored on a bucket whose manifest and
// history were all deleted commits seq 1 again.
func (o *outsideRun) record() {
	cur, err := index.ReadManifest(o.ctx, o.store, backend.GetOptions{})
	if err != nil || cur.Version == "" {
		return
	}
	snap, err := readSnapshot(o.ctx, o.store)
	if err != nil {
		return
	}
	e := map[string]string{}
	for p, r := range snap.Entries {
		e[p] = r.SHA256
	}
	o.snaps[shardSig(cur.Manifest)] = e
}

// shardSig names the entries of a manifest: its shard list (shards are
// immutable and named by their bytes).
func shardSig(m *index.Manifest) string {
	var b strings.Builder
	for _, r := range m.Shards {
		fmt.Fprintf(&b, "%s|%s;", r.Lo, r.ID)
	}
	return b.String()
}

func (o *outsideRun) actWritePush(t *rapid.T) {
	c := o.caches[rapid.IntRange(0, 1).Draw(t, "cache")]
	p := fmt.Sprintf("data/c%d/%s", c.id, rapid.SampledFrom([]string{"a", "b", "d/e"}).Draw(t, "file"))
	o.n++
	content := fmt.Sprintf("c%d n%d %s", c.id, o.n, strings.Repeat("x", rapid.IntRange(0, 6<<10).Draw(t, "pad")))
	abs := filepath.Join(c.dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(abs, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.s.MarkDirty(p); err != nil {
		t.Fatal(err)
	}
	c.dirty[p] = content
	o.logf("c%d write+push %q", c.id, p)
	st, err := c.s.Push(o.ctx, syncer.PushOptions{})
	o.checkErr("push", err)
	if err == nil {
		kept := map[string]string{}
		for _, cf := range st.Conflicts {
			if v, ok := c.dirty[cf.Path]; ok {
				kept[cf.Path] = v
			}
		}
		c.dirty = kept // the rest is committed: the bucket holds it now
		o.record()
	}
}

func (o *outsideRun) actPull(t *rapid.T) {
	c := o.caches[rapid.IntRange(0, 1).Draw(t, "cache")]
	reanchor := rapid.Bool().Draw(t, "reanchor")
	o.logf("c%d pull reanchor=%v", c.id, reanchor)
	_, err := c.s.Pull(o.ctx, syncer.PullOptions{Reanchor: reanchor})
	o.checkErr("pull", err)
}

func (o *outsideRun) actRmManifest(t *rapid.T) {
	o.logf("outside: rm manifest")
	if err := o.store.Delete(o.ctx, index.ManifestKey, backend.Cond{}); err != nil {
		t.Fatal(err)
	}
}

// actRmKey deletes one key under prefix, drawn from a listing.
func (o *outsideRun) actRmKey(prefix string) func(*rapid.T) {
	return func(t *rapid.T) {
		keys := o.list(prefix)
		if len(keys) == 0 {
			t.Skip("nothing under " + prefix)
		}
		k := rapid.SampledFrom(keys).Draw(t, "key")
		o.logf("outside: rm %s", k)
		if err := o.store.Delete(o.ctx, k, backend.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
}

func (o *outsideRun) list(prefix string) []string {
	var keys []string
	err := o.store.List(o.ctx, prefix, backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		for _, oi := range page {
			keys = append(keys, oi.Key)
		}
		return nil
	})
	if err != nil {
		o.t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

func (o *outsideRun) actOlderManifest(t *rapid.T) {
	keys := slices.Concat(o.list(index.HistoryPrefix), o.list(index.LogPrefix), o.list(index.CheckpointsPrefix))
	if len(keys) == 0 {
		t.Skip("no history copy")
	}
	k := rapid.SampledFrom(keys).Draw(t, "copy")
	data, _, err := backend.ReadAll(o.ctx, o.store, k, backend.GetOptions{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	o.logf("outside: manifest := %s", k)
	if _, err := backend.PutBytes(o.ctx, o.store, index.ManifestKey, data, backend.Cond{}); err != nil {
		t.Fatal(err)
	}
}

func (o *outsideRun) actForeign(t *rapid.T) {
	k := rapid.SampledFrom([]string{".silt/manifests/notes.txt", ".silt/shards/x.json", ".silt/objects/zz/foreign", ".silt/README"}).Draw(t, "key")
	o.logf("outside: put %s", k)
	if _, err := backend.PutBytes(o.ctx, o.store, k, []byte("not silt's"), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
}

func (o *outsideRun) actGC(t *rapid.T) {
	o.logf("gc (grace 1h)")
	_, err := index.GC(o.ctx, o.store, index.GCOptions{OlderThan: index.DefaultGCOlderThan, RepackBelow: -1})
	o.checkErr("gc", err)
}

// expectedRecovery is, by the model's own reading of the keys, the newest
// snapshot in the bucket whose manifest (the current one, or a history
// copy) and shards are all still there.
func (o *outsideRun) expectedRecovery() (uint64, *index.Manifest) {
	seqs := o.snapshotSeqs()
	cur, cerr := index.ReadManifest(o.ctx, o.store, backend.GetOptions{})
	curOK := cerr == nil && cur.Version != ""
	if curOK {
		seqs = append(seqs, cur.Manifest.Seq)
	}
	slices.Sort(seqs)
	for _, seq := range slices.Backward(slices.Compact(seqs)) {
		var m *index.Manifest
		if curOK && cur.Manifest.Seq == seq {
			m = cur.Manifest
		} else if h, err := o.readOld(seq); err == nil {
			m = h.Manifest
		} else {
			continue
		}
		whole := true
		for _, ref := range m.Shards {
			if ok, _ := backend.Exists(o.ctx, o.store, index.ShardKey(ref.ID)); !ok {
				whole = false
			}
		}
		if whole {
			return seq, m
		}
	}
	return 0, nil
}

// snapshotSeqs lists the seqs of the older snapshots the bucket holds:
// its history copies, or in a log bucket its log entries (the marker, seq
// 0, is no snapshot).
func (o *outsideRun) snapshotSeqs() []uint64 {
	prefix, parse := index.HistoryPrefix, index.ParseHistoryKey
	if o.format >= index.LogFormat {
		prefix, parse = index.LogPrefix, index.ParseLogKey
	}
	var seqs []uint64
	for _, k := range o.list(prefix) {
		if seq, ok := parse(k); ok && seq > 0 {
			seqs = append(seqs, seq)
		}
	}
	return seqs
}

// readOld reads an older snapshot: a history copy, or a log entry.
func (o *outsideRun) readOld(seq uint64) (index.Head, error) {
	if o.format >= index.LogFormat {
		return index.ReadLogEntry(o.ctx, o.store, seq)
	}
	return index.ReadHistory(o.ctx, o.store, seq)
}

func (o *outsideRun) actRecover(t *rapid.T) {
	want, wm := o.expectedRecovery()
	top := uint64(0)
	for _, seq := range o.snapshotSeqs() {
		top = max(top, seq)
	}
	if cur, err := index.ReadManifest(o.ctx, o.store, backend.GetOptions{}); err == nil {
		top = max(top, cur.Manifest.Seq)
	}
	o.logf("recover (want snapshot %d)", want)
	rep, err := index.Recover(o.ctx, o.store, index.RecoverOptions{})
	o.checkErr("recover", err)
	if wm == nil {
		return
	}
	if err != nil {
		o.fail(propOutsideRecover, "recover failed although snapshot %d is readable: %v", want, err)
	}
	if rep.From != want {
		o.fail(propOutsideRecover, "recover brought back %d, want the newest readable %d (report %+v)", rep.From, want, rep)
	}
	cur, err := index.ReadManifest(o.ctx, o.store, backend.GetOptions{})
	if err != nil {
		o.fail(propOutsideRecover, "after recover the manifest does not read: %v", err)
	}
	if shardSig(cur.Manifest) != shardSig(wm) {
		o.fail(propOutsideRecover, "after recover seq %d lists other shards than snapshot %d", cur.Manifest.Seq, want)
	}
	if !rep.NoOp && cur.Manifest.Seq <= top {
		o.fail(propOutsideRecover, "recover committed seq %d, not above the bucket's highest seq %d", cur.Manifest.Seq, top)
	}
	snap, err := readSnapshot(o.ctx, o.store)
	if err != nil {
		o.fail(propOutsideRecover, "after recover the snapshot does not read: %v", err)
	}
	got := map[string]string{}
	for p, r := range snap.Entries {
		got[p] = r.SHA256
	}
	if had, known := o.snaps[shardSig(wm)]; known && !maps.Equal(got, had) {
		o.fail(propOutsideRecover, "after recover seq %d holds %d entries, snapshot %d had %d when committed", snap.Seq, len(got), want, len(had))
	}
	if !rep.NoOp {
		outsideFigures.recovered.Add(1)
	}
	o.record()
}

// checkLocal is the property after every step: each cache's uncommitted
// edits are on its disk as written.
func (o *outsideRun) checkLocal(t *rapid.T) {
	for _, c := range o.caches {
		for p, want := range c.dirty {
			got, err := os.ReadFile(filepath.Join(c.dir, filepath.FromSlash(p)))
			if err != nil || string(got) != want {
				o.fail(propOutsideLocalKept, "c%d lost its uncommitted edit of %q (%v)", c.id, p, err)
			}
		}
	}
}
