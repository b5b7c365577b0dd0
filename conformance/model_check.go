package conformance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"pgregory.net/rapid"

	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/serve"
	"github.com/siltsync/silt/syncer"
)

// property names one promise the model checks after every step.
type property string

// The properties of issue 9, point 2. Each failure names one.
const (
	propNoSpuriousConflict  property = "owned paths: no conflict that was not injected"
	propNoSpuriousError     property = "no error that was not injected"
	propPullNoError         property = "a pull never fails without an injected fault"
	propPullKeepsOwn        property = "owned paths: a pull never changes a path its own cache writes"
	propPullKeepsLocal      property = "a pull never reverts a local edit nor re-creates a local deletion"
	propScopeEqualsSnapshot property = "a pull makes every unmodified path in scope equal to the snapshot"
	propNoNeedlessDownload  property = "a pull downloads only what differs (push then pull downloads nothing)"
	propAtomicCommit        property = "a push commits all of its marked changes or none; nothing else commits"
	propNoLostWrite         property = "shared paths: no push silently overwrites a commit it never saw"
	propNoPhantom           property = "every committed path holds a write some cache made"
	propReadable            property = "every entry of the committed snapshot is readable and matches its sha256"
	propReadableHistory     property = "every entry of every snapshot since the last gc is readable"
	propSeqMonotonic        property = "a cache's seen sequence never goes backwards"
	propRequestBounds       property = "nothing dirty pushes with 0 requests; an unchanged scope pulls with <= 2 (log format: <= 3 + commits missed)"
	propConverges           property = "round-robin sync goes quiet and every cache equals the snapshot"
	propDeletionLosesToEdit property = "a local deletion the remote side overtook: the pull installs the remote edit"
	propPullIncompleteShown property = "after a pull failed, status says so until a whole pull succeeds"
	propDiskFullTyped       property = "a pull the full disk stopped fails with ENOSPC (errors.Is), nothing lost"
)

// failsOnFormat1 lists the properties today's engine breaks (see
// testdata/model-findings.md); they are checked only when format1 is false.
// A violation of one of them while format1 is true is logged, counted as
// tolerated, and the oracle follows what really happened.
var failsOnFormat1 = map[property]bool{
	propPullKeepsOwn:       true, // F1
	propPullKeepsLocal:     true, // F1
	propPullNoError:        true, // F2
	propNoSpuriousConflict: true, // F4
	propNoLostWrite:        true, // F5, F6
}

// failsOnFormat1Shared lists the properties today's engine breaks only with
// shared paths, rarely and after long sequences (F9, not yet minimised).
var failsOnFormat1Shared = map[property]bool{
	propScopeEqualsSnapshot: true, // F9
}

func (m *modelRun) propertyOn(p property) bool {
	return !format1 || !(failsOnFormat1[p] || m.shared && failsOnFormat1Shared[p])
}

// expect fails the sequence when ok is false and p is checked.
func (m *modelRun) expect(p property, ok bool, format string, args ...any) bool {
	if ok {
		return true
	}
	msg := fmt.Sprintf(format, args...)
	if m.trial != nil {
		*m.trial = append(*m.trial, fmt.Sprintf("%s: %s", p, msg)) // one serial order tried: see model_conc.go
		return false
	}
	// Once a format-1 failure was tolerated, the engine's state has left
	// what the oracle can predict (a resurrected file, an undone
	// deletion), so on format 1 the rest of that sequence is tolerated too.
	if !m.propertyOn(p) || (format1 && m.tainted) {
		figures.tolerated.Add(1)
		m.tainted = true
		m.t.Logf("tolerated on format 1: %s: %s", p, msg)
		return false
	}
	m.t.Fatalf("model property violated: %s: %s\nsequence: %s", p, msg, m.sequence())
	return false
}

