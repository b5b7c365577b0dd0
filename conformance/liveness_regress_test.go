package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// TestPush_Regression_OnePutFaultFailedThePush: one 503 (FailBefore) or
// one reset after the store applied the write (FailAfter) on any PUT of a
// push (object, pack, shard, log entry) failed the push with
// "conditional write not retried, outcome unknown". Each is now resent,
// settled by a Stat, or (the log entry) settled by reading back; the push
// succeeds and commits everything.
func TestPush_Regression_OnePutFaultFailedThePush(t *testing.T) {
	kinds := map[string]string{
		"object": index.ObjectsPrefix,
		"pack":   index.PacksPrefix,
		"shard":  index.ShardsPrefix,
		"log":    index.LogPrefix,
	}
	for name, prefix := range kinds {
		for _, mode := range []wrap.Mode{wrap.FailBefore, wrap.FailAfter} {
			t.Run(name+"/"+mode.String(), func(t *testing.T) {
				store := mem.New()
				faults := wrap.Faults(store)
				b := backend.Production(faults, backend.WithRetry(backend.RetryConfig{Base: time.Millisecond, Max: time.Millisecond}))
				dir := t.TempDir()
				s, err := syncer.Open(t.Context(), syncer.Config{Backend: b, Dir: dir, PackThreshold: 1 << 10})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				// A first push, so the second has a history copy to write.
				files := map[string]string{"data/s1": "small 1", "data/s2": "small 2", "data/s3": "small 3", "data/big": strings.Repeat("b", 4<<10)}
				for round := range 2 {
					for p, data := range files {
						abs := filepath.Join(dir, filepath.FromSlash(p))
						if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
							t.Fatal(err)
						}
						if err := os.WriteFile(abs, []byte(data+strings.Repeat("!", round)), 0o644); err != nil {
							t.Fatal(err)
						}
					}
					if round == 1 {
						faults.Add(wrap.Rule{Verb: wrap.VerbCondPut, KeyPrefix: prefix, Nth: 1, Mode: mode})
					}
					if _, err := s.Push(t.Context(), syncer.PushOptions{All: true}); err != nil {
						t.Fatalf("push %d: %v", round, err)
					}
				}
				if faults.Fired() != 1 {
					t.Fatalf("the fault on %s fired %d times, want 1", prefix, faults.Fired())
				}
				snap, err := index.OpenSnapshot(t.Context(), store)
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				if err := snap.Walk(t.Context(), "", func(string, index.Entry) error { n++; return nil }); err != nil {
					t.Fatal(err)
				}
				if n != len(files) || snap.Seq() != 2 {
					t.Errorf("committed %d entries at seq %d, want %d at seq 2", n, snap.Seq(), len(files))
				}
			})
		}
	}
}
