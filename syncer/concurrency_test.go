package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// gate holds the first armed Put that match accepts until release is
// closed, and closes arrived when it holds it.
type gate struct {
	backend.Backend
	match   func(key string, cond backend.Cond) bool
	armed   atomic.Bool
	arrived chan struct{}
	release chan struct{}
}

func newGate(b backend.Backend, match func(key string, cond backend.Cond) bool) *gate {
	g := &gate{Backend: b, match: match, arrived: make(chan struct{}), release: make(chan struct{})}
	g.armed.Store(true)
	return g
}

func (g *gate) Unwrap() backend.Backend { return g.Backend }

func (g *gate) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	if g.match(key, cond) && g.armed.CompareAndSwap(true, false) {
		close(g.arrived)
		select {
		case <-g.release:
		case <-ctx.Done():
			return backend.ObjectInfo{}, ctx.Err()
		}
	}
	return g.Backend.Put(ctx, key, body, size, cond)
}

// isObject matches the puts of data: objects and packs.
func isObject(key string, _ backend.Cond) bool {
	return strings.HasPrefix(key, index.ObjectsPrefix) || strings.HasPrefix(key, index.PacksPrefix)
}

// isManifestCAS matches a compare-and-swap of the manifest: the commit
// point of format 3, which only an older silt writes.
func isManifestCAS(key string, cond backend.Cond) bool {
	return key == index.ManifestKey && cond.IfMatch != ""
}

// isShard matches the put of a shard: a commit stores its new shards
// before it hands the lead of the next commit on, so a commit held there
// keeps every push arriving meanwhile queued behind it.
func isShard(key string, _ backend.Cond) bool {
	return strings.HasPrefix(key, index.ShardsPrefix)
}

func openCache(t *testing.T, b backend.Backend) *syncer.Syncer {
	t.Helper()
	s := openIn(t, b, t.TempDir())
	t.Cleanup(func() { s.Close() })
	return s
}