// snapshot reads the committed snapshot from the bucket and records it;
// readability is checked by checkAlways.
func (m *modelRun) snapshot() snapshotView {
	v, err := readSnapshot(m.ctx, m.store)
	if err != nil {
		m.t.Fatalf("the committed index is unreadable: %v\nsequence: %s", err, m.sequence())
	}
	if err := checkIndexStructure(m.ctx, m.store); err != nil {
		m.t.Fatalf("the committed index is torn: %v\nsequence: %s", err, m.sequence())
	}
	if len(m.history) == 0 || m.history[len(m.history)-1].Seq != v.Seq {
		m.history = append(m.history, v)
		m.gc.saw(v)
	}
	return v
}

// checkAlways runs after every step: the committed snapshot is readable
// (format 1 overwrites committed objects in place, so there it is checked
// only while no push is half done), every committed path holds a write
// some cache made, and, from format 2, every snapshot since the last gc is
// still readable.
func (m *modelRun) checkAlways(*rapid.T) {
	cur := m.snapshot()
	m.committed = cur
	inFlight := false
	for _, c := range m.caches {
		inFlight = inFlight || c.failedPush
	}
	if !format1 || !inFlight {
		for _, p := range slices.Sorted(maps.Keys(cur.Entries)) {
			_, err := readEntry(m.ctx, m.store, p, cur.Entries[p])
			m.expect(propReadable, err == nil, "seq %d entry %q: %v", cur.Seq, p, err)
		}
	}
	for p, e := range cur.Entries {
		m.expect(propNoPhantom, m.written[p][e.SHA256], "committed %q holds bytes no cache wrote", p)
	}
	if format1 {
		return
	}
	for _, old := range m.history {
		v, err := readSnapshotAt(m.ctx, m.store, old.Seq)
		if !m.expect(propReadableHistory, err == nil, "snapshot seq %d: %v", old.Seq, err) {
			continue
		}
		for p, e := range v.Entries {
			_, err := readEntry(m.ctx, m.store, p, e)
			m.expect(propReadableHistory, err == nil, "snapshot seq %d entry %q: %v", old.Seq, p, err)
		}
	}
}

// doPush runs a push of c and checks it against what its marks predict.
func (m *modelRun) doPush(c *mcache, covered map[string]bool, all bool, fn func(context.Context) (syncer.Stats, error)) opOut {
	return m.checkedPush(c, m.committed, readDisk(m.t, c), covered, all, nil, fn)
}

// checkedPush runs fn (a push or a commit of c) and checks the commit:
// prepBefore is the snapshot its plan was made against, disk the cache as
// it was then, covered the marks it settles.
func (m *modelRun) checkedPush(c *mcache, prepBefore snapshotView, disk map[string]string, covered map[string]bool, all bool, prepConflicts []syncer.Conflict, fn func(context.Context) (syncer.Stats, error)) opOut {
	before := m.committed
	o := m.op(c, fn)
	after := m.snapshot()
	m.committed = after
	return m.checkPush(c, prepBefore, before, after, disk, covered, all, prepConflicts, o)
}

