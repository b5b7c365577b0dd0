package conformance

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"pgregory.net/rapid"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/syncer"
)

// The step of the Concurrent mode: 2 or 3 operations of ONE cache's
// Syncer run at once, in goroutines released together. The oracle is the
// sequential one, applied in a serial order: operations on disjoint scopes
// must give what applying them one after another gives (any order: for
// disjoint scopes every order leaves the same state); operations whose
// scopes overlap are serialised by the scope lock in arrival order, which
// the public API does not show, so the outcome must match at least one of
// the possible serial orders. Each serial order is checked by the same
// checkPull and checkPush the sequential steps use, against the states
// in between, which follow from the states before and after: a pull
// changes only the cache, inside its scope; a push changes only the
// snapshot, inside its scope.

// propSerialOrder is the oracle of the concurrent step.
const propSerialOrder property = "operations of one cache run at once give what some serial order gives"

// concFigures counts what concurrent steps ran, for the totals line.
var concFigures struct{ steps, ops, grouped, pipelined, reordered atomic.Int64 }

// concOp is one operation of the concurrent step.
type concOp struct {
	name  string
	scope string // its scope: "" is everything
	pull  bool
	// run is the operation, in its own goroutine.
	run     func(ctx context.Context) (syncer.Stats, error)
	covered map[string]bool // a push: the marks it settles
	all     bool            // a push that walks the whole cache (PushOptions.All)
	hydrate bool            // checked as a pull of its one file
	out     opOut
}

// concActions are the concurrent steps, one action each, so that rapid
// draws them as often as the rest together and names them in a sequence.
func (m *modelRun) concActions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"concDisjoint": func(t *rapid.T) { m.actConcurrent(t, "disjoint") },
		"concPullPush": func(t *rapid.T) { m.actConcurrent(t, "pull||push") },
		"concSameDir":  func(t *rapid.T) { m.actConcurrent(t, "same model") },
		"concHydrate":  func(t *rapid.T) { m.actConcurrent(t, "pull-dir||hydrate") },
		"concPullAll":  func(t *rapid.T) { m.actConcurrent(t, "pull-model||push-all") },
	}
}

func (m *modelRun) actConcurrent(t *rapid.T, kind string) {
	c := m.drawCache(t, "cache")
	var ops []*concOp
	switch kind {
	case "disjoint":
		ops = m.drawDisjoint(t, c)
	case "pull||push":
		ops = []*concOp{m.concPull(c, ""), m.drawConcPush(t, c)}
	case "same model":
		ops = m.drawSameModel(t, c)
	case "pull-model||push-all":
		// The command line's push holds everything while it walks, then
		// only what it changes: a scoped pull runs beside its uploads.
		ops = []*concOp{m.concPull(c, m.drawAnyModel(t)), m.concPushAll(c)}
	default:
		m.logf("c%d pull MetadataOnly", c.id)
		m.doPull(c, nil, true)
		ops = m.drawPullHydrate(t, c)
	}
	if len(ops) < 2 {
		t.Skip("not enough disjoint models for this cache")
	}
	names := make([]string, len(ops))
	for i, o := range ops {
		names[i] = o.name
	}
	m.logf("c%d at once: %s", c.id, strings.Join(names, " || "))
	snap0, disk0 := m.committed, readDisk(m.t, c)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, o := range ops {
		wg.Go(func() {
			<-start
			o.out.st, o.out.err = o.run(m.ctx)
			o.out.reqs = o.out.st.Requests.Total()
		})
	}
	close(start)
	wg.Wait()
	disk1 := readDisk(m.t, c)
	snap1 := m.snapshot()
	concFigures.steps.Add(1)
	concFigures.ops.Add(int64(len(ops)))
	for _, o := range ops {
		if cm := o.out.st.Commit; cm != nil && cm.Batch > 1 {
			concFigures.grouped.Add(1)
		}
		if cm := o.out.st.Commit; cm != nil && cm.Pipelined {
			concFigures.pipelined.Add(1)
		}
		if o.out.err != nil {
			m.logf("  (%s: error: %v)", o.name, o.out.err)
		}
		if cm := o.out.st.Commit; cm != nil {
			m.logf("  (%s: committed seq %d, batch %d, %d attempts)", o.name, o.out.st.Seq, cm.Batch, cm.Attempts)
		}
	}
	st, err := c.s.Status(m.ctx, false)
	if err != nil {
		m.t.Fatalf("status: %v", err)
	}
	m.expect(propSeqMonotonic, st.SeenSeq >= c.seen, "cache %d seen seq went from %d to %d", c.id, c.seen, st.SeenSeq)
	c.seen = max(c.seen, st.SeenSeq)

	orders := [][]*concOp{ops}
	if overlapping(ops) {
		orders = permutations(ops)
	}
	restore := m.saveModel(c)
	var report []string
	for _, order := range orders {
		var violations []string
		m.trial = &violations
		m.checkSerial(c, order, snap0, snap1, disk0, disk1)
		m.trial = nil
		if len(violations) == 0 {
			if len(report) > 0 {
				concFigures.reordered.Add(1)
			}
			m.committed = snap1
			return
		}
		report = append(report, fmt.Sprintf("order %s: %s", orderName(order), strings.Join(violations, "; ")))
		restore()
	}
	m.expect(propSerialOrder, false, "no serial order gives the outcome:\n  %s", strings.Join(report, "\n  "))
}