// openIn opens the cache in dir on b, as a new process does; the caller
// closes it.
func openIn(t *testing.T, b backend.Backend, dir string) *syncer.Syncer {
	t.Helper()
	s, err := syncer.Open(t.Context(), syncer.Config{Backend: b, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func writeFile(t *testing.T, s *syncer.Syncer, p, content string) {
	t.Helper()
	full := filepath.Join(s.Root(), filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, s *syncer.Syncer, p string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.Root(), filepath.FromSlash(p)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// seedModel writes n files under dir in s, marks and pushes them.
func seedModel(t *testing.T, s *syncer.Syncer, dir string, n int) {
	t.Helper()
	for i := range n {
		writeFile(t, s, fmt.Sprintf("%s/f%d", dir, i), fmt.Sprintf("%s/%d", dir, i))
	}
	if err := s.MarkDirty(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Push(t.Context(), syncer.PushOptions{Paths: []string{dir}}); err != nil {
		t.Fatal(err)
	}
}

// twoVersions pushes "v1" as f0 of n models, then writes "v2-i" over
// each and marks it, so that n pushes of one model each have one change.
func twoVersions(t *testing.T, c *syncer.Syncer, n int, model func(int) string) {
	t.Helper()
	for i := range n {
		writeFile(t, c, model(i)+"/f0", "v1")
	}
	if err := c.MarkAllDirty(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Push(t.Context(), syncer.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		writeFile(t, c, model(i)+"/f0", fmt.Sprint("v2-", i))
		if err := c.MarkDirty(model(i)); err != nil {
			t.Fatal(err)
		}
	}
}

type opResult struct {
	st  syncer.Stats
	err error
}

func TestSyncer_Pull_ScopedRunsWhilePushOfAnotherModelUploads(t *testing.T) {
	store := mem.New()
	seedModel(t, openCache(t, store), "data/t/m3", 3)
	g := newGate(store, isObject)
	c := openCache(t, g)
	writeFile(t, c, "data/t/m2/x", "m2")
	if err := c.MarkDirty("data/t/m2"); err != nil {
		t.Fatal(err)
	}
	pushed := make(chan opResult, 1)
	go func() {
		st, err := c.Push(t.Context(), syncer.PushOptions{})
		pushed <- opResult{st, err}
	}()
	select {
	case <-g.arrived: // the push is mid-upload and stays there
	case r := <-pushed:
		t.Fatalf("the push ended (%+v, %v) before it uploaded anything: the test proves nothing", r.st.Files, r.err)
	}

	st, err := c.Pull(t.Context(), syncer.PullOptions{Scope: []string{"data/t/m3"}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Files.Downloaded != 3 || readFile(t, c, "data/t/m3/f1") != "data/t/m3/1" {
		t.Fatalf("scoped pull downloaded %d files, want 3", st.Files.Downloaded)
	}
	select {
	case r := <-pushed:
		t.Fatalf("push finished before its upload was released: %+v", r)
	default:
	}
	close(g.release)
	r := <-pushed
	if r.err != nil || r.st.Files.Uploaded != 1 {
		t.Fatalf("push: uploaded %d, err %v; want 1, nil", r.st.Files.Uploaded, r.err)
	}
}

// The command line's push walks the whole cache (PushOptions.All), so it
// starts under the lock of everything; once its plan is made it holds only
// the paths it changes, and a scoped pull of another model (another silt
// process's, through this one's service) runs beside its uploads (issue 20:
// it waited for the whole push).
func TestSyncer_Pull_ScopedRunsWhileWholeCachePushUploads(t *testing.T) {
	store := mem.New()
	peer := openCache(t, store)
	seedModel(t, peer, "data/t/m3", 3)
	g := newGate(store, isObject)
	g.armed.Store(false)
	c := openCache(t, g)
	// c's copies of m3 were just installed, so the push's walk re-hashes
	// them (their mtimes are racily close to their verification).
	if _, err := c.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		writeFile(t, peer, fmt.Sprintf("data/t/m3/f%d", i), fmt.Sprintf("data/t/m3/%d", i+10))
	}
	if _, err := peer.Push(t.Context(), syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	g.armed.Store(true)
	writeFile(t, c, "data/t/m2/x", "m2")
	pushed := make(chan opResult, 1)
	go func() {
		st, err := c.Push(t.Context(), syncer.PushOptions{All: true})
		pushed <- opResult{st, err}
	}()
	select {
	case <-g.arrived: // the push is mid-upload and stays there
	case r := <-pushed:
		t.Fatalf("the push ended (%+v, %v) before it uploaded anything: the test proves nothing", r.st.Files, r.err)
	}

	// The bound only turns the old behaviour (waiting for the push, which
	// never ends while the gate holds it) into a failure, not a hang.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	st, err := c.Pull(ctx, syncer.PullOptions{Scope: []string{"data/t/m3"}})
	if err != nil {
		close(g.release)
		t.Fatalf("scoped pull beside the whole-cache push: %v (it waited for the push)", err)
	}
	if st.Files.Downloaded != 3 || readFile(t, c, "data/t/m3/f1") != "data/t/m3/11" {
		t.Fatalf("scoped pull downloaded %d files, want 3", st.Files.Downloaded)
	}
	select {
	case r := <-pushed:
		t.Fatalf("push finished before its upload was released: %+v", r)
	default:
	}
	close(g.release)
	r := <-pushed
	if r.err != nil || r.st.Files.Uploaded != 1 {
		t.Fatalf("push: uploaded %d, err %v; want 1, nil", r.st.Files.Uploaded, r.err)
	}
	// The pull's files are this cache's now: a push that walks everything
	// again finds nothing to send.
	again, err := c.Push(t.Context(), syncer.PushOptions{All: true})
	if err != nil || again.Files.Uploaded != 0 || again.Files.Deleted != 0 || again.Files.Conflicts != 0 {
		t.Fatalf("second whole-cache push: %+v, %v; want nothing to do", again.Files, err)
	}
}

func TestSyncer_Pull_WaitsForOverlappingOperationsInArrivalOrder(t *testing.T) {
	store := mem.New()
	g := newGate(store, isObject)
	c := openCache(t, g)
	writeFile(t, c, "data/a/x", "x")
	if err := c.MarkDirty("data/a/x"); err != nil {
		t.Fatal(err)
	}
	events := make(chan string, 16)
	syncer.ObserveLocks(c, func(scope, ev string) { events <- ev + " " + scope })
	errs := make(chan error, 3)
	go func() {
		_, err := c.Push(t.Context(), syncer.PushOptions{})
		errs <- err
	}()
	<-g.arrived
	expect := func(want string) {
		t.Helper()
		if got := <-events; got != want {
			t.Fatalf("lock event %q, want %q", got, want)
		}
	}
	expect("run data/a/x")
	go func() {
		_, err := c.Pull(t.Context(), syncer.PullOptions{Scope: []string{"data/a"}})
		errs <- err
	}()
	expect("wait data/a") // a directory waits for a push of a file under it
	go func() {
		_, err := c.Pull(t.Context(), syncer.PullOptions{})
		errs <- err
	}()
	expect("wait *") // everything waits for both
	close(g.release)
	expect("run data/a") // the earlier one first
	expect("run *")
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestSyncer_Push_ConcurrentPushesGroupCommit(t *testing.T) {
	const n = 7
	store := mem.New()
	g := newGate(store, isShard)
	g.armed.Store(false)
	c := openCache(t, g) // group commit shares one log entry
	model := func(i int) string { return fmt.Sprintf("data/t/m%d", i) }
	for i := range n {
		writeFile(t, c, model(i)+"/f0", "v1")
		if err := c.MarkDirty(model(i)); err != nil {
			t.Fatal(err)
		}
	}
	st0, err := c.Push(t.Context(), syncer.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	peer := openCache(t, store)
	if _, err := peer.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		writeFile(t, c, model(i)+"/f0", fmt.Sprint("v2-", i))
		writeFile(t, c, model(i)+"/f1", fmt.Sprint("new-", i))
		if err := c.MarkDirty(model(i)); err != nil {
			t.Fatal(err)
		}
	}
	allQueued := make(chan struct{})
	var once sync.Once
	syncer.ObserveCommitQueue(c, func(q int) {
		if q == n-1 {
			once.Do(func() { close(allQueued) })
		}
	})
	g.armed.Store(true)
	results := make([]opResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			st, err := c.Push(t.Context(), syncer.PushOptions{Paths: []string{model(i)}})
			results[i] = opResult{st, err}
		})
	}
	<-g.arrived // the first commit's shard write is held, before its entry
	<-allQueued // every other push waits to commit
	// A peer commits m3/f0 meanwhile: the m3 push, alone or in the group,
	// must report that conflict, and nobody else.
	writeFile(t, peer, model(3)+"/f0", "peer")
	if err := peer.MarkDirty(model(3) + "/f0"); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.Push(t.Context(), syncer.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	close(g.release)
	wg.Wait()

	seqs := map[uint64]syncer.CommitStats{}
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("push %s: %v", model(i), r.err)
		}
		// m3/f0 ends in conflict and counts there alone, not as uploaded too.
		if want := 2 - boolInt(i == 3); r.st.Files.Uploaded != want {
			t.Errorf("push %s uploaded %d files, want %d", model(i), r.st.Files.Uploaded, want)
		}
		var conflicts []string
		for _, cf := range r.st.Conflicts {
			conflicts = append(conflicts, cf.Path)
		}
		want := []string(nil)
		if i == 3 {
			want = []string{model(3) + "/f0"}
		}
		if !slices.Equal(conflicts, want) {
			t.Errorf("push %s conflicts %v, want %v", model(i), conflicts, want)
		}
		if r.st.Commit == nil {
			t.Fatalf("push %s reports no commit", model(i))
		}
		seqs[r.st.Seq] = *r.st.Commit
	}
	if len(seqs) != 2 {
		t.Fatalf("%d pushes made %d commits (%v), want 2: one alone, then the rest grouped", n, len(seqs), seqs)
	}
	attempts := 0
	for seq, cs := range seqs {
		attempts += cs.Attempts
		if cs.Batch != 1 && cs.Batch != n-1 {
			t.Errorf("commit at seq %d merged %d pushes, want 1 or %d", seq, cs.Batch, n-1)
		}
	}
	t.Logf("%d pushes: %d commits (seq %d -> %d, one peer commit between), %.2f commit attempts per commit",
		n, len(seqs), st0.Seq, slices.Max(slices.Collect(maps.Keys(seqs))), float64(attempts)/float64(len(seqs)))

	fresh := openCache(t, store)
	if _, err := fresh.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		want := fmt.Sprint("v2-", i)
		if i == 3 {
			want = "peer"
		}
		if got := readFile(t, fresh, model(i)+"/f0"); got != want {
			t.Errorf("%s/f0 = %q, want %q", model(i), got, want)
		}
		if got := readFile(t, fresh, model(i)+"/f1"); got != fmt.Sprint("new-", i) {
			t.Errorf("%s/f1 = %q", model(i), got)
		}
	}
	// Nothing is left to push but the conflict, which stays dirty: the
	// directory's mark narrowed to the conflicting file (F18).
	st, err := c.Status(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Dirty, []string{model(3) + "/f0"}) {
		t.Errorf("dirty after the pushes: %v, want only %s/f0", st.Dirty, model(3))
	}
}

// The figures of issue 12: a scoped pull alone and while a push of another
// model is held mid-upload, and seven concurrent pushes, with 10 ms per
// request on mem.
func TestSyncer_Concurrency_Figures(t *testing.T) {
	if testing.Short() {
		t.Skip("timing figures")
	}
	store := mem.New()
	slow := wrap.Latency(store, wrap.LatencyConfig{Delay: 10 * time.Millisecond})
	seedModel(t, openCache(t, store), "data/t/m3", 7)

	// Each pull runs in a fresh cache: the same 7 downloads every time.
	// Each push sends new files, so it always reaches its upload.
	runs := 0
	pullOnce := func(during bool) (time.Duration, *syncer.Syncer) {
		g := newGate(slow, isObject)
		c := openCache(t, g)
		pushed := make(chan opResult, 1)
		runs++
		if during {
			for i := range 7 {
				writeFile(t, c, fmt.Sprintf("data/t/m2/run%d/f%d", runs, i), fmt.Sprint("m2-", runs, i))
			}
			if err := c.MarkDirty("data/t/m2"); err != nil {
				t.Fatal(err)
			}
			go func() {
				st, err := c.Push(t.Context(), syncer.PushOptions{})
				pushed <- opResult{st, err}
			}()
			<-g.arrived // held mid-upload for as long as the pull takes
		} else {
			g.armed.Store(false)
		}
		start := time.Now()
		if _, err := c.Pull(t.Context(), syncer.PullOptions{Scope: []string{"data/t/m3"}}); err != nil {
			t.Fatal(err)
		}
		d := time.Since(start)
		if during {
			select {
			case <-pushed:
				t.Fatal("push finished before the pull")
			default:
			}
			close(g.release)
			if r := <-pushed; r.err != nil {
				t.Fatal(r.err)
			}
		}
		return d, c
	}
	median := func(during bool) time.Duration {
		var ds []time.Duration
		for range 5 {
			d, _ := pullOnce(during)
			ds = append(ds, d)
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	pullAlone, pullDuring := median(false), median(true)
	t.Logf("scoped pull of 7 files, median of 5: %v alone, %v while a push of another model is held mid-upload (%.2fx)",
		pullAlone.Round(time.Millisecond), pullDuring.Round(time.Millisecond), float64(pullDuring)/float64(pullAlone))
	_, c := pullOnce(false)

	// Seven steps push seven models at once.
	const n = 7
	for i := range n {
		for j := range 5 {
			writeFile(t, c, fmt.Sprintf("data/t/p%d/f%d", i, j), fmt.Sprint(i, j))
		}
		if err := c.MarkDirty(fmt.Sprintf("data/t/p%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	before, err := c.Status(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	results := make([]opResult, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			st, err := c.Push(t.Context(), syncer.PushOptions{Paths: []string{fmt.Sprintf("data/t/p%d", i)}})
			results[i] = opResult{st, err}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	commits := map[uint64]int{}
	for i, r := range results {
		if r.err != nil || r.st.Files.Uploaded != 5 || r.st.Commit == nil {
			t.Fatalf("push %d: uploaded %d, err %v", i, r.st.Files.Uploaded, r.err)
		}
		commits[r.st.Seq] = r.st.Commit.Attempts
	}
	attempts := 0
	for _, a := range commits {
		attempts += a
	}
	after, err := c.Status(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	if adv := after.RemoteSeq - before.RemoteSeq; adv != uint64(len(commits)) || adv > n {
		t.Fatalf("seq advanced by %d for %d commits", adv, len(commits))
	}
	t.Logf("%d concurrent pushes of 5 files: %v, %d commits (seq +%d), %.2f commit attempts per commit",
		n, elapsed.Round(time.Millisecond), len(commits), after.RemoteSeq-before.RemoteSeq, float64(attempts)/float64(len(commits)))
}

// Steps on disjoint models of one cache, run at once (write, mark, push,
// pull of the model; deletions too), beside unscoped pulls and status
// calls, converge: a fresh cache reads exactly what each step last pushed,
// and no step ever sees a conflict, since nobody else writes its model.
func TestSyncer_Concurrent_DisjointStepsConverge(t *testing.T) {
	t.Run("mem", func(t *testing.T) { checkDisjointStepsConverge(t, memBackend(t)) })
	t.Run("fs", func(t *testing.T) { checkDisjointStepsConverge(t, fsBackend(t)) })
}

func checkDisjointStepsConverge(t *testing.T, store backend.Backend) {
	const workers, rounds = 5, 6
	c := openCache(t, wrap.Latency(store, wrap.LatencyConfig{Delay: time.Millisecond}))
	oracle := make([]map[string]string, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers+1)
	for w := range workers {
		oracle[w] = map[string]string{}
		wg.Go(func() {
			dir := fmt.Sprintf("data/t/m%d", w)
			for r := range rounds {
				// A step marks what it is about to write, as hosts do.
				if err := c.MarkDirty(dir); err != nil {
					errs <- err
					return
				}
				// Round r rewrites file r%3, adds file r and deletes file r-2.
				for _, i := range []int{r % 3, r} {
					p := fmt.Sprintf("%s/f%d", dir, i)
					content := fmt.Sprintf("%d-%d-%d", w, r, i)
					full := filepath.Join(c.Root(), filepath.FromSlash(p))
					if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
						errs <- err
						return
					}
					if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
						errs <- err
						return
					}
					oracle[w][p] = content
				}
				if r >= 2 {
					p := fmt.Sprintf("%s/f%d", dir, r-2)
					if err := os.Remove(filepath.Join(c.Root(), filepath.FromSlash(p))); err != nil && !os.IsNotExist(err) {
						errs <- err
						return
					}
					delete(oracle[w], p)
				}
				st, err := c.Push(t.Context(), syncer.PushOptions{Paths: []string{dir}})
				if err == nil && len(st.Conflicts) > 0 {
					err = fmt.Errorf("push %s round %d: conflicts %v", dir, r, st.Conflicts)
				}
				if err != nil {
					errs <- err
					return
				}
				st, err = c.Pull(t.Context(), syncer.PullOptions{Scope: []string{dir}})
				if err == nil && (len(st.Conflicts) > 0 || st.Files.Downloaded > 0) {
					err = fmt.Errorf("pull %s round %d after its own push: %d downloads, conflicts %v", dir, r, st.Files.Downloaded, st.Conflicts)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := c.Pull(t.Context(), syncer.PullOptions{}); err != nil {
				errs <- fmt.Errorf("unscoped pull: %w", err)
				return
			}
			if _, err := c.Status(t.Context(), true); err != nil {
				errs <- fmt.Errorf("status: %w", err)
				return
			}
		}
	})
	wg.Wait()
	close(stop)
	bg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	fresh := openCache(t, store)
	if _, err := fresh.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	err := filepath.WalkDir(fresh.Root(), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.Name() == ".silt" {
				return filepath.SkipDir
			}
			return err
		}
		rel, _ := filepath.Rel(fresh.Root(), p)
		data, err := os.ReadFile(p)
		got[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, o := range oracle {
		maps.Copy(want, o)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("fresh cache holds\n%v\nwant\n%v", got, want)
	}
	st, err := c.Status(t.Context(), false)
	if err != nil || len(st.Dirty) != 0 || st.Overflow || st.Bulk {
		t.Fatalf("marks left after every push: %+v, %v", st, err)
	}
}

func TestSyncer_Push_GroupCommitFailureFallsBackToEachAlone(t *testing.T) {
	const n = 4
	faults := wrap.Faults(mem.New())
	g := newGate(faults, isShard)
	g.armed.Store(false)
	c := openCache(t, g)
	model := func(i int) string { return fmt.Sprintf("data/t/m%d", i) }
	twoVersions(t, c, n, model)
	allQueued := make(chan struct{})
	var once sync.Once
	syncer.ObserveCommitQueue(c, func(q int) {
		if q == n-1 {
			once.Do(func() { close(allQueued) })
		}
	})
	g.armed.Store(true)
	results := make([]opResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			st, err := c.Push(t.Context(), syncer.PushOptions{Paths: []string{model(i)}})
			results[i] = opResult{st, err}
		})
	}
	<-g.arrived // the first commit's shard write is held: it leads, the rest queue
	<-allQueued
	// The first commit's entry is the next created, the combined commit's
	// the one after: it fails for good.
	faults.Add(wrap.Rule{Verb: wrap.VerbCondPut, KeyPrefix: index.LogPrefix, Nth: 2, Err: errors.New("permanent write failure")})
	close(g.release)
	wg.Wait()
	seqs := map[uint64]bool{}
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("push %s: %v", model(i), r.err)
		}
		if r.st.Commit == nil || r.st.Commit.Batch != 1 {
			t.Errorf("push %s: commit %+v, want one alone", model(i), r.st.Commit)
		}
		seqs[r.st.Seq] = true
	}
	if faults.Fired() != 1 || len(seqs) != n {
		t.Fatalf("fault fired %d times, %d distinct commits; want 1 and %d", faults.Fired(), len(seqs), n)
	}
	fresh := openCache(t, faults)
	if _, err := fresh.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if got := readFile(t, fresh, model(i)+"/f0"); got != fmt.Sprint("v2-", i) {
			t.Errorf("%s/f0 = %q", model(i), got)
		}
	}
}

// A push that queued behind a running commit planned against the head
// that commit replaces; it commits on the one the commit makes, so its
// first entry create wins: no lost race, backoff or re-read when this
// process is the only writer.
func TestSyncer_Push_QueuedBehindACommitWinsItsFirstCreate(t *testing.T) {
	store := wrap.Count(mem.New())
	g := newGate(store, isShard)
	g.armed.Store(false)
	c := openCache(t, g)
	for _, m := range []string{"data/t/m0", "data/t/m1"} {
		writeFile(t, c, m+"/f0", "v1")
	}
	if _, err := c.Push(t.Context(), syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"data/t/m0", "data/t/m1"} {
		writeFile(t, c, m+"/f0", "v2")
	}
	queued := make(chan struct{})
	var once sync.Once
	syncer.ObserveCommitQueue(c, func(int) { once.Do(func() { close(queued) }) })
	g.armed.Store(true)
	results := make([]opResult, 2)
	var wg sync.WaitGroup
	wg.Go(func() {
		st, err := c.Push(t.Context(), syncer.PushOptions{Paths: []string{"data/t/m0"}})
		results[0] = opResult{st, err}
	})
	<-g.arrived // m0's commit is held at its shard: m1 plans against the head it replaces
	wg.Go(func() {
		st, err := c.Push(t.Context(), syncer.PushOptions{Paths: []string{"data/t/m1"}})
		results[1] = opResult{st, err}
	})
	<-queued
	before := len(store.Log())
	close(g.release)
	wg.Wait()
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("push %d: %v", i, r.err)
		}
		if r.st.Commit == nil || r.st.Commit.Attempts != 1 {
			t.Errorf("push %d: commit %+v, want one attempt", i, r.st.Commit)
		}
	}
	if results[0].st.Seq == results[1].st.Seq {
		t.Fatalf("both pushes at seq %d: the second was not queued behind the first", results[0].st.Seq)
	}
	creates := 0
	for _, r := range store.Log()[before:] {
		if r.Verb == wrap.VerbCondPut && strings.HasPrefix(r.Key, index.LogPrefix) {
			creates++
		}
	}
	if creates != 2 {
		t.Errorf("%d log entry creates after the release, want 2 (one per commit)", creates)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
