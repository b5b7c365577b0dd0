package watch_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/syncer"
	"github.com/siltsync/silt/watch"
)

func TestRun_LocalWrite_ReachesBucketAndOtherWatch(t *testing.T) {
	_, b := bucket(t)
	a, other := cache(t, b), cache(t, b)
	wa := start(t, a, fast(), nil)
	wb := start(t, other, fast(), nil)
	from := wb.len()
	write(t, a.Root(), "data/m/config.json", "v1")
	wa.wait(t, 0, "push of the write", func(e watch.Event) bool {
		return e.Kind == watch.KindPush && e.Stats.Files.Uploaded == 1
	})
	if got := pullFresh(t, b, "data/m/config.json"); got != "v1" {
		t.Fatalf("bucket holds %q, want v1", got)
	}
	wb.wait(t, from, "the write in the other watching cache", landed(other.Root(), "data/m/config.json", "v1"))
}

func TestRun_RemoteChange_LandsInCache(t *testing.T) {
	_, b := bucket(t)
	watched, writer := cache(t, b), cache(t, b)
	w := start(t, watched, fast(), nil)
	write(t, writer.Root(), "a/b/c.txt", "remote")
	if _, err := writer.Push(context.Background(), syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	w.wait(t, 0, "the remote change", landed(watched.Root(), "a/b/c.txt", "remote"))
}

func TestRun_NewDirectory_IsWatched(t *testing.T) {
	_, b := bucket(t)
	a := cache(t, b)
	w := start(t, a, fast(), nil)
	write(t, a.Root(), "new/dir/first", "1")
	_, i := w.wait(t, 0, "push of the new directory", func(e watch.Event) bool {
		return e.Kind == watch.KindPush && e.Stats.Files.Uploaded == 1
	})
	// A file written later below the new directory has an event of its
	// own: the directory is watched now.
	write(t, a.Root(), "new/dir/second", "2")
	w.wait(t, i+1, "push of the second file", func(e watch.Event) bool {
		return e.Kind == watch.KindPush && e.Stats.Files.Uploaded == 1
	})
	if got := pullFresh(t, b, "new/dir/second"); got != "2" {
		t.Fatalf("bucket holds %q", got)
	}
}

func TestRun_BurstOfWrites_IsOneCommit(t *testing.T) {
	const n = 50
	_, b := bucket(t)
	a := cache(t, b)
	opts := fast()
	opts.Debounce = 500 * time.Millisecond // wide: the burst must fit in one
	w := start(t, a, opts, nil)
	from := w.len()
	for i := range n {
		write(t, a.Root(), fmt.Sprintf("burst/f%02d", i), fmt.Sprint("payload ", i))
	}
	e, i := w.wait(t, from, "the burst's commit", func(e watch.Event) bool {
		return e.Kind == watch.KindPush && e.Stats.Commit != nil
	})
	if e.Stats.Files.Uploaded != n {
		t.Fatalf("the first commit carries %d uploads, want all %d: %+v", e.Stats.Files.Uploaded, n, e.Stats.Files)
	}
	// Three polls later still one commit: nothing of the burst was left.
	for k := 0; k < 3; k++ {
		_, i = w.wait(t, i+1, "a poll", kind(watch.KindPull))
	}
	commits := 0
	for _, e := range w.snapshot()[from:] {
		if e.Kind == watch.KindPush && e.Stats.Commit != nil {
			commits++
		}
	}
	if commits != 1 {
		t.Fatalf("%d commits for a burst of %d writes, want 1", commits, n)
	}
}

func TestRun_Conflict_ReportedNothingOverwritten(t *testing.T) {
	_, b := bucket(t)
	a, other := cache(t, b), cache(t, b)
	write(t, a.Root(), "shared", "base")
	if _, err := a.Push(context.Background(), syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	opts := fast()
	opts.Poll = -1 // a sees the other side's edit only through its push
	w := start(t, a, opts, nil)
	if got := read(t, a.Root(), "shared"); got != "base" {
		t.Fatal(got)
	}
	if _, err := other.Pull(context.Background(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	write(t, other.Root(), "shared", "theirs")
	if _, err := other.Push(context.Background(), syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	write(t, a.Root(), "shared", "ours")
	e, _ := w.wait(t, 0, "the conflict", func(e watch.Event) bool {
		return e.Stats != nil && e.Stats.Files.Conflicts > 0
	})
	if len(e.Stats.Conflicts) != 1 || e.Stats.Conflicts[0].Path != "shared" {
		t.Fatalf("conflicts %+v", e.Stats.Conflicts)
	}
	if got := read(t, a.Root(), "shared"); got != "ours" {
		t.Errorf("local copy is %q, want ours kept", got)
	}
	if got := pullFresh(t, b, "shared"); got != "theirs" {
		t.Errorf("bucket holds %q, want theirs kept", got)
	}
}

func TestRun_NetworkGoneAndBack_RecoversNothingLost(t *testing.T) {
	_, b := bucket(t)
	f := wrap.Faults(b)
	a, other := cache(t, f), cache(t, b)
	w := start(t, a, fast(), nil)
	from := w.len()
	f.Add(wrap.Rule{}) // every request fails: the network is gone
	write(t, a.Root(), "offline/1", "written offline")
	_, i := w.wait(t, from, "a failed step", kind(watch.KindError))
	w.wait(t, i+1, "a second failure, backed off", func(e watch.Event) bool {
		return e.Kind == watch.KindError && e.Failures >= 2 && e.Retry > 0
	})
	write(t, a.Root(), "offline/2", "also offline")
	f.Reset() // and back
	w.wait(t, i+1, "recovery", kind(watch.KindRecovered))
	w.wait(t, i+1, "the offline writes pushed", func(watch.Event) bool {
		return pullFresh(t, b, "offline/1") == "written offline" && pullFresh(t, b, "offline/2") == "also offline"
	})
	// And the loop carries on after it: a remote change lands.
	write(t, other.Root(), "after", "x")
	if _, err := other.Push(context.Background(), syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	w.wait(t, i+1, "a remote change after the outage", landed(a.Root(), "after", "x"))
}

func TestRun_CancelDuringUpload_LeavesConsistentState(t *testing.T) {
	_, b := bucket(t)
	f := wrap.Faults(b)
	a := cache(t, f)
	w := start(t, a, fast(), nil)
	var once sync.Once
	stalled := make(chan struct{})
	f.Add(wrap.Rule{Mode: wrap.Stall, Match: func(v wrap.Verb, key string) bool {
		if v == wrap.VerbGet || v == wrap.VerbStat {
			return false
		}
		once.Do(func() { close(stalled) })
		return true
	}})
	write(t, a.Root(), "big/file", "bytes cut off by Ctrl-C")
	select {
	case <-stalled:
	case <-time.After(deadline):
		t.Fatal("the push never reached its upload")
	}
	if err := w.stop(); err != nil {
		t.Fatalf("Run after cancel: %v, want nil (a clean stop)", err)
	}
	w.wait(t, 0, "the stopped event", kind(watch.KindStopped))
	f.Reset()
	// A plain sync afterwards completes the push; the next finds nothing.
	ctx := context.Background()
	for round, want := range []int{1, 0} {
		if _, err := a.Pull(ctx, syncer.PullOptions{KeepLazy: true}); err != nil {
			t.Fatal(err)
		}
		st, err := a.Push(ctx, syncer.PushOptions{All: true})
		if err != nil {
			t.Fatal(err)
		}
		if st.Files.Uploaded != want || st.Files.Conflicts != 0 {
			t.Fatalf("sync %d after the cancel: %+v, want %d uploaded", round, st.Files, want)
		}
	}
	if got := pullFresh(t, b, "big/file"); got != "bytes cut off by Ctrl-C" {
		t.Fatalf("bucket holds %q", got)
	}
}

func TestRun_Idle_OneRequestPerPoll(t *testing.T) {
	_, b := bucket(t)
	c := wrap.Count(b)
	a := cache(t, c)
	write(t, a.Root(), "some/file", "x")
	r := newRecorder()
	var counts []wrap.Counts
	r.on = func(e watch.Event) {
		if e.Kind == watch.KindPull && e.Trigger == watch.TriggerPoll {
			counts = append(counts, c.Counts()) // read between steps: exact
		}
	}
	w := start(t, a, fast(), r)
	const polls = 10
	_, i := w.wait(t, 0, "the first poll", kind(watch.KindPull))
	for k := 0; k < polls+1; k++ {
		_, i = w.wait(t, i+1, "a poll", func(e watch.Event) bool { return e.Kind == watch.KindPull && e.Trigger == watch.TriggerPoll })
	}
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}
	for k := 1; k < len(counts); k++ {
		if d := counts[k].Sub(counts[k-1]); d.Total() != 1 {
			t.Fatalf("poll %d cost %d requests (%+v), want 1", k, d.Total(), d)
		}
	}
	for _, e := range w.snapshot() {
		if e.Kind == watch.KindPull && e.Trigger == watch.TriggerPoll && e.Stats.Requests.Total() != 1 {
			t.Fatalf("an idle pull reports %d requests", e.Stats.Requests.Total())
		}
	}
}

func TestRun_WalkFallback_NoRemoteRequestsFindsWrites(t *testing.T) {
	_, b := bucket(t)
	c := wrap.Count(b)
	a := cache(t, c)
	write(t, a.Root(), "kept", "x")
	r := newRecorder()
	var counts []wrap.Counts
	r.on = func(e watch.Event) {
		if e.Kind == watch.KindPush && e.Trigger == watch.TriggerWalk {
			counts = append(counts, c.Counts())
		}
	}
	opts := fast()
	opts.Poll, opts.Walk, opts.NoNotify = -1, 30*time.Millisecond, true
	w := start(t, a, opts, r)
	isWalk := func(e watch.Event) bool { return e.Kind == watch.KindPush && e.Trigger == watch.TriggerWalk }
	_, i := w.wait(t, 0, "a walk", isWalk)
	for k := 0; k < 4; k++ {
		_, i = w.wait(t, i+1, "a walk", isWalk)
	}
	r.mu.Lock()
	idle := append([]wrap.Counts(nil), counts...)
	r.mu.Unlock()
	for k := 1; k < len(idle); k++ {
		if d := idle[k].Sub(idle[k-1]); d.Total() != 0 {
			t.Fatalf("an idle walk cost %d requests (%+v), want 0", d.Total(), d)
		}
	}
	// Without events, the walk still finds a write.
	write(t, a.Root(), "found/by/walk", "y")
	w.wait(t, i+1, "the walk's push", func(e watch.Event) bool { return isWalk(e) && e.Stats.Files.Uploaded == 1 })
	if got := pullFresh(t, b, "found/by/walk"); got != "y" {
		t.Fatalf("bucket holds %q", got)
	}
}

func TestRun_LocalDeletion_Pushed(t *testing.T) {
	_, b := bucket(t)
	a := cache(t, b)
	write(t, a.Root(), "gone/soon", "x")
	w := start(t, a, fast(), nil)
	if got := pullFresh(t, b, "gone/soon"); got != "x" {
		t.Fatalf("the first sync did not push: %q", got)
	}
	from := w.len()
	if err := os.RemoveAll(filepath.Join(a.Root(), "gone")); err != nil {
		t.Fatal(err)
	}
	w.wait(t, from, "the deletion pushed", func(e watch.Event) bool { return e.Kind == watch.KindPush && e.Stats.Files.Deleted == 1 })
}

func TestRun_ExcludedAndInternal_NotPushed(t *testing.T) {
	_, b := bucket(t)
	a := cache(t, b)
	opts := fast()
	opts.Exclude = []string{"scratch/"}
	w := start(t, a, opts, nil)
	from := w.len()
	write(t, a.Root(), "scratch/tmp", "never")
	write(t, a.Root(), "real", "yes")
	w.wait(t, from, "the push", func(e watch.Event) bool { return e.Kind == watch.KindPush && e.Stats.Files.Uploaded == 1 })
	if got := pullFresh(t, b, "scratch/tmp"); got[0] != '<' {
		t.Fatalf("an excluded path reached the bucket: %q", got)
	}
}

func TestRun_InvalidOptions(t *testing.T) {
	_, b := bucket(t)
	err := watch.Run(context.Background(), cache(t, b), watch.Options{Debounce: -1})
	if !errors.Is(err, watch.ErrInvalidOptions) {
		t.Fatalf("Run: %v", err)
	}
}

func TestRun_ClosedCache_StopsWithStepError(t *testing.T) {
	_, b := bucket(t)
	a := cache(t, b)
	a.Close()
	err := watch.Run(context.Background(), a, fast())
	var se *watch.StepError
	if !errors.As(err, &se) || !errors.Is(err, syncer.ErrClosed) {
		t.Fatalf("Run on a closed cache: %v", err)
	}
}

func TestRun_StandingConflict_ReportedOnce(t *testing.T) {
	_, b := bucket(t)
	a, other := cache(t, b), cache(t, b)
	write(t, a.Root(), "shared", "base")
	if _, err := a.Push(context.Background(), syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Pull(context.Background(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	write(t, other.Root(), "shared", "theirs")
	if _, err := other.Push(context.Background(), syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	write(t, a.Root(), "shared", "ours") // before the watch: its first pull finds the conflict
	w := start(t, a, fast(), nil)
	_, i := w.wait(t, 0, "a poll", func(e watch.Event) bool { return e.Kind == watch.KindPull && e.Trigger == watch.TriggerPoll })
	for k := 0; k < 5; k++ {
		_, i = w.wait(t, i+1, "a poll", func(e watch.Event) bool { return e.Kind == watch.KindPull && e.Trigger == watch.TriggerPoll })
	}
	news := 0
	for _, e := range w.snapshot() {
		if e.Stats != nil && e.Stats.Files.Conflicts > e.Reported {
			news++
		}
	}
	if news != 1 {
		t.Fatalf("the standing conflict was reported as new %d times, want once", news)
	}
	if got := read(t, a.Root(), "shared"); got != "ours" {
		t.Errorf("local copy %q", got)
	}
}

func TestRun_FileStillBeingWritten_PushedWhole(t *testing.T) {
	_, b := bucket(t)
	a := cache(t, b)
	opts := fast()
	opts.Debounce = 400 * time.Millisecond
	w := start(t, a, opts, nil)
	from := w.len()
	f, err := os.Create(filepath.Join(a.Root(), "slow.log"))
	if err != nil {
		t.Fatal(err)
	}
	// A writer that pauses between chunks for less than the debounce:
	// the pauses are the workload, not a synchronisation.
	const chunks = 10
	for i := range chunks {
		if _, err := fmt.Fprintf(f, "chunk %d\n", i); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	want := read(t, a.Root(), "slow.log")
	e, _ := w.wait(t, from, "the push of the file", func(e watch.Event) bool { return e.Kind == watch.KindPush && e.Stats.Commit != nil })
	if e.Stats.Files.Uploaded != 1 {
		t.Fatalf("push %+v", e.Stats.Files)
	}
	if got := pullFresh(t, b, "slow.log"); got != want {
		t.Fatalf("the bucket holds %q, want the whole file %q", got, want)
	}
}