// checkSerial checks ops as if they ran one after another in order, each
// against the states in between.
func (m *modelRun) checkSerial(c *mcache, order []*concOp, snap0, snap1 snapshotView, disk0, disk1 map[string]string) {
	snap, disk := snap0, disk0
	for i, o := range order {
		last := i == len(order)-1
		if o.pull {
			// A pull changes the cache inside its scope only; whatever
			// else differs is its fault too, and checkPull says so.
			next := overlay(disk, disk1, o.scope)
			if last {
				next = disk1
			}
			m.committed = snap
			m.checkPull(c, scopeList(o.scope), false, snap, disk, next, o.out)
			if o.hydrate {
				c.lastPull = nil // not a pull: no request bound for the next one
			}
			disk = next
			continue
		}
		next := overlaySnap(snap, snap1, o.scope)
		if last || o.scope == "" {
			next = snap1
		}
		m.committed = next
		m.checkPush(c, snap, snap, next, disk, o.covered, o.all, nil, o.out)
		snap = next
	}
	// A push listed before the last operation that took more than its
	// scope is caught by the last operation's check, which sees the rest.
	if !sameEntries(snap.Entries, snap1.Entries) {
		m.expect(propAtomicCommit, false, "the snapshot after every operation is not the one committed: %s", diffMaps(shaMap(snap1), shaMap(snap)))
	}
	for p := range m.allPaths(c) {
		if disk[p] != disk1[p] {
			m.expect(propPullKeepsLocal, false, "%q changed outside every pull's scope", p)
		}
	}
}

// drawDisjoint draws 2 or 3 operations on distinct models: a pull of
// model A (or a file in it), a Paths push of model B, and a write in model
// C marked dirty and pushed by Paths from its goroutine.
func (m *modelRun) drawDisjoint(t *rapid.T, c *mcache) []*concOp {
	var own, all []string
	for ti := range modelTypes {
		for ii := range modelIDs {
			all = append(all, modelDir(ti, ii))
			if m.owns(c, modelDir(ti, ii)+"/x") {
				own = append(own, modelDir(ti, ii))
			}
		}
	}
	if len(own) < 2 {
		return nil
	}
	b := rapid.SampledFrom(own).Draw(t, "modelB")
	own = slices.DeleteFunc(own, func(s string) bool { return s == b })
	cm := rapid.SampledFrom(own).Draw(t, "modelC")
	own = slices.DeleteFunc(own, func(s string) bool { return s == cm })
	all = slices.DeleteFunc(all, func(s string) bool { return s == b || s == cm })
	a := rapid.SampledFrom(all).Draw(t, "modelA")
	pullScope := a
	if rapid.Bool().Draw(t, "pullFile") {
		pullScope += "/" + rapid.SampledFrom(modelFileN).Draw(t, "file")
	}
	pushScope := b
	if rapid.Bool().Draw(t, "pushFile") {
		pushScope += "/" + rapid.SampledFrom(modelFileN).Draw(t, "file")
	}
	var ops []*concOp
	combos := []string{"pull+push", "push+markpush", "pull+markpush", "pull+push+markpush"}
	if len(own) > 0 {
		// Three commits at once: while the first commits, the other two
		// queue, and group commit merges them.
		combos = append(combos, "markpush*3")
	}
	switch rapid.SampledFrom(combos).Draw(t, "ops") {
	case "markpush*3":
		ops = []*concOp{m.concMarkPush(t, c, b), m.concMarkPush(t, c, cm), m.concMarkPush(t, c, rapid.SampledFrom(own).Draw(t, "modelD"))}
	case "pull+push":
		ops = []*concOp{m.concPull(c, pullScope), m.concPushPaths(c, pushScope)}
	case "push+markpush":
		ops = []*concOp{m.concPushPaths(c, pushScope), m.concMarkPush(t, c, cm)}
	case "pull+markpush":
		ops = []*concOp{m.concPull(c, pullScope), m.concMarkPush(t, c, cm)}
	default:
		ops = []*concOp{m.concPull(c, pullScope), m.concPushPaths(c, pushScope), m.concMarkPush(t, c, cm)}
	}
	return ops
}

