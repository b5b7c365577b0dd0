package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"pgregory.net/rapid"

	"github.com/siltsync/silt/internal/localhook"
	"github.com/siltsync/silt/syncer"
)

// The local writer (issue 19): a user editing files of a cache while a
// pull, hydrate or resolve --take-remote of it runs. The write fires at a
// chosen point of the operation's installs (internal/localhook), so the
// interleaving is drawn by rapid and replays exactly, with no sleep.
// Property: every local write that returned is in its file or in a copy
// the cache kept (a conflict's Copy or a backup that Status lists), never
// gone. Shared mode only: a writer edits paths other caches push.

const propLocalWriteKept property = "every local write that returned is in its file or in a kept copy"

// writerFigures counts the local writer's steps, for RELIABILITY.md.
var writerFigures struct {
	steps, writes, inPlace, inCopy atomic.Int64
}

func writerTotals() string {
	f := &writerFigures
	return fmt.Sprintf("local writer: %d steps, %d writes returned (%d in place, %d in kept copies)", f.steps.Load(), f.writes.Load(), f.inPlace.Load(), f.inCopy.Load())
}

// writerKinds are the writes the actor makes. "fdAppend" opens the file
// before the install's rename and writes after it (an editor holding the
// file open); "renameSave" writes a new file and renames it over the path.
var writerKinds = []string{"append", "rewrite", "fdAppend", "renameSave"}

// localWriter is one armed write: kind, at stage of the install of target
// (or, with first, of whatever the operation installs first).
type localWriter struct {
	m      *modelRun
	c      *mcache
	target string
	first  bool
	stage  localhook.Stage
	kind   string
	data   string

	mu    sync.Mutex
	fd    *os.File
	fired bool
	got   string // sha256 of the written inode's content after the write
	err   error
}

func (m *modelRun) writerActions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"writerPull":       func(t *rapid.T) { m.actWriter(t, "pull") },
		"writerHydrate":    func(t *rapid.T) { m.actWriter(t, "hydrate") },
		"writerTakeRemote": func(t *rapid.T) { m.actWriter(t, "takeRemote") },
	}
}

// actWriter lets a peer push a new version of a path, then runs op on
// another cache with a local write armed at a drawn point of it.
func (m *modelRun) actWriter(t *rapid.T, op string) {
	c := m.drawCache(t, "cache")
	d := m.drawCache(t, "peer")
	if c == d {
		t.Skip("peer is the writing cache")
	}
	p := m.drawPath(t, d)
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
	m.logf("c%d write+push %q", d.id, p)
	m.doPush(d, copyMarks(d.marks), false, func(ctx context.Context) (syncer.Stats, error) {
		return d.s.Push(ctx, syncer.PushOptions{})
	})
	w := &localWriter{m: m, c: c, target: p, kind: rapid.SampledFrom(writerKinds).Draw(t, "kind")}
	w.stage = rapid.SampledFrom([]localhook.Stage{localhook.BeforeCheck, localhook.BeforeRename, localhook.AfterRename}).Draw(t, "stage")
	if w.kind == "fdAppend" {
		w.stage = localhook.BeforeRename // opened there, written after the rename
	}
	if w.kind == "renameSave" && w.stage == localhook.BeforeRename {
		// A rename over the path between the check and the install's own
		// rename is the documented limit of promise 5 (RELIABILITY.md).
		w.stage = localhook.BeforeCheck
	}
	disk := readDisk(m.t, c)
	switch op {
	case "pull":
		var scope []string
		switch rapid.SampledFrom([]string{"all", "model", "file"}).Draw(t, "scope") {
		case "model":
			scope = []string{path.Dir(p)}
		case "file":
			scope = []string{p}
		}
		if rapid.Bool().Draw(t, "otherTarget") {
			// A write to another file in scope, at the first install.
			var in []string
			for q := range disk {
				if len(scope) == 0 || inDir(q, scope[0]) {
					in = append(in, q)
				}
			}
			if len(in) > 0 {
				slices.Sort(in)
				w.target, w.first = rapid.SampledFrom(in).Draw(t, "target"), true
			}
		}
		w.data = m.content(c, w.target)
		m.logf("c%d pull scope=%q with %s of %q at %v of %s", c.id, scope, w.kind, w.target, w.stage, w.where())
		c.unknown[w.target] = true // a local edit whose outcome the oracle leaves open
		unset := localhook.Set(c.s.Root(), w.hook)
		m.doPull(c, scope, false)
		unset()
	case "hydrate":
		if _, had := disk[p]; had {
			t.Skip("the file to hydrate is present")
		}
		w.kind = "create"
		w.data = m.content(c, p)
		m.logf("c%d hydrate %q with a create at %v", c.id, p, w.stage)
		c.unknown[p] = true
		unset := localhook.Set(c.s.Root(), w.hook)
		o := m.op(c, func(ctx context.Context) (st syncer.Stats, err error) {
			_, st, err = c.s.HydrateFile(ctx, p)
			return st, err
		})
		unset()
		m.expect(propNoSpuriousError, o.err == nil || o.fired, "HydrateFile(%q) with a local writer: %v", p, o.err)
	case "takeRemote":
		if _, had := disk[p]; !had {
			t.Skip("no local copy to replace")
		}
		w.data = m.content(c, p)
		m.logf("c%d resolve --take-remote --force %q with %s at %v", c.id, p, w.kind, w.stage)
		c.unknown[p] = true
		unset := localhook.Set(c.s.Root(), w.hook)
		o := m.op(c, func(ctx context.Context) (syncer.Stats, error) {
			return c.s.Resolve(ctx, syncer.ResolveOptions{Paths: []string{p}, Keep: syncer.TakeRemote, Force: true})
		})
		unset()
		m.expect(propNoSpuriousError, o.err == nil || o.fired, "resolve --take-remote %q with a local writer: %v", p, o.err)
		if o.err == nil {
			// Taking the remote settles the path: the syncer drops its
			// mark, so a later unmarked deletion of it is not pushed.
			delete(c.marks, p)
		}
		c.lastPull = nil
	}
	m.checkWriter(w)
}

