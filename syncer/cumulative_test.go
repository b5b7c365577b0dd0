package syncer_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// Each push from a new process (the CLI's way: the cache reopened from its
// directory) writes a cumulative log entry, so a cold reader reaches the
// head in a listing and one entry, not one request per commit: the carry
// the entry needs is kept with the cache's copy of the head.
func TestSyncer_PushFromNewProcess_WritesCumulativeEntries(t *testing.T) {
	b := mem.New()
	dir := t.TempDir()
	const commits = 10
	for i := range commits {
		s := openIn(t, b, dir)
		writeFile(t, s, fmt.Sprintf("m/f%d", i%3), fmt.Sprint("v", i))
		if err := s.MarkDirty("m"); err != nil {
			t.Fatal(err)
		}
		mustPush(t, s, syncer.PushOptions{})
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	data, _, err := backend.ReadAll(t.Context(), b, index.LogKey(commits), backend.GetOptions{}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Base *uint64 `json:"base"`
	}
	if err := json.Unmarshal(data, &e); err != nil || e.Base == nil || *e.Base != 0 {
		t.Fatalf("entry %d is not cumulative from the genesis (base %v, %v): %s", commits, e.Base, err, data)
	}
	count := wrap.Count(b)
	h, err := index.ReadHead(t.Context(), count, nil)
	if err != nil || h.Manifest.Seq != commits {
		t.Fatalf("cold read: seq %v, %v", h.Manifest, err)
	}
	// The hint (the genesis root), the listing of the log's block, the
	// newest entry.
	if n := count.Counts().Total(); n != 3 {
		t.Errorf("cold read of %d commits: %d requests, want 3 (%v)", commits, n, count.Counts())
	}
}