func (m *modelRun) concPull(c *mcache, scope string) *concOp {
	return &concOp{name: fmt.Sprintf("pull scope=%q", scopeList(scope)), scope: scope, pull: true,
		run: func(ctx context.Context) (syncer.Stats, error) {
			return c.s.Pull(ctx, syncer.PullOptions{Scope: scopeList(scope)})
		}}
}

func (m *modelRun) concPushPaths(c *mcache, p string) *concOp {
	covered := pathsPushCovers(c.marks, []string{p})
	for _, q := range pathsPushMarks([]string{p}) {
		c.marks[q] = true
	}
	return &concOp{name: fmt.Sprintf("push Paths=[%q]", p), scope: p, covered: covered,
		run: func(ctx context.Context) (syncer.Stats, error) { return pushPaths(ctx, c.s, []string{p}) }}
}

// concPushAll is the command line's push: a walk of the whole cache.
func (m *modelRun) concPushAll(c *mcache) *concOp {
	return &concOp{name: "push All", covered: copyMarks(c.marks), all: true, scope: "",
		run: func(ctx context.Context) (syncer.Stats, error) { return c.s.Push(ctx, syncer.PushOptions{All: true}) }}
}

// drawConcPush draws a push to run with an unscoped pull: a plain push
// (its scope is the dirty set), a Paths push of one of c's models, or a
// write there marked and pushed from the goroutine.
func (m *modelRun) drawConcPush(t *rapid.T, c *mcache) *concOp {
	switch rapid.SampledFrom([]string{"push", "paths", "markpush"}).Draw(t, "push") {
	case "paths":
		return m.concPushPaths(c, m.drawModel(t, c))
	case "markpush":
		return m.concMarkPush(t, c, m.drawModel(t, c))
	}
	return &concOp{name: "push", covered: copyMarks(c.marks), scope: "",
		run: func(ctx context.Context) (syncer.Stats, error) { return c.s.Push(ctx, syncer.PushOptions{}) }}
}

// drawSameModel draws two operations on one of c's models, or on the
// model and a file of it: pulls, Paths pushes, a marked write and push.
func (m *modelRun) drawSameModel(t *rapid.T, c *mcache) []*concOp {
	dir := m.drawModel(t, c)
	var ops []*concOp
	for i := range 2 {
		scope := dir
		if rapid.Bool().Draw(t, fmt.Sprintf("file%d", i)) {
			scope += "/" + rapid.SampledFrom(modelFileN).Draw(t, fmt.Sprintf("name%d", i))
		}
		switch rapid.SampledFrom([]string{"pull", "paths", "markpush"}).Draw(t, fmt.Sprintf("op%d", i)) {
		case "pull":
			ops = append(ops, m.concPull(c, scope))
		case "paths":
			ops = append(ops, m.concPushPaths(c, scope))
		default:
			ops = append(ops, m.concMarkPush(t, c, dir))
		}
	}
	return ops
}

