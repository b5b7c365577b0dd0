package syncer_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// isLogEntry matches the create of a log entry (the commit point).
func isLogEntry(key string, cond backend.Cond) bool {
	return strings.HasPrefix(key, index.LogPrefix) && cond.IfAbsent
}

// pipelined runs the scenario of the pipelining tests: push A holds at
// its entry's create; push B builds on A's entry in flight and waits with
// its shards stored; five more queue behind B; between (run while all
// that holds) is called; then A's create goes on. It returns each push's
// stats, A's first and B's second, and the store.
func pipelined(t *testing.T, between func(store backend.Backend)) ([]syncer.Stats, backend.Backend) {
	t.Helper()
	const n = 7
	store := mem.New()
	g := newGate(store, isLogEntry)
	g.armed.Store(false)
	c := openCache(t, g)
	model := func(i int) string { return fmt.Sprintf("data/t/m%d", i) }
	twoVersions(t, c, n, model)
	waiting, queued := make(chan struct{}), make(chan struct{})
	var onceW, onceQ sync.Once
	syncer.ObservePipelineWait(c, func() { onceW.Do(func() { close(waiting) }) })
	syncer.ObserveCommitQueue(c, func(q int) {
		if q == n-2 {
			onceQ.Do(func() { close(queued) })
		}
	})
	results := make([]opResult, n)
	var wg sync.WaitGroup
	push := func(i int) {
		wg.Go(func() {
			st, err := c.Push(t.Context(), syncer.PushOptions{Paths: []string{model(i)}})
			results[i] = opResult{st, err}
		})
	}
	g.armed.Store(true)
	push(0)
	within(t, g.arrived, "A's entry create") // A's entry is being created
	push(1)
	within(t, waiting, "B waiting for A's entry with its shards stored")
	for i := 2; i < n; i++ {
		push(i)
	}
	within(t, queued, "five pushes queued behind B")
	if between != nil {
		between(store)
	}
	close(g.release)
	wg.Wait()
	var out []syncer.Stats
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("push %s: %v", model(i), r.err)
		}
		out = append(out, r.st)
	}
	fresh := openCache(t, store)
	if _, err := fresh.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if got := readFile(t, fresh, model(i)+"/f0"); got != fmt.Sprint("v2-", i) {
			t.Errorf("%s/f0 = %q: a pipelined commit lost an update", model(i), got)
		}
	}
	return out, store
}

// within waits for ch, failing the test (rather than hanging it) when the
// step never comes: the code under test did not pipeline.
func within(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("no %s within a minute", what)
	}
}

// A commit queued behind one in flight does not wait for
// it to land before storing its shards: it builds on the entry in flight
// and creates its own as soon as that one lands, on the first attempt,
// and the pushes queued behind it go as one batch after it.
func TestSyncer_Push_PipelinedOnTheEntryInFlight(t *testing.T) {
	st, _ := pipelined(t, nil)
	a, b := st[0], st[1]
	if a.Commit.Batch != 1 || b.Commit.Batch != 1 || b.Commit.Attempts != 1 || b.Seq != a.Seq+1 || a.Commit.Pipelined || !b.Commit.Pipelined {
		t.Errorf("A: seq %d %+v; B: seq %d %+v; want B alone at A's seq + 1 on its first attempt", a.Seq, *a.Commit, b.Seq, *b.Commit)
	}
	for _, s := range st[2:] {
		if s.Seq != b.Seq+1 || s.Commit.Batch != 5 || s.Commit.Attempts != 1 || !s.Commit.Pipelined {
			t.Errorf("queued behind B: seq %d %+v; want one batch of 5 at B's seq + 1", s.Seq, *s.Commit)
		}
	}
}

// When the entry in flight does not land as built on (another writer's
// entry took its seq), the commit built on it is not created there: it
// reads the head again, rebuilds on it, and every update lands.
func TestSyncer_Push_PipelinedPredecessorLost_Rebuilds(t *testing.T) {
	st, store := pipelined(t, func(store backend.Backend) {
		peer := openCache(t, store)
		writeFile(t, peer, "data/peer/f", "peer")
		if err := peer.MarkDirty("data/peer"); err != nil {
			t.Fatal(err)
		}
		if _, err := peer.Push(t.Context(), syncer.PushOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	a, b := st[0], st[1]
	if a.Commit.Attempts < 2 || b.Commit.Attempts < 2 || b.Commit.Pipelined {
		t.Errorf("A %+v, B %+v: both should have lost a race (A to the peer, B to A's retry)", *a.Commit, *b.Commit)
	}
	head, err := index.ReadHead(t.Context(), store, nil)
	if err != nil {
		t.Fatal(err)
	}
	seqs := map[uint64]bool{}
	for _, s := range st {
		seqs[s.Seq] = true
	}
	if len(seqs) < 3 || !seqs[head.Manifest.Seq] {
		t.Errorf("commits at %v, head %d", seqs, head.Manifest.Seq)
	}
}