// checkPush checks the outcome o of a push of c that found the snapshot
// before and left after (see checkedPush), and updates what c knows.
func (m *modelRun) checkPush(c *mcache, prepBefore, before, after snapshotView, disk map[string]string, covered map[string]bool, all bool, prepConflicts []syncer.Conflict, o opOut) opOut {
	nothing := len(covered) == 0 && !all
	conflicts := map[string]bool{}
	for _, cf := range append(slices.Clone(prepConflicts), o.st.Conflicts...) {
		conflicts[cf.Path] = true
	}
	if nothing && !o.fired && !o.retried {
		m.expect(propRequestBounds, o.reqs == 0, "push with nothing dirty sent %d requests", o.reqs)
	}
	isCovered := func(p string) bool {
		if all {
			return true
		}
		for q := range covered {
			if inDir(p, q) {
				return true
			}
		}
		return false
	}
	// expected is the index this push must leave; mustConflict the paths
	// it must report (a write it may not make).
	expected := map[string]string{}
	for p, e := range before.Entries {
		expected[p] = e.SHA256
	}
	mustConflict := map[string]bool{}
	maybe := map[string]bool{} // unsure paths: either outcome
	for p := range m.allPaths(c) {
		if !isCovered(p) || !m.owns(c, p) {
			continue
		}
		x, r0, r := disk[p], sha(prepBefore, p), sha(before, p)
		if x == r0 || (x == "" && c.lazy()[p]) || (x == c.base[p] && !c.unknown[p]) {
			continue // nothing changed locally, or an absence that is no evidence
		}
		switch {
		case c.unknown[p]:
			maybe[p] = true
		case r != r0:
			mustConflict[p] = true // a peer committed it after the plan
		case !m.shared || c.base[p] == r0:
			setOrDelete(expected, p, x)
		default:
			mustConflict[p] = true
		}
	}
	got := map[string]string{}
	for p, e := range after.Entries {
		got[p] = e.SHA256
	}
	// A bucket an older silt wrote refuses every commit until it is
	// migrated, before anything is written.
	refused := m.format != index.DefaultFormat && errors.Is(o.err, index.ErrMigrateRequired)
	if m.format != index.DefaultFormat && o.err == nil {
		m.expect(propMigrate, after.Seq == before.Seq, "a push committed seq %d to a bucket of format %d", after.Seq, m.format)
	}
	switch {
	case refused:
		m.expect(propMigrate, after.Seq == before.Seq && sameMod(got, shaMap(before), nil), "a push refused for the bucket's format %d changed the index: %s", m.format, diffMaps(shaMap(before), got))
	case o.fired:
		// Atomic: all of it or none of it.
		ok := sameMod(got, shaMap(before), maybe) || sameMod(got, expected, maybe)
		m.expect(propAtomicCommit, ok, "a failed push left a partial commit: %s", diffMaps(shaMap(before), got))
	default:
		m.expect(propNoSpuriousError, o.err == nil, "push: %v", o.err)
		for p := range mustConflict {
			// Kept (and reported, or left for a later push) is right;
			// replaced is a lost write.
			if !m.expect(propNoLostWrite, got[p] == sha(before, p), "push of %q replaced a commit it never saw (base %s, committed %s, now %s, conflict reported %v)", p, short(c.base[p]), short(sha(before, p)), short(got[p]), conflicts[p]) {
				maybe[p] = true
			}
		}
		for p := range m.allPaths(c) {
			// A change this push had no local edit for, over a commit this
			// cache never synced, replaced a peer's write or deletion.
			if m.shared && !maybe[p] && got[p] != expected[p] && expected[p] == sha(before, p) && c.base[p] != sha(before, p) {
				m.expect(propNoLostWrite, false, "push of %q replaced a peer's commit (base %s, committed %s, now %s)", p, short(c.base[p]), short(sha(before, p)), short(got[p]))
				maybe[p] = true
			}
		}
		m.expect(propAtomicCommit, sameMod(got, expected, maybe), "push committed %s", diffMaps(expected, got))
	}
	if !m.shared {
		m.expect(propNoSpuriousConflict, len(o.st.Conflicts)+len(prepConflicts) == 0, "push reported conflicts %v", append(prepConflicts, o.st.Conflicts...))
	}
	// What the cache now knows.
	if o.err != nil {
		c.failedPush = true
		for q := range covered {
			m.forgetUnder(c, q)
		}
		if all {
			m.forgetUnder(c, "")
		}
		return o
	}
	c.failedPush = false
	for q := range c.marks {
		if all || isCovered(q) {
			delete(c.marks, q) // settled; marks outside a Paths push stay
		}
	}
	for p := range conflicts {
		c.marks[p] = true
	}
	for p := range m.allPaths(c) {
		if !isCovered(p) || conflicts[p] || (disk[p] == "" && c.lazy()[p]) {
			continue
		}
		if got[p] == disk[p] {
			c.base[p] = disk[p]
			delete(c.unknown, p)
			if disk[p] != "" {
				delete(c.lazy(), p) // the committed file is this cache's now
			}
		}
	}
	return o
}

