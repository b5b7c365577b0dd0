package conformance

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"pgregory.net/rapid"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// The garbage collector as a concurrent actor, on a clock the model
// controls. Every object the model's store holds is stamped by a fake
// clock (wrap.Clocked) that moves only by the "clock" step, so hours pass
// between steps at no cost. The "gcConcurrent" step runs index.GC with a
// grace period of gcGrace on that clock, pauses it before a drawn request
// (before its listings, between its mark and its sweep, between two
// deletes), and meanwhile runs 1 to 3 steps of the other actors: a push
// that restores older contents (a file or a whole model directory as an
// older snapshot had it, so objects and packs already in the store are
// found again), a pull, a reader of an older snapshot, the clock moving.
// Then the gc goes on. The property, checked after every step: every entry
// of every snapshot that was current within the grace period of the last
// gc's start (and, as always, of the current one) is readable.

// gcGrace is the grace period of the model's concurrent gc.
const gcGrace = time.Hour

// propGCKeepsYoung is the gc actor's property.
const propGCKeepsYoung = "every entry of every snapshot current within the grace period is readable, whatever a concurrent gc does"

// gcModel is the model's clock and what the gc actor needs.
type gcModel struct {
	clock  *wrap.Clock
	bodies map[string]string    // sha256 -> a content the model wrote
	seenAt map[uint64]time.Time // seq -> when the model first saw it current
	all    []snapshotView       // every snapshot seen, to restore from
}

// saw records v, a snapshot the model sees current for the first time.
func (g *gcModel) saw(v snapshotView) {
	g.seenAt[v.Seq] = g.clock.Now()
	g.all = append(g.all, v)
}

// init stamps store with the model's clock and returns it.
func (g *gcModel) init(store backend.Backend) backend.Backend {
	g.clock = wrap.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	g.bodies = map[string]string{}
	g.seenAt = map[uint64]time.Time{}
	return wrap.Clocked(store, g.clock)
}

var gcFigures struct{ runs, paused, inner, restores, repacks, history atomic.Int64 }

func (m *modelRun) gcActions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"clock":        m.actClock,
		"gcConcurrent": m.actGCConcurrent,
		"restore":      m.actRestore,
	}
}

func (m *modelRun) actClock(t *rapid.T) {
	d := rapid.SampledFrom([]time.Duration{time.Minute, 30 * time.Minute, gcGrace + time.Minute, 3 * gcGrace}).Draw(t, "advance")
	m.gc.clock.Advance(d)
	m.logf("clock +%v", d)
}

// gcPause holds the request numbered at (or, with at 0, the first
// Delete: the gc has marked and decided) until released.
type gcPause struct {
	backend.Backend
	at      int64
	n       atomic.Int64
	reached chan struct{}
	release chan struct{}
}

func (p *gcPause) hold() {
	if p.at > 0 && p.n.Add(1) == p.at {
		close(p.reached)
		<-p.release
	}
}

func (p *gcPause) Get(ctx context.Context, key string, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	p.hold()
	return p.Backend.Get(ctx, key, opts)
}

func (p *gcPause) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	p.hold()
	return p.Backend.Put(ctx, key, body, size, cond)
}

func (p *gcPause) Delete(ctx context.Context, key string, cond backend.Cond) error {
	if p.at == 0 && p.n.Add(1) == 1 {
		close(p.reached)
		<-p.release
	}
	p.hold()
	return p.Backend.Delete(ctx, key, cond)
}

func (p *gcPause) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	p.hold()
	return p.Backend.Stat(ctx, key)
}

func (p *gcPause) List(ctx context.Context, prefix string, opts backend.ListOptions, fn func([]backend.ObjectInfo) error) error {
	p.hold()
	return p.Backend.List(ctx, prefix, opts, fn)
}

