package syncer_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

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
	w := openFormat(t, store, index.FormatVersion) // the manifest as commit point (format 3 mechanics)
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

// The repack's manifest write lands but its acknowledgement is lost: it
// used to fail the gc ("repack: write manifest"); the one commit function
// reads the manifest back and finds its own bytes there.
func TestRepack_Regression_UnknownOutcomeSettledByReadBack(t *testing.T) {
	store := mem.New()
	sparsePack(t, store)
	f := wrap.Faults(store)
	f.Add(wrap.Rule{Verb: wrap.VerbCondPut, KeyPrefix: index.ManifestKey, Nth: 1, Mode: wrap.FailAfter})
	rep, err := index.Repack(context.Background(), f, index.DefaultRepackBelow)
	if err != nil {
		t.Fatalf("repack after a lost acknowledgement: %v", err)
	}
	if f.Fired() != 1 || rep.Seq != 3 || rep.Entries != 2 {
		t.Fatalf("fired %d, repack %+v: want the lost acknowledgement settled as seq 3", f.Fired(), rep)
	}
	h, err := index.ReadManifest(context.Background(), store, backend.GetOptions{})
	if err != nil || h.Manifest.Seq != 3 {
		t.Fatalf("manifest seq %d (%v), want 3: one landed write, none repeated", h.Manifest.Seq, err)
	}
}

// mutationLimited reports a per-key mutation limit and records when each
// manifest write was sent.
type mutationLimited struct {
	backend.Backend
	perSec float64
	mu     sync.Mutex
	puts   []time.Time
}

func (l *mutationLimited) Capabilities() backend.Capabilities {
	c := l.Backend.Capabilities()
	c.MaxMutationsPerKeyPerSecond = l.perSec
	return c
}

func (l *mutationLimited) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	if key == index.ManifestKey {
		l.mu.Lock()
		l.puts = append(l.puts, time.Now())
		l.mu.Unlock()
	}
	return l.Backend.Put(ctx, key, body, size, cond)
}

// A repack that loses its races used to retry at once, three times,
// whatever the store's per-key mutation limit (GCS: 1 per second).
func TestRepack_Regression_LostRacesHonourMutationLimit(t *testing.T) {
	store := mem.New()
	sparsePack(t, store)
	f := wrap.Faults(store)
	f.Add(wrap.Rule{Verb: wrap.VerbCondPut, KeyPrefix: index.ManifestKey, Nth: 1, Times: 3, Mode: wrap.FailBefore,
		Err: &backend.Error{Op: "put", Key: index.ManifestKey, Err: backend.ErrPrecondition}})
	l := &mutationLimited{Backend: f, perSec: 20} // one write per 50 ms
	rep, err := index.Repack(context.Background(), l, index.DefaultRepackBelow)
	if err != nil || rep.Seq != 3 {
		t.Fatalf("repack %+v, %v: want it committed after three lost races", rep, err)
	}
	if len(l.puts) != 4 {
		t.Fatalf("%d manifest writes, want 4 (three lost, one landed)", len(l.puts))
	}
	for i := 1; i < len(l.puts); i++ {
		if gap := l.puts[i].Sub(l.puts[i-1]); gap < 50*time.Millisecond {
			t.Fatalf("write %d came %v after the previous one: faster than the store's limit", i+1, gap)
		}
	}
}
