package index_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/siltsync/silt/backend"
	_ "github.com/siltsync/silt/backend/fs" // file:// buckets
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
)

// openFile opens a file:// bucket the way the CLI does, returning its
// directory too.
func openFile(t *testing.T) (backend.Backend, string) {
	t.Helper()
	dir := t.TempDir()
	b, err := backend.Open(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, dir
}

// threeCommits commits seqs 1, 2 and 3, each with one more file.
func threeCommits(t *testing.T, b backend.Backend) {
	t.Helper()
	commit(t, b, 1, map[string]string{"data/a": "a1"})
	commit(t, b, 2, map[string]string{"data/a": "a2", "data/b": "b2"})
	commit(t, b, 3, map[string]string{"data/a": "a3", "data/b": "b2", "data/c": "c3"})
}

func allKeys(t *testing.T, b backend.Backend) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	err := b.List(context.Background(), "", backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		for _, o := range page {
			keys[o.Key] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func wantMissing(t *testing.T, what string, err error, history int, newest uint64) {
	t.Helper()
	var me *index.ManifestMissingError
	if !errors.Is(err, index.ErrManifestMissing) || !errors.As(err, &me) {
		t.Fatalf("%s: err = %v, want ErrManifestMissing", what, err)
	}
	if me.History != history || me.Newest != newest || !strings.Contains(err.Error(), "silt recover") {
		t.Errorf("%s: err = %q (%+v), want %d history copies, newest %d, and the way out", what, err, *me, history, newest)
	}
}

// TestGC_Regression_MissingManifestDeletesEverything: one lost key (the
// manifest) read as "seq 0, empty index", and gc then removed every
// object, pack, shard and history copy older than the grace. It now
// refuses, and deletes nothing.
func TestGC_Regression_MissingManifestDeletesEverything(t *testing.T) {
	b, _ := openFile(t)
	threeCommits(t, b)
	if err := b.Delete(context.Background(), index.ManifestKey, backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	before := allKeys(t, b)
	_, err := index.GC(context.Background(), b, index.GCOptions{OlderThan: 0})
	wantMissing(t, "gc", err, 2, 2)
	if after := allKeys(t, b); len(after) != len(before) {
		t.Errorf("gc on a missing manifest left %d of %d keys", len(after), len(before))
	}
}

// TestGC_NoManifestNoHistory_DeletesNothing: without any manifest read,
// nothing is provably unreachable (a killed first push and a lost first
// manifest look alike), so gc sweeps nothing.
func TestGC_NoManifestNoHistory_DeletesNothing(t *testing.T) {
	b, _ := openFile(t)
	commit(t, b, 1, map[string]string{"data/a": "a1"})
	if err := b.Delete(context.Background(), index.ManifestKey, backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	before := allKeys(t, b)
	rep, err := index.GC(context.Background(), b, index.GCOptions{OlderThan: 0})
	if err != nil {
		t.Fatal(err)
	}
	if after := allKeys(t, b); len(after) != len(before) || len(rep.Data)+len(rep.Shards) != 0 {
		t.Errorf("gc without a manifest removed %d shards and %d objects", len(rep.Shards), len(rep.Data))
	}
}

// TestSnapshot_Regression_CheckOkOnMissingManifest: check said "ok: seq 0,
// 0 entries" on a bucket whose manifest was lost; ls, log and a pull read
// it as empty too. Every reader now gets the typed error.
func TestSnapshot_Regression_CheckOkOnMissingManifest(t *testing.T) {
	b, _ := openFile(t)
	threeCommits(t, b)
	if err := b.Delete(context.Background(), index.ManifestKey, backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	_, err := index.OpenSnapshot(context.Background(), b)
	wantMissing(t, "open snapshot", err, 2, 2)
	_, err = index.Log(context.Background(), b)
	wantMissing(t, "log", err, 2, 2)
	_, err = index.OpenSnapshotAt(context.Background(), b, 1)
	wantMissing(t, "open snapshot 1", err, 2, 2)
}

// A manifest that is a FIFO or an empty directory on file:// is an error
// of its own; a directory holding keys reads as absent, so the history
// decides.
func TestReadManifest_NonRegularManifest_IsAnError(t *testing.T) {
	for _, kind := range []string{"fifo", "empty dir", "dir with keys"} {
		t.Run(kind, func(t *testing.T) {
			b, dir := openFile(t)
			threeCommits(t, b)
			path := filepath.Join(dir, filepath.FromSlash(index.ManifestKey))
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			var err error
			switch kind {
			case "fifo":
				err = unix.Mkfifo(path, 0o666)
			case "empty dir":
				err = os.Mkdir(path, 0o777)
			default:
				if err = os.Mkdir(path, 0o777); err == nil {
					err = os.WriteFile(filepath.Join(path, "x"), []byte("x"), 0o666)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = index.ReadManifest(context.Background(), b, backend.GetOptions{})
			if err == nil || backend.IsNotExist(err) {
				t.Fatalf("err = %v, want an error", err)
			}
			if kind == "dir with keys" {
				wantMissing(t, kind, err, 2, 2)
			}
		})
	}
}

// A fresh bucket stays "empty, seq 0", for one List request more.
func TestReadManifest_FreshBucket_EmptyForOneList(t *testing.T) {
	b, _ := openFile(t)
	// Lock objects and a killed first push's data are no commit.
	for _, k := range []string{index.LockKey("global"), index.ObjectKey(sum("x"))} {
		if _, err := backend.PutBytes(context.Background(), b, k, []byte("x"), backend.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	c := wrap.Count(b)
	h, err := index.ReadManifest(context.Background(), c, backend.GetOptions{})
	if err != nil || h.Version != "" || h.Manifest.Seq != 0 {
		t.Fatalf("ReadManifest = %+v, %v, want the empty index", h, err)
	}
	if n := c.Counts(); n.Get != 1 || n.List != 1 || n.Total() != 2 {
		t.Errorf("requests = %+v, want one GET and one LIST", n)
	}
}

// TestDecodeManifest_Regression_SeqAboveMaxSeqAccepted: a manifest seq
// above MaxSeq read as valid.
func TestDecodeManifest_Regression_SeqAboveMaxSeqAccepted(t *testing.T) {
	_, err := index.DecodeManifest(index.ManifestKey, []byte(`{"format":3,"seq":18446744073709551615,"shards":[]}`))
	var fe *index.FormatError
	if !errors.Is(err, index.ErrCorruptIndex) || !errors.As(err, &fe) || !strings.Contains(fe.Reason, "MaxSeq") {
		t.Fatalf("err = %v, want ErrCorruptIndex naming MaxSeq", err)
	}
	if _, err := index.DecodeManifest(index.ManifestKey, []byte(`{"format":3,"seq":18446744073709551614,"shards":[]}`)); err != nil {
		t.Errorf("seq MaxSeq: %v, want readable", err)
	}
}

// entriesOf reads the current snapshot's entries as path -> sha256.
func entriesOf(t *testing.T, b backend.Backend) (uint64, map[string]string) {
	t.Helper()
	snap, err := index.OpenSnapshot(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	if err := snap.Walk(context.Background(), "", func(p string, e index.Entry) error { out[p] = e.SHA256; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := snap.Check(context.Background(), true); err != nil {
		t.Errorf("check of the recovered snapshot: %v", err)
	}
	return snap.Seq(), out
}

func snapshotEntries(t *testing.T, b backend.Backend, seq uint64) map[string]string {
	t.Helper()
	snap, err := index.OpenSnapshotAt(context.Background(), b, seq)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	if err := snap.Walk(context.Background(), "", func(p string, e index.Entry) error { out[p] = e.SHA256; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func sameEntries(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestRecover_MissingManifest_RecommitsNewestHistoryAboveTheLostSeq(t *testing.T) {
	b, _ := openFile(t)
	threeCommits(t, b)
	want := snapshotEntries(t, b, 2)
	if err := b.Delete(context.Background(), index.ManifestKey, backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	rep, err := index.Recover(context.Background(), b, index.RecoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The lost manifest held seq 3 (history 2 was written when 3 was
	// committed): the recovery commits 4, never a second seq 3.
	if rep.Manifest != "missing" || rep.From != 2 || rep.Seq != 4 || rep.History != 2 {
		t.Errorf("report = %+v, want missing, from 2, seq 4", rep)
	}
	seq, got := entriesOf(t, b)
	if seq != 4 || !sameEntries(got, want) {
		t.Errorf("after recover: seq %d entries %v, want seq 4 with snapshot 2's %v", seq, got, want)
	}
	if _, err := index.GC(context.Background(), b, index.GCOptions{}); err != nil {
		t.Errorf("gc after recover: %v", err)
	}
}

func TestRecover_ManifestReplacedByOlder_RecommitsNewest(t *testing.T) {
	b, _ := openFile(t)
	threeCommits(t, b)
	commit(t, b, 4, map[string]string{"data/d": "d4"})
	want := snapshotEntries(t, b, 3)
	old, _, err := backend.ReadAll(context.Background(), b, index.HistoryKey(1), backend.GetOptions{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := backend.PutBytes(context.Background(), b, index.ManifestKey, old, backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	rep, err := index.Recover(context.Background(), b, index.RecoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Current != 1 || rep.From != 3 || rep.Seq != 5 {
		t.Errorf("report = %+v, want current 1, from 3, seq 5", rep)
	}
	if seq, got := entriesOf(t, b); seq != 5 || !sameEntries(got, want) {
		t.Errorf("after recover: seq %d entries %v, want snapshot 3's %v", seq, got, want)
	}
}

func TestRecover_Seq_UndoesABadPushAsANewCommit(t *testing.T) {
	b, _ := openFile(t)
	threeCommits(t, b)
	want := snapshotEntries(t, b, 1)
	rep, err := index.Recover(context.Background(), b, index.RecoverOptions{Seq: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Manifest != "ok" || rep.Current != 3 || rep.From != 1 || rep.Seq != 4 {
		t.Errorf("report = %+v, want ok, current 3, from 1, seq 4", rep)
	}
	if seq, got := entriesOf(t, b); seq != 4 || !sameEntries(got, want) {
		t.Errorf("after recover: seq %d entries %v, want snapshot 1's %v", seq, got, want)
	}
	// The undone snapshot stays in the history: undoing the undo is one more recover.
	if got := snapshotEntries(t, b, 3); len(got) != 3 {
		t.Errorf("snapshot 3 after recover: %v", got)
	}
}

func TestRecover_WholeManifest_NoOp(t *testing.T) {
	b, _ := openFile(t)
	threeCommits(t, b)
	before := allKeys(t, b)
	rep, err := index.Recover(context.Background(), b, index.RecoverOptions{})
	if err != nil || !rep.NoOp || rep.From != 3 || rep.Seq != 0 {
		t.Fatalf("Recover = %+v, %v, want a no-op at 3", rep, err)
	}
	if len(allKeys(t, b)) != len(before) {
		t.Error("a no-op recover wrote something")
	}
}

func TestRecover_DryRun_WritesNothing(t *testing.T) {
	b, _ := openFile(t)
	threeCommits(t, b)
	if err := b.Delete(context.Background(), index.ManifestKey, backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	before := allKeys(t, b)
	rep, err := index.Recover(context.Background(), b, index.RecoverOptions{DryRun: true})
	if err != nil || rep.From != 2 || rep.Seq != 0 || !rep.DryRun {
		t.Fatalf("Recover = %+v, %v", rep, err)
	}
	if len(allKeys(t, b)) != len(before) {
		t.Error("a dry run wrote something")
	}
}

func TestRecover_UnreadableManifestAndShard_SkipsToReadable(t *testing.T) {
	b, _ := openFile(t)
	threeCommits(t, b)
	want := snapshotEntries(t, b, 1)
	h2, err := index.ReadHistory(context.Background(), b, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(context.Background(), index.ShardKey(h2.Manifest.Shards[0].ID), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := backend.PutBytes(context.Background(), b, index.ManifestKey, []byte("{not json"), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	rep, err := index.Recover(context.Background(), b, index.RecoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rep.Manifest, "unreadable") || rep.From != 1 || rep.Seq != 4 || len(rep.Skipped) != 1 || rep.Skipped[0].Seq != 2 {
		t.Errorf("report = %+v, want unreadable, from 1 (2 skipped), seq 4", rep)
	}
	if seq, got := entriesOf(t, b); seq != 4 || !sameEntries(got, want) {
		t.Errorf("after recover: seq %d entries %v, want snapshot 1's %v", seq, got, want)
	}
}

func TestRecover_UnknownSeq_IsErrNoSnapshot(t *testing.T) {
	b, _ := openFile(t)
	threeCommits(t, b)
	if _, err := index.Recover(context.Background(), b, index.RecoverOptions{Seq: 9}); !errors.Is(err, index.ErrNoSnapshot) {
		t.Fatalf("err = %v, want ErrNoSnapshot", err)
	}
}

// A hostile or mistaken manifest at a huge seq is undone by recovering
// the real snapshot above it.
func TestRecover_SeqJump_RecoversAboveIt(t *testing.T) {
	b, _ := openFile(t)
	threeCommits(t, b)
	want := snapshotEntries(t, b, 3)
	commit(t, b, 1_000_000, map[string]string{"data/evil": "x"})
	rep, err := index.Recover(context.Background(), b, index.RecoverOptions{Seq: 3})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Seq != 1_000_001 {
		t.Errorf("report = %+v, want seq 1000001", rep)
	}
	if _, got := entriesOf(t, b); !sameEntries(got, want) {
		t.Errorf("entries %v, want %v", got, want)
	}
}

// TestSnapshot_Check_Regression_ForgedPackedEntryMissed: check --data
// identified packed entries by pack and offset, so a second entry at an
// existing member's offset with another size or sha256 was never read
// ("ok", while cat and every pull failed on it).
func TestSnapshot_Check_Regression_ForgedPackedEntryMissed(t *testing.T) {
	ctx := context.Background()
	b, _ := openFile(t)
	pack, _, err := index.PutPack(ctx, b, []byte("hello world"))
	if err != nil {
		t.Fatal(err)
	}
	entries := map[string]index.Entry{
		"data/a": {Size: 5, SHA256: sum("hello"), Seq: 1, Pack: pack},
		"data/b": {Size: 11, SHA256: sum("forged"), Seq: 1, Pack: pack},
	}
	data, id := index.EncodeShard(entries)
	if _, err := backend.PutBytes(ctx, b, index.ShardKey(id), data, backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	m := &index.Manifest{Format: index.FormatVersion, Seq: 1, Shards: []index.ShardRef{{Lo: "", ID: id, Count: 2, Bytes: int64(len(data))}}}
	if _, err := backend.PutBytes(ctx, b, index.ManifestKey, index.EncodeManifest(m), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	snap, err := index.OpenSnapshot(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := snap.Check(ctx, true)
	var oe *index.ObjectError
	if !errors.Is(err, index.ErrCorruptObject) || !errors.As(err, &oe) || oe.Path != "data/b" {
		t.Fatalf("check --data = %+v, %v; want data/b corrupt", rep, err)
	}
}

// A recovery to a snapshot from before the bucket recorded its split
// bound keeps the bound the current manifest records: the policy is the
// bucket's, not the snapshot's.
func TestRecover_Seq_KeepsTheCurrentShardBound(t *testing.T) {
	b, _ := openFile(t)
	threeCommits(t, b)
	ctx := context.Background()
	cur, err := index.ReadManifest(ctx, b, backend.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := *cur.Manifest
	m.ShardMaxEntries = 4
	if _, err := backend.PutBytes(ctx, b, index.ManifestKey, index.EncodeManifest(&m), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := index.Recover(ctx, b, index.RecoverOptions{Seq: 1}); err != nil {
		t.Fatal(err)
	}
	got, err := index.ReadManifest(ctx, b, backend.GetOptions{})
	if err != nil || got.Manifest.Seq != 4 || got.Manifest.ShardMaxEntries != 4 {
		t.Errorf("after recover: %+v, %v; want seq 4 with bound 4", got.Manifest, err)
	}
}
