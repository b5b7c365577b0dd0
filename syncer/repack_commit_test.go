package syncer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// sparsePack pushes ten small files into one pack and deletes eight of
// them, so the pack's live share is under the repack threshold.
func sparsePack(t *testing.T, store backend.Backend) {
	t.Helper()
	w := openCache(t, store)
	pushFiles(t, w, packFiles(10))
	for i := 2; i < 10; i++ {
		if err := os.Remove(filepath.Join(w.Root(), fmt.Sprintf("data/m/f%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.MarkDirty("data"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Push(t.Context(), syncer.PushOptions{}); err != nil {
		t.Fatal(err)
	}
}

// The repack's commit lands but its acknowledgement is lost: it used to
// fail the gc ("repack: write manifest"); the one commit function reads
// the head again and finds its own entry there, so nothing is repeated.
func TestRepack_Regression_UnknownOutcomeSettledByReadBack(t *testing.T) {
	store := mem.New()
	sparsePack(t, store)
	f := wrap.Faults(store)
	f.Add(wrap.Rule{Verb: wrap.VerbCondPut, KeyPrefix: index.LogPrefix, Nth: 1, Mode: wrap.FailAfter})
	rep, err := index.Repack(context.Background(), f, index.DefaultRepackBelow)
	if err != nil {
		t.Fatalf("repack after a lost acknowledgement: %v", err)
	}
	if f.Fired() != 1 || rep.Seq != 3 || rep.Entries != 2 {
		t.Fatalf("fired %d, repack %+v: want the lost acknowledgement settled as seq 3", f.Fired(), rep)
	}
	h, err := index.ReadHead(context.Background(), store, nil)
	if err != nil || h.Manifest.Seq != 3 {
		t.Fatalf("head seq %d (%v), want 3: one landed write, none repeated", h.Manifest.Seq, err)
	}
}

// A repack that loses its races for the next log entry reads the head
// again and retries until it commits. (Its retries are not paced by the
// store's per-key mutation limit, as the manifest's swaps were: each
// seq is its own key.)
func TestRepack_LostLogRaces_RetriedUntilItCommits(t *testing.T) {
	store := mem.New()
	sparsePack(t, store)
	f := wrap.Faults(store)
	f.Add(wrap.Rule{Verb: wrap.VerbCondPut, KeyPrefix: index.LogPrefix, Nth: 1, Times: 3, Mode: wrap.FailBefore,
		Err: &backend.Error{Op: "put", Key: index.LogKey(3), Err: backend.ErrPrecondition}})
	c := wrap.Count(f)
	rep, err := index.Repack(context.Background(), c, index.DefaultRepackBelow)
	if err != nil || rep.Seq != 3 {
		t.Fatalf("repack %+v, %v: want it committed after three lost races", rep, err)
	}
	creates := 0
	for _, r := range c.Log() {
		if r.Verb == wrap.VerbCondPut && strings.HasPrefix(r.Key, index.LogPrefix) {
			creates++
		}
	}
	if f.Fired() != 3 || creates != 4 {
		t.Fatalf("%d log entry creates, %d refused; want 4 (three lost, one landed)", creates, f.Fired())
	}
	h, err := index.ReadHead(context.Background(), store, nil)
	if err != nil || h.Manifest.Seq != 3 {
		t.Fatalf("head seq %d (%v), want the repack's 3", h.Manifest.Seq, err)
	}
}