// doPull runs a pull of c and checks what it did to the cache.
func (m *modelRun) doPull(c *mcache, scope []string, meta bool) opOut {
	snap := m.committed
	before := readDisk(m.t, c)
	o := m.op(c, func(ctx context.Context) (syncer.Stats, error) {
		return c.s.Pull(ctx, syncer.PullOptions{Scope: scope, MetadataOnly: meta, KeepLazy: m.keepLazy})
	})
	after := readDisk(m.t, c)
	now := m.snapshot()
	m.committed = now
	m.expect(propAtomicCommit, now.Seq == snap.Seq && sameEntries(now.Entries, snap.Entries), "a pull changed the committed index")
	if st, err := c.s.Status(context.Background(), false); err == nil {
		// A full disk left "up to date" on a cache missing files (issue 37).
		switch {
		case o.err != nil && o.fired:
			m.expect(propPullIncompleteShown, st.PullIncomplete, "a pull failed (%v) and status does not say so", o.err)
		case o.err == nil && len(scope) == 0:
			m.expect(propPullIncompleteShown, !st.PullIncomplete, "a whole pull succeeded and status still says a pull stopped part way")
		}
	}
	return m.checkPull(c, scope, meta, snap, before, after, o)
}

// checkPull checks the outcome o of a pull of c against the snapshot snap
// it read, the cache before and after it, and updates what c knows.
func (m *modelRun) checkPull(c *mcache, scope []string, meta bool, snap snapshotView, before, after map[string]string, o opOut) opOut {
	inScope := func(p string) bool {
		if len(scope) == 0 {
			return true
		}
		return inDir(p, scope[0])
	}
	conflicts := map[string]bool{}
	for _, cf := range o.st.Conflicts {
		conflicts[cf.Path] = true
	}
	if !m.shared {
		m.expect(propNoSpuriousConflict, len(o.st.Conflicts) == 0 || o.fired, "pull reported conflicts %v", o.st.Conflicts)
	}
	if !o.fired {
		m.expect(propPullNoError, o.err == nil, "pull: %v", o.err)
	}
	differ := 0
	for p := range m.allPaths(c) {
		if !inScope(p) {
			if before[p] != after[p] {
				m.expect(propPullKeepsLocal, false, "pull of %v changed %q outside its scope", scope, p)
			}
			continue
		}
		r, xb, xa, b := sha(snap, p), before[p], after[p], c.base[p]
		if r != "" && xb != r {
			differ++
		}
		if !m.shared && m.ownerOf(p) == c.id {
			m.expect(propPullKeepsOwn, xa == xb, "pull changed own %q from %s to %s (committed %s)", p, short(xb), short(xa), short(r))
		}
		if !c.unknown[p] {
			modified := xb != b && !(xb == "" && c.lazy()[p])
			switch {
			case modified && xb != "":
				m.expect(propPullKeepsLocal, xa == xb, "pull reverted the local edit of %q to %s", p, short(xa))
			case modified && r == b:
				m.expect(propPullKeepsLocal, xa == "", "pull re-created %q, deleted locally", p)
			case modified && xb == "" && r != "" && b != "" && !o.fired && o.err == nil:
				m.expect(propDeletionLosesToEdit, xa == r, "after pull %v, %q (deleted locally, changed remotely) is %s, committed %s", scope, p, short(xa), short(r))
			case !modified && !conflicts[p] && !o.fired && o.err == nil:
				// KeepLazy keeps a lazy record lazy: one the oracle knows, or one
				// a MetadataOnly pull that a fault interrupted may have left.
				keptLazy := m.keepLazy && serve.DefaultLazy(p) && (c.lazy()[p] || b == "")
				lazyOK := (meta && serve.DefaultLazy(p) || keptLazy) && xa == "" && xb == ""
				m.expect(propScopeEqualsSnapshot, xa == r || lazyOK, "after pull %v, %q is %s, committed %s", scope, p, short(xa), short(r))
			}
		}
		switch {
		case conflicts[p]:
		case xa == r && xa != "":
			c.base[p] = r
			delete(c.lazy(), p)
			delete(c.unknown, p)
		case xa == "" && r == "" && (xb != "" || !c.unknown[p] && c.base[p] == "" || o.err == nil):
			// Absent on both sides after a pull that read p's shard (one
			// that succeeded did, even when a retried fault fired in it):
			// the engine drops its record (both deleted), so the next
			// write of p is a new file (F14).
			delete(c.base, p)
			delete(c.lazy(), p)
			delete(c.unknown, p)
		case xa == "" && r != "" && meta && serve.DefaultLazy(p) && !o.fired && o.err == nil && xb == "" && (c.base[p] == "" || c.lazy()[p]):
			c.base[p] = r
			c.lazy()[p] = true
			delete(c.unknown, p)
		case xa == "" && r != "" && m.keepLazy && serve.DefaultLazy(p) && (c.lazy()[p] || c.base[p] == "") && xb == "" && !o.fired && o.err == nil:
			c.base[p] = r // KeepLazy: the lazy record follows the entry
			c.lazy()[p] = true
			delete(c.unknown, p)
		case o.fired || o.err != nil:
			// A pull that failed part way (a full disk) may or may not
			// have reached p: absent on both sides, the engine may have
			// dropped its record, so the next write of p may be a new
			// file or a conflict with the deletion (F29).
			if xa != xb || xa == "" && r == "" && c.base[p] != "" {
				c.unknown[p] = true
			}
		}
	}
	if !o.fired && o.err == nil {
		m.expect(propNoNeedlessDownload, o.st.Files.Downloaded <= differ, "pull downloaded %d files, %d differed", o.st.Files.Downloaded, differ)
	}
	// A pull that kept lazy files lazy (the command line's sync) leaves
	// them to download for the next pull that does not: the same scope is
	// the same only with the same KeepLazy (F20, the oracle's).
	key := strings.Join(scope, "\x00") + fmt.Sprintf("\x00keepLazy=%v", m.keepLazy)
	if lp := c.lastPull; lp != nil && lp.scope == key && !meta && !o.fired && !o.retried {
		single := len(scope) == 1 && !m.isDir(scope[0])
		if lp.seq == snap.Seq || (single && sameEntries(inScopeEntries(snap, inScope), lp.entries)) {
			// In the log format a reader k commits behind reads k entries,
			// the absent next one, the check that its last is still there
			// and the scope's shard: the bound trades one manifest of every
			// shard for one small entry per commit missed.
			bound := int64(2)
			if m.format >= index.LogFormat && snap.Seq > lp.seq {
				bound = int64(snap.Seq-lp.seq) + 3
			}
			m.expect(propRequestBounds, o.reqs <= bound, "pull of unchanged scope %v sent %d requests (bound %d)", scope, o.reqs, bound)
		}
	}
	c.lastPull = nil
	if !meta && !o.fired && o.err == nil && len(o.st.Conflicts) == 0 {
		c.lastPull = &pullMemo{scope: key, seq: snap.Seq, entries: inScopeEntries(snap, inScope)}
	}
	return o
}

