package index_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/internal/legacy"
)

// logCommit commits files (path -> content) on b's head in the log format,
// on the clock now, and returns the new head.
func logCommit(t *testing.T, b backend.Backend, now func() time.Time, files map[string]string) index.Head {
	t.Helper()
	return logCommitEvery(t, b, now, 0, files)
}

// legacyCommit4 commits files as an older silt writing format 4 does,
// and returns the head as read on the clock now.
func legacyCommit4(t *testing.T, b backend.Backend, now func() time.Time, files map[string]string) index.Head {
	t.Helper()
	fs := map[string][]byte{}
	for p, c := range files {
		fs[p] = []byte(c)
	}
	if _, err := legacy.Push(context.Background(), b, index.LogFormat, fs); err != nil {
		t.Fatal(err)
	}
	h, err := index.ReadHead(context.Background(), b, now)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func logCommitEvery(t *testing.T, b backend.Backend, now func() time.Time, every int, files map[string]string) index.Head {
	t.Helper()
	ctx := context.Background()
	base, err := index.ReadHead(ctx, b, now)
	if err != nil {
		t.Fatal(err)
	}
	res, err := index.Commit(ctx, b, base, func(ctx context.Context, base index.Head) (index.Proposal, error) {
		entries := map[string]index.Entry{}
		for p, c := range files {
			entries[p] = index.Entry{Size: int64(len(c)), SHA256: sum(c), Seq: base.Manifest.Seq + 1}
			if _, err := backend.PutBytes(ctx, b, index.ObjectKey(sum(c)), []byte(c), backend.Cond{}); err != nil {
				return index.Proposal{}, err
			}
		}
		data, id := index.EncodeFreshShard(entries)
		if _, err := backend.PutBytes(ctx, b, index.ShardKey(id), data, backend.Cond{}); err != nil {
			return index.Proposal{}, err
		}
		m := &index.Manifest{Seq: base.Manifest.Seq + 1, Shards: []index.ShardRef{{Lo: "", ID: id, Count: len(entries), Bytes: int64(len(data))}}}
		return index.Proposal{Next: m}, nil
	}, index.CommitOptions{Now: now, CheckpointEvery: every})
	if err != nil {
		t.Fatal(err)
	}
	return res.Head
}

func mustExist(t *testing.T, b backend.Backend, key string, want bool) {
	t.Helper()
	_, err := b.Stat(context.Background(), key)
	if got := err == nil; got != want {
		t.Fatalf("%s exists = %v (%v), want %v", key, got, err, want)
	}
}

// A bucket commits each seq as its own object, keeps the marker and a
// hint (the newest checkpoint's root), and every reader finds the head.
func TestLog_Commits_EachSeqItsOwnObject(t *testing.T) {
	b := mem.New()
	var head index.Head
	for i := range 20 {
		head = logCommitEvery(t, b, time.Now, 16, map[string]string{"f": string(rune('a' + i))})
	}
	if head.Manifest.Seq != 20 || !head.IsLog() {
		t.Fatalf("head seq %d log %v", head.Manifest.Seq, head.IsLog())
	}
	for seq := uint64(1); seq <= 20; seq++ {
		mustExist(t, b, index.LogKey(seq), true)
		mustExist(t, b, index.HistoryKey(seq), false) // the log is the history
	}
	mustExist(t, b, index.HistoryKey(0), true) // the marker
	hint, _, err := backend.ReadAll(context.Background(), b, index.ManifestKey, backend.GetOptions{}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	root, _, err := backend.ReadAll(context.Background(), b, index.CheckpointKey(16), backend.GetOptions{}, 1<<20)
	if err != nil || string(hint) != string(root) {
		t.Fatalf("hint is not the root of checkpoint 16 (written every 16): %v", err)
	}
	got := readHead(t, b)
	if got.Manifest.Seq != 20 || string(got.Data) != string(head.Data) {
		t.Fatalf("read head seq %d, want 20", got.Manifest.Seq)
	}
	e, err := index.ReadLogEntry(context.Background(), b, 7)
	if err != nil || e.Manifest.Seq != 7 {
		t.Fatalf("log entry 7: %v", err)
	}
}

// An unchanged head costs one request while the reader's observation is
// younger than LogTrust, and two after: the absent successor and a check
// that the head itself is still there.
func TestLog_UnchangedRead_OneRequestWhileFresh(t *testing.T) {
	clock := wrap.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := wrap.Clocked(mem.New(), clock)
	head := logCommit(t, store, clock.Now, map[string]string{"f": "1"})
	c := wrap.Count(store)
	ctx := context.Background()
	h, err := index.ReadHeadSince(ctx, c, head, clock.Now)
	if !errors.Is(err, backend.ErrNotModified) || h.Manifest.Seq != 1 {
		t.Fatalf("fresh: %v seq %d", err, h.Manifest.Seq)
	}
	if n := c.Counts().Total(); n != 1 {
		t.Fatalf("fresh unchanged read: %d requests, want 1", n)
	}
	clock.Advance(index.LogTrust + time.Second)
	before := c.Counts()
	h, err = index.ReadHeadSince(ctx, c, h, clock.Now)
	if !errors.Is(err, backend.ErrNotModified) {
		t.Fatal(err)
	}
	if d := c.Counts().Sub(before); d.Get != 1 || d.Stat != 1 || d.Total() != 2 {
		t.Fatalf("stale unchanged read: %+v, want a get and a stat", d)
	}
	// The stale read renewed the observation: one request again.
	before = c.Counts()
	if _, err := index.ReadHeadSince(ctx, c, h, clock.Now); !errors.Is(err, backend.ErrNotModified) {
		t.Fatal(err)
	}
	if n := c.Counts().Sub(before).Total(); n != 1 {
		t.Fatalf("renewed: %d requests, want 1", n)
	}
}

// gc of a format-4 bucket (an older silt's) deletes old log entries
// lowest first; a reader whose position gc deleted, and one starting from
// a hint gc left behind, still find the head, never a deleted entry's
// absence taken for "nothing newer".
func TestLog_GCDeletesPrefix_StaleReaderFindsHead(t *testing.T) {
	clock := wrap.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := wrap.Clocked(mem.New(), clock)
	ctx := context.Background()
	old := legacyCommit4(t, store, clock.Now, map[string]string{"f": "1"})
	for i := range 5 {
		legacyCommit4(t, store, clock.Now, map[string]string{"f": string(rune('2' + i))})
	}
	clock.Advance(3 * time.Hour)
	head := legacyCommit4(t, store, clock.Now, map[string]string{"f": "new"})
	rep, err := index.GC(ctx, store, index.GCOptions{OlderThan: time.Hour, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	// Entries 1 to 5 had successors older than the grace: deleted; 6 is
	// kept (its successor, 7, is young), and so is the head.
	if len(rep.History) != 5 {
		t.Fatalf("gc removed %d log entries, want 5: %+v", len(rep.History), rep.History)
	}
	mustExist(t, store, index.LogKey(1), false)
	mustExist(t, store, index.LogKey(6), true)
	// A reader still at seq 1 with an old observation: log/2 is gone, and
	// so is log/1, so it lists.
	h, err := index.ReadHeadSince(ctx, store, old, clock.Now)
	if err != nil || h.Manifest.Seq != head.Manifest.Seq {
		t.Fatalf("stale reader: seq %d (%v), want %d", h.Manifest.Seq, err, head.Manifest.Seq)
	}
	// A hint pointing at a deleted entry (a writer's late hint write).
	if _, err := backend.PutBytes(ctx, store, index.ManifestKey, old.Data, backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	if got := readHead(t, store); got.Manifest.Seq != head.Manifest.Seq {
		t.Fatalf("from a stale hint: seq %d, want %d", got.Manifest.Seq, head.Manifest.Seq)
	}
	// Every snapshot gc kept is readable.
	for _, seq := range []uint64{6, 7} {
		s, err := index.OpenSnapshotAt(ctx, store, seq)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Check(ctx, true); err != nil {
			t.Fatalf("snapshot %d: %v", seq, err)
		}
	}
}

// A writer whose base is older than LogTrust re-reads before it creates
// the successor: gc may have deleted that successor, and creating it
// again would fork the log. The commit lands on the real head.
func TestLog_StaleBase_NeverRecreatesDeletedEntry(t *testing.T) {
	clock := wrap.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := wrap.Clocked(mem.New(), clock)
	ctx := context.Background()
	stale := logCommitEvery(t, store, clock.Now, 3, map[string]string{"f": "1"})
	for _, f := range []string{"2", "3", "4"} { // checkpointed at 3
		logCommitEvery(t, store, clock.Now, 3, map[string]string{"f": f})
	}
	clock.Advance(3 * time.Hour)
	logCommitEvery(t, store, clock.Now, 3, map[string]string{"f": "5"})
	rep, err := index.GC(ctx, store, index.GCOptions{OlderThan: time.Hour, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.History) == 0 {
		t.Fatalf("gc deleted no log entry: %+v", rep)
	}
	mustExist(t, store, index.LogKey(2), false)
	res, err := index.Commit(ctx, store, stale, func(_ context.Context, base index.Head) (index.Proposal, error) {
		m := *base.Manifest
		m.Seq = base.Manifest.Seq + 1
		return index.Proposal{Next: &m}, nil
	}, index.CommitOptions{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if res.Head.Manifest.Seq != 6 {
		t.Fatalf("committed seq %d, want 6 (on the real head)", res.Head.Manifest.Seq)
	}
	mustExist(t, store, index.LogKey(2), false)
}

// A lost or damaged hint is not a lost index: readers find the head from
// the log (the marker says it is one), and nothing needs recovering.
func TestLog_HintLostOrDamaged_HeadFromLog(t *testing.T) {
	b := mem.New()
	ctx := context.Background()
	for i := range 3 {
		logCommit(t, b, time.Now, map[string]string{"f": string(rune('a' + i))})
	}
	for _, damage := range []func(){
		func() { _ = b.Delete(ctx, index.ManifestKey, backend.Cond{}) },
		func() { _, _ = backend.PutBytes(ctx, b, index.ManifestKey, []byte("{not json"), backend.Cond{}) },
	} {
		damage()
		if h := readHead(t, b); h.Manifest.Seq != 3 {
			t.Fatalf("head seq %d, want 3", h.Manifest.Seq)
		}
		head := logCommit(t, b, time.Now, map[string]string{"f": "next"})
		if head.Manifest.Seq != 4 {
			t.Fatalf("commit after a lost hint: seq %d", head.Manifest.Seq)
		}
		_ = b.Delete(ctx, index.LogKey(4), backend.Cond{}) // undo for the next damage
	}
}

// A version-3 writer that read an empty bucket and a log-format writer
// race to create it: the create-if-absent of manifest.json decides, and
// the loser commits in the winner's format on the winner's head.
func TestLog_CreationRace_OneFormatWins(t *testing.T) {
	b := mem.New()
	ctx := context.Background()
	empty := readHead(t, b)
	logCommit(t, b, time.Now, map[string]string{"f": "log"})
	res, err := index.Commit(ctx, b, empty, func(_ context.Context, base index.Head) (index.Proposal, error) {
		m := *base.Manifest
		m.Seq = base.Manifest.Seq + 1
		return index.Proposal{Next: &m}, nil
	}, index.CommitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Head.IsLog() || res.Head.Manifest.Seq != 2 {
		t.Fatalf("loser committed seq %d in format %d, want 2 in the log", res.Head.Manifest.Seq, res.Head.Manifest.Format)
	}
}

// A forked log (an entry that does not build on the one a reader holds)
// is refused as corrupt, never read as the next snapshot.
func TestLog_ForkedEntry_Refused(t *testing.T) {
	b := mem.New()
	ctx := context.Background()
	h1 := logCommit(t, b, time.Now, map[string]string{"f": "1"})
	forged := *h1.Manifest
	forged.Seq, forged.Prev = 2, sum("not entry 1")
	if _, err := backend.PutBytes(ctx, b, index.LogKey(2), index.EncodeManifest(&forged), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := index.ReadHeadSince(ctx, b, h1, time.Now); !errors.Is(err, index.ErrCorruptIndex) {
		t.Fatalf("forked entry: %v, want ErrCorruptIndex", err)
	}
}

// Recover in a log bucket re-commits an older snapshot as the head's
// successor, and silt log lists every entry.
func TestLog_Recover_UndoesABadCommit(t *testing.T) {
	b := mem.New()
	ctx := context.Background()
	logCommit(t, b, time.Now, map[string]string{"f": "good"})
	logCommit(t, b, time.Now, map[string]string{"f": "bad"})
	rep, err := index.Recover(ctx, b, index.RecoverOptions{Seq: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Seq != 3 || rep.From != 1 {
		t.Fatalf("recover: %+v", rep)
	}
	s, err := index.OpenSnapshot(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	e, ok, err := s.Lookup(ctx, "f")
	if err != nil || !ok || e.SHA256 != sum("good") {
		t.Fatalf("after recover: %+v %v %v", e, ok, err)
	}
	// Run again (a recover killed after its commit landed): nothing more.
	if again, err := index.Recover(ctx, b, index.RecoverOptions{Seq: 1}); err != nil || !again.NoOp || again.Seq != 0 {
		t.Fatalf("recover again: %+v %v, want a no-op", again, err)
	}
	log, err := index.Log(ctx, b)
	if err != nil || len(log) != 3 || !log[0].Current || log[0].Seq != 3 || log[2].Seq != 1 {
		t.Fatalf("log: %+v %v", log, err)
	}
}

// A gc whose clock runs ahead of the store's (here by months) deletes no
// log entry the store stamped recently: ages of log entries are measured
// on the store's clock, and a reader trusting a recent observation that
// its successor was absent is never misled. Found by the model: its
// quiescent gc runs on the real clock beside a store on the model's.
func TestLog_GCClockAhead_DeletesByTheStoreClock(t *testing.T) {
	clock := wrap.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := wrap.Clocked(mem.New(), clock)
	ctx := context.Background()
	reader := logCommit(t, store, clock.Now, map[string]string{"f": "1"})
	logCommit(t, store, clock.Now, map[string]string{"f": "2"})
	head := logCommit(t, store, clock.Now, map[string]string{"f": "3"})
	rep, err := index.GC(ctx, store, index.GCOptions{OlderThan: 0, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.History) != 0 {
		t.Fatalf("gc ahead of the store deleted %d log entries", len(rep.History))
	}
	h, err := index.ReadHeadSince(ctx, store, reader, clock.Now)
	if err != nil || h.Manifest.Seq != head.Manifest.Seq {
		t.Fatalf("reader at seq 1: seq %d (%v), want %d", h.Manifest.Seq, err, head.Manifest.Seq)
	}
}

// stallHint moves the clock when the hint is written: a gc paused between
// its start and its deletions.
type stallHint struct {
	backend.Backend
	clock *wrap.Clock
	by    time.Duration
}

func (s *stallHint) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	if key == index.ManifestKey {
		s.clock.Advance(s.by)
	}
	return s.Backend.Put(ctx, key, body, size, cond)
}

// A gc paused after its start keeps every snapshot current within the
// grace period of its start, however late its deletions run. Found by the
// model (the gc actor pauses gc before a drawn request).
func TestLog_GCPaused_KeepsWhatWasYoungAtItsStart(t *testing.T) {
	clock := wrap.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := wrap.Clocked(mem.New(), clock)
	ctx := context.Background()
	for i := range 3 {
		logCommit(t, store, clock.Now, map[string]string{"f": string(rune('1' + i))})
	}
	rep, err := index.GC(ctx, &stallHint{Backend: store, clock: clock, by: 3 * time.Hour}, index.GCOptions{OlderThan: time.Hour, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.History) != 0 {
		t.Fatalf("a paused gc deleted %d log entries young at its start", len(rep.History))
	}
	for seq := uint64(1); seq <= 3; seq++ {
		mustExist(t, store, index.LogKey(seq), true)
	}
}

// An outside tool deletes the hint and the marker: readers take the bucket
// for an empty one, and Recover, which lists the log when the manifest is
// missing, brings back its head and repairs both. Found by the outside
// model with buckets of format 4.
func TestLog_HintAndMarkerGone_RecoverRepairs(t *testing.T) {
	b := mem.New()
	ctx := context.Background()
	for i := range 3 {
		logCommit(t, b, time.Now, map[string]string{"f": string(rune('a' + i))})
	}
	_ = b.Delete(ctx, index.ManifestKey, backend.Cond{})
	_ = b.Delete(ctx, index.HistoryKey(0), backend.Cond{})
	if h := readHead(t, b); h.Version != "" {
		t.Fatalf("without hint and marker: seq %d, want the empty bucket it reads as", h.Manifest.Seq)
	}
	rep, err := index.Recover(ctx, b, index.RecoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.NoOp || rep.From != 3 || rep.Manifest != "missing" {
		t.Fatalf("recover: %+v", rep)
	}
	if h := readHead(t, b); h.Manifest.Seq != 3 || !h.IsLog() {
		t.Fatalf("after recover: seq %d, want 3 in the log", h.Manifest.Seq)
	}
	mustExist(t, b, index.HistoryKey(0), true)
}