func (w *localWriter) where() string {
	if w.first {
		return "the first install"
	}
	return "its install"
}

// hook runs on the operation's goroutine at each install point.
func (w *localWriter) hook(p string, s localhook.Stage) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fired || w.err != nil || (!w.first && p != w.target) {
		return
	}
	name := filepath.Join(w.c.dir, filepath.FromSlash(w.target))
	switch {
	case w.kind == "fdAppend" && w.fd == nil && s == localhook.BeforeRename:
		w.fd, w.err = os.OpenFile(name, os.O_RDWR|os.O_APPEND, 0)
		if errors.Is(w.err, os.ErrNotExist) {
			w.err = nil // nothing to hold open: no write
			w.fired = true
		}
	case w.kind == "fdAppend" && w.fd != nil && s == localhook.AfterRename:
		w.got, w.err = writeAndRead(w.fd, w.data)
		w.err = errors.Join(w.err, w.fd.Close())
		w.fired = true
	case w.kind != "fdAppend" && s == w.stage:
		w.got, w.err = w.write(name)
		w.fired = true
	}
}

// write makes the drawn write at name and returns the sha256 of what the
// written file holds right after it.
func (w *localWriter) write(name string) (string, error) {
	switch w.kind {
	case "append":
		f, err := os.OpenFile(name, os.O_RDWR|os.O_APPEND, 0)
		if errors.Is(err, os.ErrNotExist) {
			return "", nil // the path is absent at this point: no write made
		}
		if err != nil {
			return "", err
		}
		defer f.Close()
		return writeAndRead(f, w.data)
	case "rewrite", "create":
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return "", err
		}
		return shaOf([]byte(w.data)), os.WriteFile(name, []byte(w.data), 0o644)
	case "renameSave":
		tmp := name + ".writer-tmp"
		if err := os.WriteFile(tmp, []byte(w.data), 0o644); err != nil {
			return "", err
		}
		return shaOf([]byte(w.data)), os.Rename(tmp, name)
	}
	return "", fmt.Errorf("unknown write %q", w.kind)
}

// writeAndRead appends data through f and returns the sha256 of f's whole
// content after it.
func writeAndRead(f *os.File, data string) (string, error) {
	if _, err := f.WriteString(data); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<40))
	return shaOf(b), err
}

// checkWriter checks the property for the write w made, if it made one.
func (m *modelRun) checkWriter(w *localWriter) {
	if w.err != nil {
		m.t.Fatalf("the local writer failed: %v\nsequence: %s", w.err, m.sequence())
	}
	writerFigures.steps.Add(1)
	disk := readDisk(m.t, w.c)
	if w.got != "" {
		// A local edit the oracle does not predict the fate of: either
		// outcome of later operations is accepted for the path.
		w.c.unknown[w.target] = true
		w.c.lastPull = nil
	}
	if r := sha(m.committed, w.target); r != "" && disk[w.target] == r {
		// The install won (any write is in a kept copy): the cache now
		// records the committed entry, as after a plain pull or hydrate.
		w.c.base[w.target] = r
		delete(w.c.unknown, w.target)
		delete(w.c.lazy(), w.target)
	}
	if !w.fired || w.got == "" {
		return
	}
	writerFigures.writes.Add(1)
	if m.written[w.target] == nil {
		m.written[w.target] = map[string]bool{}
	}
	m.written[w.target][w.got] = true
	m.logf("  (local write of %q returned: %s)", w.target, short(w.got))
	if disk[w.target] == w.got {
		writerFigures.inPlace.Add(1)
		return
	}
	st, err := w.c.s.Status(m.ctx, false)
	if err != nil {
		m.t.Fatalf("status: %v", err)
	}
	var copies []string
	for _, cf := range st.Conflicts {
		if cf.Path == w.target && cf.Copy != "" {
			copies = append(copies, cf.Copy)
		}
	}
	for _, b := range st.Backups {
		if b.Path == w.target {
			copies = append(copies, b.Copy)
		}
	}
	for _, cp := range copies {
		if data, err := os.ReadFile(filepath.Join(w.c.dir, filepath.FromSlash(cp))); err == nil && shaOf(data) == w.got {
			writerFigures.inCopy.Add(1)
			return
		}
	}
	m.expect(propLocalWriteKept, false, "cache %d: the %s of %q (%s) is neither in the file (%s) nor in a kept copy %v",
		w.c.id, w.kind, w.target, short(w.got), short(readDisk(m.t, w.c)[w.target]), copies)
}