// concMarkPush writes a file of model dir now, and marks it dirty and
// pushes dir by Paths from its goroutine.
func (m *modelRun) concMarkPush(t *rapid.T, c *mcache, dir string) *concOp {
	p := dir + "/" + rapid.SampledFrom(modelFileN).Draw(t, "file")
	abs := filepath.Join(c.dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(abs, []byte(m.content(c, p)), 0o644); err != nil {
		t.Fatal(err)
	}
	c.lastPull = nil
	c.marks[p] = true
	covered := pathsPushCovers(c.marks, []string{dir})
	return &concOp{name: fmt.Sprintf("write %q; MarkDirty; push Paths=[%q]", p, dir), scope: dir, covered: covered,
		run: func(ctx context.Context) (syncer.Stats, error) {
			if err := c.s.MarkDirty(p); err != nil {
				return syncer.Stats{}, err
			}
			return pushPaths(ctx, c.s, []string{dir})
		}}
}

// drawPullHydrate draws a pull of a model directory at once with the
// hydration of a committed file under it (after a MetadataOnly pull, so
// that the file is usually absent).
func (m *modelRun) drawPullHydrate(t *rapid.T, c *mcache) []*concOp {
	var cands []string
	for p := range m.committed.Entries {
		if m.shared || m.ownerOf(p) != c.id {
			cands = append(cands, p)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	slices.Sort(cands)
	p := rapid.SampledFrom(cands).Draw(t, "hydrate")
	dir := path.Dir(p)
	var ok bool
	h := &concOp{name: fmt.Sprintf("hydrate %q", p), scope: p, pull: true, hydrate: true,
		run: func(ctx context.Context) (st syncer.Stats, err error) {
			ok, st, err = c.s.HydrateFile(ctx, p)
			if err == nil && !ok {
				err = fmt.Errorf("HydrateFile(%q) = false for a committed path", p)
			}
			return st, err
		}}
	return []*concOp{m.concPull(c, dir), h}
}

// overlapping reports whether any two operations' scopes meet.
func overlapping(ops []*concOp) bool {
	for i, a := range ops {
		for _, b := range ops[i+1:] {
			if a.scope == "" || b.scope == "" || inDir(a.scope, b.scope) || inDir(b.scope, a.scope) {
				return true
			}
		}
	}
	return false
}

func permutations(ops []*concOp) [][]*concOp {
	if len(ops) <= 1 {
		return [][]*concOp{slices.Clone(ops)}
	}
	var out [][]*concOp
	for i, o := range ops {
		rest := slices.Concat(ops[:i:i], ops[i+1:])
		for _, p := range permutations(rest) {
			out = append(out, append([]*concOp{o}, p...))
		}
	}
	return out
}

func orderName(order []*concOp) string {
	names := make([]string, len(order))
	for i, o := range order {
		names[i] = o.name
	}
	return strings.Join(names, " then ")
}

func scopeList(scope string) []string {
	if scope == "" {
		return nil
	}
	return []string{scope}
}

// overlay is cur with the paths inside scope taken from next.
func overlay(cur, next map[string]string, scope string) map[string]string {
	out := map[string]string{}
	for p, v := range cur {
		if !inDir(p, scope) {
			out[p] = v
		}
	}
	for p, v := range next {
		if inDir(p, scope) {
			out[p] = v
		}
	}
	return out
}

// overlaySnap is cur with the entries inside scope taken from next.
func overlaySnap(cur, next snapshotView, scope string) snapshotView {
	out := snapshotView{Seq: next.Seq, Entries: map[string]remoteEntry{}}
	for p, e := range cur.Entries {
		if !inDir(p, scope) {
			out.Entries[p] = e
		}
	}
	for p, e := range next.Entries {
		if inDir(p, scope) {
			out.Entries[p] = e
		}
	}
	return out
}

// saveModel returns a function that puts back what the oracle knows of c
// and of the snapshot, so that another serial order can be tried.
func (m *modelRun) saveModel(c *mcache) func() {
	marks, base, unknown, lazy := maps.Clone(c.marks), maps.Clone(c.base), maps.Clone(c.unknown), maps.Clone(c.lazy())
	lastPull, failedPush, committed := c.lastPull, c.failedPush, m.committed
	return func() {
		c.marks, c.base, c.unknown, c.lazyPaths = maps.Clone(marks), maps.Clone(base), maps.Clone(unknown), maps.Clone(lazy)
		c.lastPull, c.failedPush, m.committed = lastPull, failedPush, committed
	}
}

func concTotals() string {
	return fmt.Sprintf("%d concurrent steps (%d operations at once, %d pushes group-committed with another, %d pipelined on a commit in flight, %d outcomes matched only a later serial order)",
		concFigures.steps.Load(), concFigures.ops.Load(), concFigures.grouped.Load(), concFigures.pipelined.Load(), concFigures.reordered.Load())
}

// cacheStore is the store under a cache's wrappers: in the Concurrent
// mode each manifest compare-and-swap takes a little longer, so that the
// pushes of one step meet at the commit and group commit merges them.
func cacheStore(store backend.Backend, concurrent bool) backend.Backend {
	if !concurrent {
		return store
	}
	return wrap.Latency(store, wrap.LatencyConfig{PerVerb: map[wrap.Verb]time.Duration{wrap.VerbCondPut: 2 * time.Millisecond}})
}