func (m *modelRun) actGCConcurrent(t *rapid.T) {
	if d := rapid.SampledFrom([]time.Duration{0, gcGrace + time.Minute, 3 * gcGrace}).Draw(t, "age"); d > 0 {
		m.gc.clock.Advance(d)
	}
	var at int64 // before its sweep
	if rapid.Bool().Draw(t, "pauseAnywhere") {
		at = rapid.Int64Range(1, 40).Draw(t, "pauseAt")
	}
	below := -1.0
	if rapid.Bool().Draw(t, "repack") {
		below = 0 // the default threshold
	}
	start := m.gc.clock.Now()
	p := &gcPause{Backend: m.store, at: at, reached: make(chan struct{}), release: make(chan struct{})}
	m.logf("gc grace=%v repack=%v paused at its request %d (0: its first delete) (clock %s)", gcGrace, below == 0, at, start.Format("15:04"))
	gcFigures.runs.Add(1)
	var rep index.GCReport
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		rep, err = index.GC(m.ctx, p, index.GCOptions{OlderThan: gcGrace, Now: m.gc.clock.Now, RepackBelow: below})
	}()
	select {
	case <-p.reached:
		released := false
		defer func() { // a failing step still lets the gc finish
			if !released {
				close(p.release)
				<-done
			}
		}()
		gcFigures.paused.Add(1)
		m.committed = m.snapshot() // a repack may have committed (same entries)
		for range rapid.IntRange(1, 3).Draw(t, "beside") {
			gcFigures.inner.Add(1)
			switch rapid.SampledFrom([]string{"restore", "restore", "pull", "readOld", "clock", "write+push"}).Draw(t, "actor") {
			case "restore":
				m.restore(t)
			case "pull":
				m.actPull(t)
			case "readOld":
				m.readYoung(start)
			case "clock":
				m.actClock(t)
			default:
				m.actWrite(t)
				m.actPush(t)
			}
		}
		released = true
		close(p.release)
		<-done
	case <-done:
	}
	if err != nil {
		m.expect(propNoSpuriousError, false, "gc: %v", err)
	}
	if rep.Repack.Seq != 0 {
		gcFigures.repacks.Add(1)
	}
	gcFigures.history.Add(int64(len(rep.History)))
	m.logf("  gc removed %d objects, %d packs, %d shards, %d history copies; kept %d recent", len(rep.Data), len(rep.Packs), len(rep.Shards), len(rep.History), rep.Recent)
	// Snapshots superseded before the gc's cutoff may be collected: the
	// history property holds for the others.
	cutoff := start.Add(-gcGrace)
	var keep []snapshotView
	for i, v := range m.history {
		if i+1 < len(m.history) && !m.gc.seenAt[m.history[i+1].Seq].After(cutoff) {
			continue
		}
		keep = append(keep, v)
	}
	m.history = keep
	m.committed = m.snapshot()
}

// readYoung reads every entry of every snapshot current within the grace
// period before start, as a reader of an older snapshot does.
func (m *modelRun) readYoung(start time.Time) {
	m.logf("read snapshots current after %s", start.Add(-gcGrace).Format("15:04"))
	cutoff := start.Add(-gcGrace)
	for i, old := range m.history {
		if i+1 < len(m.history) && !m.gc.seenAt[m.history[i+1].Seq].After(cutoff) {
			continue
		}
		v, err := readSnapshotAt(m.ctx, m.store, old.Seq)
		if !m.expect(propGCKeepsYoung, err == nil, "snapshot seq %d: %v", old.Seq, err) {
			continue
		}
		for p, e := range v.Entries {
			_, err := readEntry(m.ctx, m.store, p, e)
			m.expect(propGCKeepsYoung, err == nil, "snapshot seq %d entry %q: %v", old.Seq, p, err)
		}
	}
}

// actRestore writes back older contents and pushes them: one file as it
// was, or a whole model directory as an older snapshot had it (which
// re-creates its pack when it was pushed at once).
func (m *modelRun) actRestore(t *rapid.T) {
	if !m.restore(t) {
		t.Skip("nothing to restore")
	}
}

// restore is actRestore, false when there is nothing to restore.
func (m *modelRun) restore(t *rapid.T) bool {
	if len(m.gc.all) == 0 {
		return false
	}
	c := m.drawCache(t, "cache")
	old := m.gc.all[rapid.IntRange(0, len(m.gc.all)-1).Draw(t, "from")]
	var owned []string
	for p := range old.Entries {
		if m.owns(c, p) {
			owned = append(owned, p)
		}
	}
	if len(owned) == 0 {
		return false
	}
	slices.Sort(owned)
	one := rapid.SampledFrom(owned).Draw(t, "file")
	dir := path.Dir(one)
	paths := []string{one}
	if rapid.Bool().Draw(t, "wholeDir") {
		paths = nil
		for _, p := range owned {
			if path.Dir(p) == dir {
				paths = append(paths, p)
			}
		}
	}
	for _, p := range paths {
		body, ok := m.gc.bodies[old.Entries[p].SHA256]
		if !ok {
			return false
		}
		abs := filepath.Join(c.dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := c.s.MarkDirty(p); err != nil {
			m.t.Fatalf("MarkDirty(%q): %v", p, err)
		}
		c.marks[p] = true
	}
	c.lastPull = nil
	gcFigures.restores.Add(1)
	m.logf("c%d restore %d files of %q from seq %d, push", c.id, len(paths), dir, old.Seq)
	m.doPush(c, copyMarks(c.marks), false, func(ctx context.Context) (syncer.Stats, error) {
		return c.s.Push(ctx, syncer.PushOptions{})
	})
	return true
}

// gcTotals is the gc actor's line of the totals.
func gcTotals() string {
	return fmt.Sprintf("gc actor: %d concurrent gc runs, %d paused with other actors beside, %d steps beside a paused gc, %d restores, %d repacks, %d history objects deleted (history copies; log entries, checkpoint roots and pages)",
		gcFigures.runs.Load(), gcFigures.paused.Load(), gcFigures.inner.Load(), gcFigures.restores.Load(), gcFigures.repacks.Load(), gcFigures.history.Load())
}
