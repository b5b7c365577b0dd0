package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/internal/legacy"
	"github.com/siltsync/silt/syncer"
)

// olderPush commits path holding content onto b as an older silt writing
// format (3 or 4) does; an empty b becomes a bucket of that format. It
// returns the seq committed.
func olderPush(t *testing.T, b backend.Backend, format int, path, content string) uint64 {
	t.Helper()
	seq, err := legacy.Push(t.Context(), b, format, map[string][]byte{path: []byte(content)})
	if err != nil {
		t.Fatalf("older silt's push of %s in format %d: %v", path, format, err)
	}
	return seq
}

// pulled returns a cache of this silt that has pulled b: the head it holds
// is b's as it is now.
func pulled(t *testing.T, b backend.Backend) *syncer.Syncer {
	t.Helper()
	s := openCache(t, b)
	if _, err := s.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	return s
}

func pushFile(t *testing.T, s *syncer.Syncer, p, content string) {
	t.Helper()
	writeFile(t, s, p, content)
	if err := s.MarkDirty(p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Push(t.Context(), syncer.PushOptions{}); err != nil {
		t.Fatal(err)
	}
}

// snapshots reads every snapshot index.Log lists: seq -> path -> sha256.
func snapshots(t *testing.T, b backend.Backend) map[uint64]map[string]string {
	t.Helper()
	ctx := t.Context()
	log, err := index.Log(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64]map[string]string{}
	for _, le := range log {
		snap, err := index.OpenSnapshotAt(ctx, b, le.Seq)
		if err != nil {
			t.Fatalf("snapshot %d listed but does not open: %v", le.Seq, err)
		}
		files := map[string]string{}
		if err := snap.Walk(ctx, "", func(p string, e index.Entry) error { files[p] = e.SHA256; return nil }); err != nil {
			t.Fatalf("snapshot %d: %v", le.Seq, err)
		}
		out[le.Seq] = files
	}
	return out
}

// migrated checks that after a migration every snapshot of before is
// listed with the same files, and the head is one more seq in the delta
// format holding the files of the last.
func migrated(t *testing.T, b backend.Backend, before map[uint64]map[string]string, head uint64) {
	t.Helper()
	after := snapshots(t, b)
	for seq, files := range before {
		if !maps.Equal(after[seq], files) {
			t.Errorf("snapshot %d after the migration: %v, want %v", seq, after[seq], files)
		}
	}
	if !maps.Equal(after[head+1], before[head]) {
		t.Errorf("the migration's snapshot %d holds %v, want the files of %d: %v", head+1, after[head+1], head, before[head])
	}
	h, err := index.ReadHead(t.Context(), b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.Manifest.Format != index.DefaultFormat || h.Manifest.Seq != head+1 {
		t.Errorf("head after the migration: format %d seq %d, want %d seq %d", h.Manifest.Format, h.Manifest.Seq, index.DefaultFormat, head+1)
	}
}

func TestMigrate_Format3To5_KeepEverySnapshotAndCarryOn(t *testing.T) {
	for _, format := range []int{index.FormatVersion, index.LogFormat, index.DeltaFormat} {
		t.Run(fmt.Sprint("format", format), func(t *testing.T) {
			store := mem.New()
			for i := range 3 {
				olderPush(t, store, format, fmt.Sprintf("data/m/f%d", i), fmt.Sprint("v", i))
			}
			olderPush(t, store, format, "data/m/f0", "changed")
			a := pulled(t, store) // this silt's cache, holding the head of seq 4
			before := snapshots(t, store)
			if len(before) < 4 {
				t.Fatalf("format %d lists %d snapshots before the migration, want 4", format, len(before))
			}
			rep, err := index.Migrate(t.Context(), store, index.MigrateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.From != format || rep.To != index.DefaultFormat || rep.Seq != 5 || rep.Entries != 3 {
				t.Fatalf("report %+v, want from %d to %d at seq 5 with 3 entries", rep, format, index.DefaultFormat)
			}
			migrated(t, store, before, 4)

			// A cache that pulled before the migration, its held head one
			// seq old, commits in the log; a new peer reads it all.
			pushFile(t, a, "data/m/f9", "after")
			h, err := index.ReadHead(t.Context(), store, nil)
			if err != nil {
				t.Fatal(err)
			}
			if h.Manifest.Format != index.DefaultFormat || h.Manifest.Seq != 6 {
				t.Fatalf("push after the migration made format %d seq %d, want %d seq 6", h.Manifest.Format, h.Manifest.Seq, index.DefaultFormat)
			}
			b := pulled(t, store)
			if got, want := tree(t, b), tree(t, a); !maps.Equal(got, want) {
				t.Fatalf("peer after the migration: %v, want %v", got, want)
			}

			again, err := index.Migrate(t.Context(), store, index.MigrateOptions{})
			if err != nil || !again.Already || len(again.Writes) != 0 {
				t.Fatalf("second migration: %+v, %v; want already done, nothing written", again, err)
			}
		})
	}
}

func TestMigrate_DryRun_WritesNothing(t *testing.T) {
	store := mem.New()
	olderPush(t, store, index.FormatVersion, "data/x", "1")
	olderPush(t, store, index.FormatVersion, "data/y", "2")
	counted := wrap.Count(store)
	rep, err := index.Migrate(t.Context(), counted, index.MigrateOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if c := counted.Counts(); c.Put+c.CondPut+c.Delete != 0 {
		t.Fatalf("a dry run wrote: %+v", c)
	}
	if !slices.Contains(rep.Writes, index.ManifestKey) || !slices.Contains(rep.Writes, index.CheckpointKey(3)) || !rep.DryRun {
		t.Fatalf("dry run says it would write %v, want the checkpoint of 3 and the manifest", rep.Writes)
	}
	h, err := index.ReadHead(t.Context(), store, nil)
	if err != nil || h.Manifest.Format != index.FormatVersion {
		t.Fatalf("after a dry run: %+v %v", h.Manifest, err)
	}
}

// An older silt's format-3 push whose compare-and-swap is in flight when
// the migration lands loses its swap, reads a head of a format it does not
// know and refuses the bucket (ErrNewerFormat), having committed nothing;
// a cache of this silt that pulled before the migration pushes the same
// change on the migrated head: nothing is lost.
func TestMigrate_OlderWriterMidPush_RefusedThenThisSiltCarriesOn(t *testing.T) {
	store := mem.New()
	g := newGate(store, isManifestCAS)
	g.armed.Store(false)
	olderPush(t, g, index.FormatVersion, "data/a", "1")
	w := pulled(t, store) // holds the head of seq 1
	g.armed.Store(true)
	done := make(chan error, 1)
	go func() {
		_, err := legacy.Push(t.Context(), g, index.FormatVersion, map[string][]byte{"data/b": []byte("2")})
		done <- err
	}()
	<-g.arrived // the older writer's swap on seq 1 is held
	if _, err := index.Migrate(t.Context(), store, index.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	close(g.release)
	if err := <-done; !errors.Is(err, index.ErrNewerFormat) {
		t.Fatalf("the older silt's push beside the migration: %v, want ErrNewerFormat", err)
	}
	h, err := index.ReadHead(t.Context(), store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.Manifest.Format != index.DefaultFormat || h.Manifest.Seq != 2 {
		t.Fatalf("head after the refused push: format %d seq %d, want the migration's seq 2 of format %d", h.Manifest.Format, h.Manifest.Seq, index.DefaultFormat)
	}
	pushFile(t, w, "data/b", "2")
	if h, err = index.ReadHead(t.Context(), store, nil); err != nil {
		t.Fatal(err)
	}
	if h.Manifest.Format != index.DefaultFormat || h.Manifest.Seq != 3 {
		t.Fatalf("head: format %d seq %d, want the push at seq 3 of format %d", h.Manifest.Format, h.Manifest.Seq, index.DefaultFormat)
	}
	peer := pulled(t, store)
	if got := tree(t, peer); got["data/a"] != "1" || got["data/b"] != "2" {
		t.Fatalf("peer reads %v, want data/a and data/b", got)
	}
}

// A push of this silt to a bucket an older silt made (format 3 or 4) is
// refused before anything is uploaded, naming the format, and leaves the
// head where it was; after the migration the same push goes through.
func TestPush_OlderFormatBucket_RefusedBeforeUpload(t *testing.T) {
	for _, format := range []int{index.FormatVersion, index.LogFormat, index.DeltaFormat} {
		t.Run(fmt.Sprint("format", format), func(t *testing.T) {
			store := mem.New()
			olderPush(t, store, format, "data/m/old", "from an older silt")
			counted := wrap.Count(store)
			c := openCache(t, counted)
			if _, err := c.Pull(t.Context(), syncer.PullOptions{}); err != nil {
				t.Fatalf("pull of a format-%d bucket: %v", format, err)
			}
			writeFile(t, c, "data/m/new", "dirty in this silt's cache")
			if err := c.MarkDirty("data/m/new"); err != nil {
				t.Fatal(err)
			}
			before := counted.Counts()
			_, err := c.Push(t.Context(), syncer.PushOptions{})
			if !errors.Is(err, index.ErrMigrateRequired) {
				t.Fatalf("push to a format-%d bucket: %v, want ErrMigrateRequired", format, err)
			}
			var mr *index.MigrateRequiredError
			if !errors.As(err, &mr) || mr.Format != format {
				t.Fatalf("push to a format-%d bucket: %v, want a *MigrateRequiredError naming format %d", format, err, format)
			}
			if d := counted.Counts().Sub(before); d.Put+d.CondPut != 0 {
				t.Errorf("the refused push wrote: %+v", d)
			}
			h, err := index.ReadHead(t.Context(), store, nil)
			if err != nil {
				t.Fatal(err)
			}
			if h.Manifest.Format != format || h.Manifest.Seq != 1 {
				t.Fatalf("head after the refused push: format %d seq %d, want format %d seq 1", h.Manifest.Format, h.Manifest.Seq, format)
			}
			if _, err := index.Migrate(t.Context(), store, index.MigrateOptions{}); err != nil {
				t.Fatal(err)
			}
			st, err := c.Push(t.Context(), syncer.PushOptions{})
			if err != nil {
				t.Fatalf("push after the migration: %v", err)
			}
			if st.Files.Uploaded != 1 || st.Seq != 3 {
				t.Errorf("push after the migration: seq %d, %+v; want data/m/new uploaded at seq 3", st.Seq, st.Files)
			}
			peer := pulled(t, store)
			if got := tree(t, peer); got["data/m/old"] != "from an older silt" || got["data/m/new"] != "dirty in this silt's cache" {
				t.Fatalf("peer reads %v, want both files", got)
			}
		})
	}
}

// The crash sweep of migrate: a migration killed before each of its writes
// (the write refused, nothing after it sent) leaves a bucket every reader
// reads as before or after, and running it again finishes it with every
// snapshot kept.
func TestMigrate_KilledAtEveryWrite_ReRunFinishes(t *testing.T) {
	for _, format := range []int{index.FormatVersion, index.LogFormat, index.DeltaFormat} {
		for _, mode := range []wrap.Mode{wrap.FailBefore, wrap.FailAfter} {
			for k := 1; ; k++ {
				store := mem.New()
				olderPush(t, store, format, "data/m/a", "1")
				olderPush(t, store, format, "data/m/b", "2")
				before := snapshots(t, store)
				f := wrap.Faults(store)
				isWrite := func(v wrap.Verb, _ string) bool { return v == wrap.VerbPut || v == wrap.VerbCondPut }
				f.Add(wrap.Rule{Match: isWrite, Nth: k, Times: 1 << 20, Mode: mode, Err: &backend.Error{Op: "put", Err: context.Canceled}})
				_, err := index.Migrate(t.Context(), f, index.MigrateOptions{Attempts: 1})
				if f.Fired() == 0 {
					if err != nil {
						t.Fatal(err)
					}
					break // k is past the migration's last write
				}
				name := fmt.Sprintf("format %d, %v at write %d", format, mode, k)
				// Killed here: the bucket reads as one of the two heads.
				h, err := index.ReadHead(t.Context(), store, nil)
				if err != nil {
					t.Fatalf("%s: the bucket does not read: %v", name, err)
				}
				if h.Manifest.Seq != 2 && h.Manifest.Seq != 3 {
					t.Fatalf("%s: head seq %d", name, h.Manifest.Seq)
				}
				if _, err := index.Migrate(t.Context(), store, index.MigrateOptions{}); err != nil {
					t.Fatalf("%s: the re-run: %v", name, err)
				}
				migrated(t, store, before, 2)
				b := openCache(t, store)
				pushFile(t, b, "data/m/c", "3")
				if got := snapshots(t, store); len(got) != len(before)+2 {
					t.Fatalf("%s: %d snapshots after the re-run and a push, want %d", name, len(got), len(before)+2)
				}
			}
		}
	}
}

// gc of a migrated bucket keeps the format-3 snapshots superseded within
// its grace period whole, and removes them (history first) past it.
func TestMigrate_GC_KeepsOldSnapshotsWithinGraceDropsThemPast(t *testing.T) {
	store := mem.New()
	olderPush(t, store, index.FormatVersion, "data/a", "1")
	olderPush(t, store, index.FormatVersion, "data/a", "2")
	if _, err := index.Migrate(t.Context(), store, index.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := snapshots(t, store)
	rep, err := index.GC(t.Context(), store, index.GCOptions{OlderThan: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Data) != 0 || len(rep.History) != 0 {
		t.Fatalf("gc within the grace period removed %v %v", rep.Data, rep.History)
	}
	if got := snapshots(t, store); !maps.EqualFunc(got, before, maps.Equal) {
		t.Fatalf("gc within the grace: %v, want %v", got, before)
	}
	later := func() time.Time { return time.Now().Add(3 * time.Hour) }
	rep, err = index.GC(t.Context(), store, index.GCOptions{OlderThan: time.Hour, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	var hist int
	for _, o := range rep.History {
		if strings.HasPrefix(o.Key, index.HistoryPrefix) {
			hist++
		}
	}
	if hist != 2 {
		t.Fatalf("gc past the grace removed %d history copies (%v), want seqs 1 and 2", hist, rep.History)
	}
	got := snapshots(t, store) // every listed one still reads
	if _, ok := got[3]; !ok || len(got) != 1 {
		t.Fatalf("after gc past the grace: %v, want the head 3 alone", slices.Sorted(maps.Keys(got)))
	}
	peer := pulled(t, store)
	if tree(t, peer)["data/a"] != "2" {
		t.Fatal("the head lost its file to gc")
	}
}

// Found by the model's migration actor: a bucket migrated from format 3
// has no log entry at the migration's seq (its commit point is the
// manifest's swap), so every cold reader, which checks that the entry of
// the checkpoint it starts from is still there, took the slow path
// (listing the log and the checkpoints: 10 requests) until the next
// commit. The migration now writes that entry, a reset.
func TestMigrate_Regression_Format3ColdReadTakesTheSlowPath(t *testing.T) {
	store := mem.New()
	olderPush(t, store, index.FormatVersion, "data/m/f", "1")
	a := pulled(t, store) // a cache of this silt that pulled before the migration
	if _, err := index.Migrate(t.Context(), store, index.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	for _, dir := range []string{a.Root(), t.TempDir()} { // its own cache, then a new one
		c := wrap.Count(store)
		s, err := syncer.Open(t.Context(), syncer.Config{Backend: c, Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Pull(t.Context(), syncer.PullOptions{}); err != nil {
			t.Fatal(err)
		}
		s.Close()
		// The fast path lists one block of the log (cumulative entries);
		// the slow one listed the log and the checkpoints.
		if d := c.Counts(); d.List > 1 || d.Total() > 6 {
			t.Errorf("first pull after the migration into %s: %+v, want at most one list and 6 requests", dir, d)
		}
	}
}

// format4Collected makes a format-4 bucket of three pushes of an older
// silt on a store clock (gc ages log entries by it) and runs a gc past
// the grace, which collects the oldest entries; it returns the store and
// its clock.
func format4Collected(t *testing.T) (backend.Backend, *wrap.Clock) {
	t.Helper()
	clock := wrap.NewClock(time.Now())
	store := wrap.Clocked(mem.New(), clock)
	for i := range 3 {
		olderPush(t, store, index.LogFormat, "data/m/f", fmt.Sprint(i))
	}
	clock.Advance(3 * time.Hour)
	if _, err := index.GC(t.Context(), store, index.GCOptions{OlderThan: time.Hour, RepackBelow: -1, Now: clock.Now}); err != nil {
		t.Fatal(err)
	}
	return store, clock
}

// Found by the model's migration actor: in a format-4 bucket whose gc had
// collected the oldest log entries, silt log after the migration listed
// only the migration's snapshot: the format-4 entries left were below no
// checkpoint the log continues from. Each holds its whole manifest and is
// listed on its own.
func TestMigrate_Regression_Format4AfterGCListsTheOldHead(t *testing.T) {
	store, _ := format4Collected(t)
	before := snapshots(t, store)
	if _, ok := before[3]; !ok || len(before) >= 3 {
		t.Fatalf("before the migration silt log lists %v, want the head 3 and gc to have collected some", slices.Sorted(maps.Keys(before)))
	}
	if _, err := index.Migrate(t.Context(), store, index.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	migrated(t, store, before, 3)
}

// Found by the model's migration actor: a migration from format 3 that
// lost its manifest swap to a peer's commit left the checkpoint of the
// seq it had aimed at, a state no commit made; gc and silt log started
// from it and failed ("a forked log"). The lost attempt deletes it, and
// a successful migration deletes any left below its seq.
func TestMigrate_Regression_LostRaceLeavesAStaleCheckpoint(t *testing.T) {
	store := mem.New()
	olderPush(t, store, index.FormatVersion, "data/m/f", "1")
	a := pulled(t, store) // a cache of this silt that pulled before the migration
	f := wrap.Faults(store)
	raced := false
	f.Add(wrap.Rule{Match: func(v wrap.Verb, key string) bool {
		if v == wrap.VerbCondPut && key == index.ManifestKey && !raced {
			raced = true
			// An older silt's peer commits in format 3 meanwhile.
			olderPush(t, store, index.FormatVersion, "data/m/g", "peer's, committed while the migration was in flight")
		}
		return false
	}})
	rep, err := index.Migrate(t.Context(), f, index.MigrateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !raced || rep.Attempts != 2 || rep.Seq != 3 {
		t.Fatalf("report %+v (raced %v), want the second attempt to migrate at seq 3", rep, raced)
	}
	for seq, files := range snapshots(t, store) {
		if seq == 2 && files["data/m/g"] == "" {
			t.Errorf("snapshot 2 lost the peer's commit: %v", files)
		}
	}
	if _, err := index.GC(t.Context(), store, index.GCOptions{OlderThan: 0, RepackBelow: -1}); err != nil {
		t.Fatalf("gc after a migration that lost a race: %v", err)
	}
	pushFile(t, a, "data/m/h", "after")
	b := pulled(t, store)
	if got := readFile(t, b, "data/m/g"); !strings.HasPrefix(got, "peer's") {
		t.Errorf("data/m/g = %q", got)
	}
}

// Found by the model's liveness leg: gc of a bucket migrated from format 4
// marked only what the log holds from the migration's checkpoint on, so
// the format-4 entries below it, which silt log still lists, lost their
// shards within the grace period ("listed in the manifest but missing").
// They are roots while young and are deleted, entry before data, past it.
func TestMigrate_Regression_Format4GCDeletesTheShardsOfListedEntries(t *testing.T) {
	// The log no longer runs from the genesis, so the migration's
	// checkpoint is the lowest state.
	store, clock := format4Collected(t)
	olderPush(t, store, index.LogFormat, "data/m/f", "3")
	olderPush(t, store, index.LogFormat, "data/m/g", "4")
	if _, err := index.Migrate(t.Context(), store, index.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := snapshots(t, store)
	if _, ok := before[4]; !ok || len(before) < 3 {
		t.Fatalf("after the migration silt log lists %v, want 4, 5 and the migration's 6", slices.Sorted(maps.Keys(before)))
	}
	gc := func() {
		t.Helper()
		if _, err := index.GC(t.Context(), store, index.GCOptions{OlderThan: time.Hour, RepackBelow: -1, Now: clock.Now}); err != nil {
			t.Fatal(err)
		}
	}
	gc()
	if got := snapshots(t, store); !maps.EqualFunc(got, before, maps.Equal) {
		t.Fatalf("gc within the grace: %v, want %v", got, before)
	}
	clock.Advance(3 * time.Hour)
	gc()
	got := snapshots(t, store) // every listed one still reads
	if !maps.Equal(got[6], before[6]) || len(got) != 1 {
		t.Fatalf("after gc past the grace: %v, want the head 6 alone with %v", got, before[6])
	}
}
