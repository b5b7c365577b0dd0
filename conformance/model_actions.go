package conformance

import (
	"context"
	"errors"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"

	"pgregory.net/rapid"

	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// actions is the state machine: every step rapid may draw, plus "", the
// checks run after each.
func (m *modelRun) actions() map[string]func(*rapid.T) {
	acts := map[string]func(*rapid.T){
		"write":       m.actWrite,
		"delete":      m.actDelete,
		"deleteDir":   m.actDeleteDir,
		"push":        m.actPush,
		"pull":        m.actPull,
		"sync":        m.actSync,
		"twoPhase":    m.actTwoPhase,
		"metaHydrate": m.actMetaHydrate,
		"gc":          m.actGC,
		"migrate":     m.actMigrate, // model_migrate.go
		"olderPeer":   m.actOlderPeer,
		"restart":     m.actRestart,
		"fault":       m.actFault,
		"":            m.checkAlways,
	}
	if m.concurrent {
		maps.Copy(acts, m.concActions())
	}
	maps.Copy(acts, m.gcActions())
	acts["diskFull"] = m.actDiskFull // model_disk.go
	if m.live != nil {
		delete(acts, "fault")    // faults come with every operation
		delete(acts, "diskFull") // not transient: no retry heals it
	}
	if m.shared {
		maps.Copy(acts, m.writerActions()) // model_writer.go
	}
	return acts
}

func (m *modelRun) drawCache(t *rapid.T, label string) *mcache {
	return m.caches[rapid.IntRange(0, len(m.caches)-1).Draw(t, label)]
}

// drawModel draws a model directory c may write.
func (m *modelRun) drawModel(t *rapid.T, c *mcache) string {
	var dirs []string
	for ti := range modelTypes {
		for ii := range modelIDs {
			if m.shared || m.owner(ti, ii) == c.id {
				dirs = append(dirs, modelDir(ti, ii))
			}
		}
	}
	return rapid.SampledFrom(dirs).Draw(t, "model")
}

func (m *modelRun) drawPath(t *rapid.T, c *mcache) string {
	return m.drawModel(t, c) + "/" + rapid.SampledFrom(modelFileN).Draw(t, "file")
}

// mark applies a drawn mark choice to a changed path p: none, the file,
// or its model directory.
func (m *modelRun) mark(t *rapid.T, c *mcache, p string, isDir bool) string {
	choices := []string{"none", "file", "dir"}
	if isDir {
		choices = []string{"none", "dir"}
	}
	choice := rapid.SampledFrom(choices).Draw(t, "mark")
	target := p
	switch choice {
	case "none":
		return choice
	case "dir":
		if !isDir {
			target = path.Dir(p)
		}
	}
	if err := c.s.MarkDirty(target); err != nil {
		m.t.Fatalf("MarkDirty(%q): %v\nsequence: %s", target, err, m.sequence())
	}
	c.marks[target] = true
	return choice
}

func (m *modelRun) actWrite(t *rapid.T) {
	c := m.drawCache(t, "cache")
	p := m.drawPath(t, c)
	data := m.content(c, p)
	abs := filepath.Join(c.dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(abs, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	c.lastPull = nil // a lazy record stays lazy: only a push or a pull settles it
	m.logf("c%d write %q mark=%s", c.id, p, m.mark(t, c, p, false))
}

func (m *modelRun) actDelete(t *rapid.T) {
	c := m.drawCache(t, "cache")
	var files []string
	for p := range readDisk(t, c) {
		if m.owns(c, p) {
			files = append(files, p)
		}
	}
	if len(files) == 0 {
		t.Skip("no file to delete")
	}
	slices.Sort(files)
	p := rapid.SampledFrom(files).Draw(t, "file")
	if err := os.Remove(filepath.Join(c.dir, filepath.FromSlash(p))); err != nil {
		t.Fatal(err)
	}
	c.lastPull = nil
	m.logf("c%d delete %q mark=%s", c.id, p, m.mark(t, c, p, false))
}

func (m *modelRun) actDeleteDir(t *rapid.T) {
	c := m.drawCache(t, "cache")
	dir := m.drawModel(t, c)
	abs := filepath.Join(c.dir, filepath.FromSlash(dir))
	if _, err := os.Stat(abs); err != nil {
		t.Skip("model directory absent")
	}
	if err := os.RemoveAll(abs); err != nil {
		t.Fatal(err)
	}
	c.lastPull = nil
	m.logf("c%d deleteDir %q mark=%s", c.id, dir, m.mark(t, c, dir, true))
}

func (m *modelRun) actPush(t *rapid.T) {
	c := m.drawCache(t, "cache")
	if rapid.Bool().Draw(t, "paths") {
		p := m.drawPath(t, c)
		if rapid.Bool().Draw(t, "dirPath") {
			p = path.Dir(p)
		}
		covered := pathsPushCovers(c.marks, []string{p})
		for _, q := range pathsPushMarks([]string{p}) {
			c.marks[q] = true
		}
		m.logf("c%d push Paths=[%q]", c.id, p)
		m.doPush(c, covered, false, func(ctx context.Context) (syncer.Stats, error) {
			return pushPaths(ctx, c.s, []string{p})
		})
		return
	}
	m.logf("c%d push", c.id)
	m.doPush(c, copyMarks(c.marks), false, func(ctx context.Context) (syncer.Stats, error) {
		return c.s.Push(ctx, syncer.PushOptions{})
	})
}

func (m *modelRun) actPull(t *rapid.T) {
	c := m.drawCache(t, "cache")
	var scope []string
	switch rapid.SampledFrom([]string{"all", "model", "file"}).Draw(t, "scope") {
	case "model":
		scope = []string{m.drawAnyModel(t)}
	case "file":
		scope = []string{m.drawAnyModel(t) + "/" + rapid.SampledFrom(modelFileN).Draw(t, "file")}
	}
	m.logf("c%d pull scope=%q", c.id, scope)
	m.doPull(c, scope, false)
}

func (m *modelRun) drawAnyModel(t *rapid.T) string {
	return modelDir(rapid.IntRange(0, len(modelTypes)-1).Draw(t, "type"), rapid.IntRange(0, len(modelIDs)-1).Draw(t, "id"))
}

func (m *modelRun) actSync(t *rapid.T) {
	c := m.drawCache(t, "cache")
	m.logf("c%d sync", c.id)
	m.keepLazy = true // as the command line's sync (converge's syncs hydrate everything)
	m.sync(c)
	m.keepLazy = false
}

// sync is the command line's sync: pull everything, then push with a walk
// of the whole cache.
func (m *modelRun) sync(c *mcache) (pull, push opOut) {
	pull = m.doPull(c, nil, false)
	push = m.doPush(c, copyMarks(c.marks), true, func(ctx context.Context) (syncer.Stats, error) {
		return c.s.Push(ctx, syncer.PushOptions{All: true})
	})
	return pull, push
}

// actTwoPhase prepares a push, lets a peer write and push, then commits.
func (m *modelRun) actTwoPhase(t *rapid.T) {
	c := m.drawCache(t, "cache")
	d := m.drawCache(t, "peer")
	if d == c {
		t.Skip("peer is the preparing cache")
	}
	p := m.drawPath(t, d)
	m.logf("c%d prepare; c%d write+push %q; c%d commit", c.id, d.id, p, c.id)
	disk := readDisk(m.t, c)
	prepBefore := m.committed
	covered := copyMarks(c.marks)
	var pm *syncer.PushManifest
	o1 := m.op(c, func(ctx context.Context) (st syncer.Stats, err error) {
		pm, st, err = c.s.PreparePush(ctx, syncer.PushOptions{})
		return st, err
	})
	afterPrep := m.snapshot()
	m.expect(propAtomicCommit, sameEntries(afterPrep.Entries, prepBefore.Entries), "PreparePush changed the committed index")
	if o1.err != nil {
		m.expect(propNoSpuriousError, o1.fired || m.format != index.DefaultFormat && errors.Is(o1.err, index.ErrMigrateRequired), "PreparePush failed without an injected fault: %v", o1.err)
		c.failedPush = true
		for q := range covered {
			m.forgetUnder(c, q)
		}
		return
	}
	abs := filepath.Join(d.dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(abs, []byte(m.content(d, p)), 0o644); err != nil {
		t.Fatal(err)
	}
	d.lastPull = nil
	if err := d.s.MarkDirty(p); err != nil {
		t.Fatal(err)
	}
	d.marks[p] = true
	m.doPush(d, copyMarks(d.marks), false, func(ctx context.Context) (syncer.Stats, error) {
		return d.s.Push(ctx, syncer.PushOptions{})
	})
	m.checkedPush(c, prepBefore, disk, covered, false, o1.st.Conflicts, func(ctx context.Context) (syncer.Stats, error) {
		return c.s.CommitPush(ctx, pm, nil)
	})
}

// actMetaHydrate pulls metadata only, then hydrates one committed file.
func (m *modelRun) actMetaHydrate(t *rapid.T) {
	c := m.drawCache(t, "cache")
	m.logf("c%d pull MetadataOnly", c.id)
	m.doPull(c, nil, true)
	var cands []string
	for p := range m.committed.Entries {
		if !m.shared && m.ownerOf(p) == c.id {
			continue // hydrating one's own deleted file re-creates it by request
		}
		cands = append(cands, p)
	}
	if len(cands) == 0 {
		return
	}
	slices.Sort(cands)
	p := rapid.SampledFrom(cands).Draw(t, "hydrate")
	m.logf("c%d hydrate %q", c.id, p)
	before := readDisk(m.t, c)
	var ok bool
	o := m.op(c, func(ctx context.Context) (st syncer.Stats, err error) {
		ok, st, err = c.s.HydrateFile(ctx, p)
		return st, err
	})
	after := readDisk(m.t, c)
	r := m.committed.Entries[p]
	if o.fired {
		return
	}
	m.expect(propNoSpuriousError, o.err == nil, "HydrateFile(%q): %v", p, o.err)
	m.expect(propScopeEqualsSnapshot, ok, "HydrateFile(%q) = false for a committed path", p)
	if old, had := before[p]; had {
		m.expect(propPullKeepsLocal, after[p] == old, "HydrateFile replaced the local copy of %q", p)
		m.expect(propRequestBounds, o.reqs == 0, "HydrateFile of a present file sent %d requests", o.reqs)
		return
	}
	m.expect(propScopeEqualsSnapshot, after[p] == r.SHA256, "HydrateFile(%q) left %q, committed %q", p, short(after[p]), short(r.SHA256))
	if after[p] == r.SHA256 {
		c.base[p] = r.SHA256
		delete(c.lazy(), p)
		delete(c.unknown, p)
	}
}

func (m *modelRun) actGC(t *rapid.T) {
	m.logf("gc")
	before := m.committed
	rep, err := index.GC(m.ctx, m.store, index.GCOptions{OlderThan: 0})
	if err != nil {
		m.expect(propNoSpuriousError, false, "gc: %v", err)
	}
	after := m.snapshot()
	want := before.Seq
	if rep.Repack.Seq != 0 {
		want++ // a repack re-points entries by one commit, contents unchanged
		m.logf("gc repacked %d packs at seq %d", len(rep.Repack.Packs), rep.Repack.Seq)
	}
	m.expect(propAtomicCommit, after.Seq == want && sameEntries(after.Entries, before.Entries), "gc changed the committed index")
	m.committed = after
	m.history = []snapshotView{after}
}

func (m *modelRun) actRestart(t *rapid.T) {
	c := m.drawCache(t, "cache")
	m.logf("c%d restart", c.id)
	if err := c.s.Close(); err != nil {
		m.expect(propNoSpuriousError, false, "close: %v", err)
	}
	c.s = nil
	m.open(c)
}

func (m *modelRun) actFault(t *rapid.T) {
	c := m.drawCache(t, "cache")
	mode := rapid.SampledFrom([]wrap.Mode{wrap.FailBefore, wrap.FailAfter}).Draw(t, "mode")
	nth := rapid.IntRange(1, 12).Draw(t, "nth")
	c.fault = &wrap.Rule{Nth: nth, Mode: mode}
	figures.faults.Add(1)
	m.logf("c%d fault %v at request %d of its next operation", c.id, mode, nth)
}

// opOut is what one operation returned and cost.
type opOut struct {
	st    syncer.Stats
	err   error
	fired bool  // an injected fault fired during it
	reqs  int64 // requests that reached the store
	// faults counts the injected faults that fired; retried marks a
	// liveness operation that succeeded through them (model_liveness.go),
	// checked as fault-free but for its request count.
	faults  int
	retried bool
}

// op runs one operation of c with its armed fault, counting requests and
// checking that its sequence never goes backwards.
func (m *modelRun) op(c *mcache, fn func(ctx context.Context) (syncer.Stats, error)) opOut {
	if c.fault != nil {
		c.faults.Add(*c.fault)
		c.fault = nil
	}
	if m.live != nil {
		m.live.arm(c)
	}
	before := c.count.Counts()
	var o opOut
	o.st, o.err = fn(m.ctx)
	o.reqs = c.count.Counts().Sub(before).Total()
	o.faults = c.faults.Fired()
	if m.diskFull != nil {
		o.faults += int(m.diskFull.Load())
	}
	o.fired = o.faults > 0
	c.faults.Reset()
	if m.live != nil {
		o = m.live.settle(m, c, o)
	}
	if o.fired {
		figures.fired.Add(1)
		m.logf("  (fault fired: %v)", o.err)
	}
	if o.err != nil && !o.fired {
		m.logf("  (error: %v)", o.err)
	}
	if o.err != nil && o.fired && !errors.Is(o.err, wrap.ErrInjected) {
		m.logf("  (error after fault is not the injected one: %v)", o.err)
	}
	st, err := c.s.Status(m.ctx, false)
	if err != nil {
		m.t.Fatalf("status: %v", err)
	}
	m.expect(propSeqMonotonic, st.SeenSeq >= c.seen, "cache %d seen seq went from %d to %d", c.id, c.seen, st.SeenSeq)
	c.seen = max(c.seen, st.SeenSeq)
	m.checkRemembered(c, o, st)
	return o
}

func copyMarks(marks map[string]bool) map[string]bool {
	out := make(map[string]bool, len(marks))
	for k := range marks {
		out[k] = true
	}
	return out
}

// forgetUnder makes every path under q unknown in c's base: an
// interrupted push may or may not have settled it.
func (m *modelRun) forgetUnder(c *mcache, q string) {
	for p := range m.allPaths(c) {
		if inDir(p, q) {
			c.unknown[p] = true
		}
	}
}