// isDir reports whether p is a directory of the pool rather than a file.
func (m *modelRun) isDir(p string) bool {
	return !slices.Contains(modelFileN, p[strings.LastIndex(p, "/")+1:])
}

// converge syncs every cache round-robin until a whole round moves
// nothing, resolving conflicts by taking the committed copy, and then
// requires every cache to equal the snapshot byte for byte.
func (m *modelRun) converge() {
	for _, c := range m.caches {
		c.fault = nil
	}
	m.logf("converge")
	if !m.migrateNow("converging") { // an older silt's bucket converges once migrated
		return
	}
	quiet := false
	for round := 0; round < 2+2*len(m.caches) && !quiet; round++ {
		quiet = true
		seq := m.committed.Seq
		for _, c := range m.caches {
			m.logf("c%d sync", c.id)
			pull, push := m.sync(c)
			for _, cf := range pull.st.Conflicts {
				m.logf("c%d resolve %q: %s", c.id, cf.Path, cf.Reason)
				m.resolve(c, cf.Path)
			}
			for _, o := range []opOut{pull, push} {
				f := o.st.Files
				if f.Downloaded+f.Uploaded+f.Deleted+f.Removed+f.Conflicts > 0 || o.err != nil {
					quiet = false
				}
			}
		}
		// An upload adopted from an interrupted push counts as no file
		// uploaded, but its commit moves the sequence.
		quiet = quiet && m.committed.Seq == seq
	}
	m.expect(propConverges, quiet, "round-robin sync did not go quiet")
	want := shaMap(m.committed)
	for _, c := range m.caches {
		got := readDisk(m.t, c)
		m.expect(propConverges, sameMod(got, want, nil), "cache %d differs from the snapshot: %s", c.id, diffMaps(want, got))
	}
}

// resolve takes the committed copy of p into c, as a user settling a
// conflict would.
func (m *modelRun) resolve(c *mcache, p string) {
	abs := filepath.Join(c.dir, filepath.FromSlash(p))
	e, ok := m.committed.Entries[p]
	if !ok {
		_ = os.Remove(abs)
		return
	}
	data, err := readEntry(m.ctx, m.store, p, e)
	if err != nil {
		return // unreadable: the readability property reports it
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		m.t.Fatal(err)
	}
	if err := os.WriteFile(abs, data, 0o644); err != nil {
		m.t.Fatal(err)
	}
}

// allPaths is every path the cache, its base or the snapshot mentions.
func (m *modelRun) allPaths(c *mcache) map[string]bool {
	out := map[string]bool{}
	for p := range readDisk(m.t, c) {
		out[p] = true
	}
	for p := range c.base {
		out[p] = true
	}
	for p := range c.unknown {
		out[p] = true
	}
	for p := range m.committed.Entries {
		out[p] = true
	}
	return out
}

// readDisk returns every data file of the cache, path -> sha256.
func readDisk(t interface{ Fatalf(string, ...any) }, c *mcache) map[string]string {
	out := map[string]string{}
	err := filepath.WalkDir(c.dir, func(abs string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(c.dir, abs)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == index.InternalDir {
				return filepath.SkipDir
			}
			return nil
		}
		data, err := os.ReadFile(abs)
		if err != nil {
			return err
		}
		out[rel] = shaOf(data)
		return nil
	})
	if err != nil {
		t.Fatalf("read cache %d: %v", c.id, err)
	}
	return out
}

func shaOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func sha(v snapshotView, p string) string { return v.Entries[p].SHA256 }

func shaMap(v snapshotView) map[string]string {
	out := map[string]string{}
	for p, e := range v.Entries {
		out[p] = e.SHA256
	}
	return out
}

func setOrDelete(m map[string]string, p, v string) {
	if v == "" {
		delete(m, p)
	} else {
		m[p] = v
	}
}

func sameEntries(a, b map[string]remoteEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for p, e := range a {
		if b[p].SHA256 != e.SHA256 {
			return false
		}
	}
	return true
}

// sameMod reports whether a and b agree on every path not in skip.
func sameMod(a, b map[string]string, skip map[string]bool) bool {
	for p := range a {
		if !skip[p] && a[p] != b[p] {
			return false
		}
	}
	for p := range b {
		if !skip[p] && a[p] != b[p] {
			return false
		}
	}
	return true
}

func diffMaps(want, got map[string]string) string {
	var out []string
	for p := range want {
		if got[p] != want[p] {
			out = append(out, fmt.Sprintf("%q want %s got %s", p, short(want[p]), short(got[p])))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			out = append(out, fmt.Sprintf("%q want absent got %s", p, short(got[p])))
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

func short(s string) string {
	if s == "" {
		return "absent"
	}
	return s[:8]
}

func inScopeEntries(v snapshotView, in func(string) bool) map[string]remoteEntry {
	out := map[string]remoteEntry{}
	for p, e := range v.Entries {
		if in(p) {
			out[p] = e
		}
	}
	return out
}

// migrateNow migrates an older silt's bucket before a step that needs it
// writable (why), as an operator would; false when that failed.
func (m *modelRun) migrateNow(why string) bool {
	if m.format == index.DefaultFormat {
		return true
	}
	if _, err := index.Migrate(m.ctx, m.store, index.MigrateOptions{Now: m.gc.clock.Now}); err != nil {
		return m.expect(propNoSpuriousError, false, "migrate before %s: %v", why, err)
	}
	m.format = index.DefaultFormat
	m.committed = m.snapshot()
	return true
}
