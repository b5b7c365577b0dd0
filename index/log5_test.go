package index_test

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
)

// deltaCommit commits, on b's head in DeltaFormat, the head's shards with
// the shard for each path in files replaced by one holding that file
// (written, with its object), checkpointing every `every` commits.
func deltaCommit(t *testing.T, b backend.Backend, now func() time.Time, every int, files map[string]string) index.Head {
	t.Helper()
	ctx := context.Background()
	base, err := index.ReadHead(ctx, b, now)
	if err != nil {
		t.Fatal(err)
	}
	res, err := index.Commit(ctx, b, base, func(ctx context.Context, base index.Head) (index.Proposal, error) {
		m := &index.Manifest{Seq: base.Manifest.Seq + 1, Shards: slices.Clone(base.Manifest.Shards), ShardMaxEntries: 4}
		if len(m.Shards) == 0 {
			data, id := index.EncodeFreshShard(nil)
			if _, err := backend.PutBytes(ctx, b, index.ShardKey(id), data, backend.Cond{}); err != nil {
				return index.Proposal{}, err
			}
			m.Shards = []index.ShardRef{{Lo: "", ID: id, Bytes: int64(len(data))}}
		}
		for _, p := range slices.Sorted(maps.Keys(files)) {
			c := files[p]
			if _, err := backend.PutBytes(ctx, b, index.ObjectKey(sum(c)), []byte(c), backend.Cond{}); err != nil {
				return index.Proposal{}, err
			}
			entries := map[string]index.Entry{p: {Size: int64(len(c)), SHA256: sum(c), Seq: m.Seq}}
			data, id := index.EncodeFreshShard(entries)
			if _, err := backend.PutBytes(ctx, b, index.ShardKey(id), data, backend.Cond{}); err != nil {
				return index.Proposal{}, err
			}
			ref := index.ShardRef{Lo: p, ID: id, Count: 1, Bytes: int64(len(data))}
			i, found := slices.BinarySearchFunc(m.Shards, ref.Lo, func(r index.ShardRef, lo string) int { return strings.Compare(r.Lo, lo) })
			if found {
				m.Shards[i] = ref
			} else {
				m.Shards = slices.Insert(m.Shards, i, ref)
			}
		}
		return index.Proposal{Next: m}, nil
	}, index.CommitOptions{Now: now, CheckpointEvery: every})
	if err != nil {
		t.Fatal(err)
	}
	return res.Head
}

// keyOf names the file of shard i in these tests: one file a shard, keys
// that sort as their numbers.
func keyOf(i int) string { return fmt.Sprintf("d/%06d", i) }

// A one-file commit in DeltaFormat writes a log entry that holds only what
// changed since its base: its size does not grow with the number of
// shards. After the first commit of 10 shards the entry carries those 10
// (they were touched since the genesis, its base); the first commit of
// 1,000 touched more than an entry carries, so it rolled the base.
func TestDelta_OneFileCommit_EntryDoesNotGrowWithTheBucket(t *testing.T) {
	for _, n := range []int{10, 1000} {
		b := mem.New()
		files := map[string]string{}
		for i := range n {
			files[keyOf(i)] = fmt.Sprint("v", i)
		}
		deltaCommit(t, b, time.Now, 1000, files)
		head := deltaCommit(t, b, time.Now, 1000, map[string]string{keyOf(n / 2): "changed"})
		data, _, err := backend.ReadAll(t.Context(), b, index.LogKey(head.Manifest.Seq), backend.GetOptions{}, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		limit := 400
		if n+1 <= index.MaxTouched {
			limit += 120 * (n + 1)
		}
		if len(data) > limit {
			t.Errorf("%d shards: a one-file commit's entry is %d bytes, want at most %d: %s", n, len(data), limit, data)
		}
		if len(head.Manifest.Shards) != n+1 || head.Manifest.Entries() != n {
			t.Fatalf("%d shards: head has %d shards", n, len(head.Manifest.Shards))
		}
		got := readHead(t, b)
		if !got.Same(head) {
			t.Fatalf("%d shards: a fresh reader reads seq %d, want %d", n, got.Manifest.Seq, head.Manifest.Seq)
		}
	}
}

// A reader that holds a head and one that holds nothing find the same
// state: from the held state and the deltas, and from the newest
// checkpoint (through the hint) and the deltas above it.
func TestDelta_ReadersFromStateAndFromCheckpoint_Agree(t *testing.T) {
	b := mem.New()
	warm := deltaCommit(t, b, time.Now, 4, map[string]string{"a": "1", "m": "1", "z": "1"})
	var head index.Head
	for i := range 9 {
		head = deltaCommit(t, b, time.Now, 4, map[string]string{[]string{"a", "m", "z", "q"}[i%4]: fmt.Sprint(i)})
	}
	if head.Manifest.Seq != 10 {
		t.Fatalf("head %d", head.Manifest.Seq)
	}
	mustExist(t, b, index.CheckpointKey(4), true)
	mustExist(t, b, index.CheckpointKey(8), true)
	mustExist(t, b, index.CheckpointKey(10), false)
	got, err := index.ReadHeadSince(t.Context(), b, warm, time.Now)
	if err != nil || !got.Same(head) {
		t.Fatalf("warm reader: seq %d (%v), want %d", got.Manifest.Seq, err, head.Manifest.Seq)
	}
	count := wrap.Count(b)
	cold := readHead(t, count)
	if !cold.Same(head) {
		t.Fatalf("cold reader: seq %d, want %d", cold.Manifest.Seq, head.Manifest.Seq)
	}
	// The hint (root of 8), its one page, the listing of the log's block
	// and entry 10, cumulative from 8 (FORMAT.md, "Cumulative entries").
	if n := count.Counts().Total(); n != 4 {
		t.Errorf("cold read: %d requests, want 4", n)
	}
	for seq := uint64(1); seq <= 10; seq++ {
		h, err := index.ReadLogEntry(t.Context(), b, seq)
		if err != nil || h.Manifest.Seq != seq {
			t.Fatalf("snapshot %d: %v", seq, err)
		}
	}
}

// An entry whose delta does not make the state it names, or that deletes
// a shard its base does not hold, is a corrupt index, never a head.
func TestDelta_EntryThatLies_IsCorrupt(t *testing.T) {
	for name, edit := range map[string]func(string) string{
		"state": func(s string) string {
			i := strings.Index(s, `"state":"`) + 9
			return s[:i] + strings.Repeat("0", 64) + s[i+64:]
		},
		"del": func(s string) string { return strings.Replace(s, `"set":`, `"del":["nope"],"set":`, 1) },
		"prev": func(s string) string {
			i := strings.Index(s, `"prev":"`) + 8
			return s[:i] + strings.Repeat("ab", 32) + s[i+64:]
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := mem.New()
			warm := deltaCommit(t, b, time.Now, 100, map[string]string{"a": "1"})
			deltaCommit(t, b, time.Now, 100, map[string]string{"b": "1"})
			deltaCommit(t, b, time.Now, 100, map[string]string{"a": "2"})
			data, _, err := backend.ReadAll(t.Context(), b, index.LogKey(3), backend.GetOptions{}, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := backend.PutBytes(t.Context(), b, index.LogKey(3), []byte(edit(string(data))), backend.Cond{}); err != nil {
				t.Fatal(err)
			}
			_, err = index.ReadHeadSince(t.Context(), b, warm, time.Now)
			if !errors.Is(err, index.ErrCorruptIndex) {
				t.Fatalf("read over an entry that lies: %v, want ErrCorruptIndex", err)
			}
		})
	}
}

// A lost hint, and a newest checkpoint that lost a page, are not a lost
// index: a reader falls back to an older checkpoint the log continues.
func TestDelta_LostHintAndBrokenCheckpoint_HeadStillReads(t *testing.T) {
	b := mem.New()
	var head index.Head
	for i := range 10 {
		head = deltaCommit(t, b, time.Now, 4, map[string]string{fmt.Sprint("f", i%3): fmt.Sprint(i)})
	}
	ctx := t.Context()
	root, _, err := backend.ReadAll(ctx, b, index.CheckpointKey(8), backend.GetOptions{}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	id := strings.SplitN(strings.SplitN(string(root), `"id":"`, 2)[1], `"`, 2)[0]
	root4, _, _ := backend.ReadAll(ctx, b, index.CheckpointKey(4), backend.GetOptions{}, 1<<20)
	if strings.Contains(string(root4), id) {
		t.Skip("checkpoints 4 and 8 share their page")
	}
	if err := b.Delete(ctx, index.PageKey(id), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	if got := readHead(t, b); !got.Same(head) {
		t.Fatalf("hint's checkpoint broken: read seq %d, want %d", got.Manifest.Seq, head.Manifest.Seq)
	}
	if err := b.Delete(ctx, index.ManifestKey, backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	if got := readHead(t, b); !got.Same(head) {
		t.Fatalf("hint gone: read seq %d, want %d", got.Manifest.Seq, head.Manifest.Seq)
	}
}

// gc deletes log entries only up to a checkpoint that reads, and only once
// they are old; the head, and every snapshot from that checkpoint up, still
// read; a gc at once later deletes nothing more.
func TestDelta_GC_DeletesEntriesOnlyBelowAReadableCheckpoint(t *testing.T) {
	clock := wrap.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := wrap.Clocked(mem.New(), clock)
	for i := range 10 {
		deltaCommit(t, b, clock.Now, 4, map[string]string{fmt.Sprint("f", i%3): fmt.Sprint(i)})
	}
	ctx := t.Context()
	gc := func() index.GCReport {
		t.Helper()
		rep, err := index.GC(ctx, b, index.GCOptions{OlderThan: time.Hour, RepackBelow: -1, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	rep := gc()
	if len(rep.History) != 0 {
		t.Fatalf("gc of a young log deleted %v", rep.History)
	}
	mustExist(t, b, index.CheckpointKey(10), true) // gc checkpoints the head
	clock.Advance(2 * time.Hour)
	head := deltaCommit(t, b, clock.Now, 4, map[string]string{"g": "1"})
	gc()
	// The cut is checkpoint 8: 10 is old but its successor 11 is not, so
	// entry 10 stays, and with it 9. Entries 1 to 8 and the root of 4 go.
	for seq := uint64(1); seq <= 8; seq++ {
		mustExist(t, b, index.LogKey(seq), false)
	}
	for seq := uint64(9); seq <= 11; seq++ {
		mustExist(t, b, index.LogKey(seq), true)
	}
	mustExist(t, b, index.CheckpointKey(4), false)
	mustExist(t, b, index.CheckpointKey(8), true)
	if got := readHead(t, b); !got.Same(head) {
		t.Fatalf("after gc: read seq %d, want %d", got.Manifest.Seq, head.Manifest.Seq)
	}
	for seq := uint64(8); seq <= 11; seq++ {
		if _, err := index.ReadLogEntry(ctx, b, seq); err != nil {
			t.Fatalf("snapshot %d after gc: %v", seq, err)
		}
	}
	if _, err := index.ReadLogEntry(ctx, b, 7); !backend.IsNotExist(err) {
		t.Fatalf("snapshot 7 after gc: %v, want not found", err)
	}
	log, err := index.Log(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, e := range log {
		got = append(got, e.Seq)
	}
	if !slices.Equal(got, []uint64{11, 10, 9, 8}) {
		t.Fatalf("silt log after gc lists %v, want 11 10 9 8", got)
	}
	if err := b.Delete(ctx, index.ManifestKey, backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	if got := readHead(t, b); !got.Same(head) {
		t.Fatalf("after gc, hint gone: read seq %d, want %d", got.Manifest.Seq, head.Manifest.Seq)
	}
	if rep := gc(); len(rep.History) != 0 {
		t.Fatalf("a second gc deleted %v", rep.History)
	}
}

// gc never cuts at a checkpoint that does not read: with the newest old
// checkpoint's page gone, it cuts at the one before, or not at all.
func TestDelta_GC_BrokenCheckpointIsNoCut(t *testing.T) {
	clock := wrap.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := wrap.Clocked(mem.New(), clock)
	for i := range 9 {
		deltaCommit(t, b, clock.Now, 4, map[string]string{fmt.Sprint("f", i): "x"})
	}
	ctx := t.Context()
	root, _, err := backend.ReadAll(ctx, b, index.CheckpointKey(8), backend.GetOptions{}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range strings.Split(string(root), `"id":"`)[1:] {
		if err := b.Delete(ctx, index.PageKey(part[:32]), backend.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(2 * time.Hour)
	head := deltaCommit(t, b, clock.Now, 100, map[string]string{"g": "1"})
	if _, err := index.GC(ctx, b, index.GCOptions{OlderThan: time.Hour, RepackBelow: -1, Now: clock.Now}); err != nil {
		t.Fatal(err)
	}
	mustExist(t, b, index.LogKey(4), false)
	mustExist(t, b, index.LogKey(5), true)
	if got := readHead(t, b); !got.Same(head) {
		t.Fatalf("after gc: read seq %d, want %d", got.Manifest.Seq, head.Manifest.Seq)
	}
	for seq := uint64(4); seq <= 10; seq++ {
		if _, err := index.ReadLogEntry(ctx, b, seq); err != nil {
			t.Fatalf("snapshot %d after gc: %v", seq, err)
		}
	}
}

// A shard whose entries pass the bucket's byte bound is split by bytes.
func TestSplit_ByteBound(t *testing.T) {
	m := &index.Manifest{Format: index.DeltaFormat, ShardMaxEntries: 1000, ShardMaxBytes: index.MinShardMaxBytes}
	entries := map[string]index.Entry{}
	for i := range 100 {
		entries[fmt.Sprintf("dir/%s/%04d", strings.Repeat("x", 100), i)] = index.Entry{Size: 1, SHA256: sum("x")}
	}
	parts := m.Split("", entries)
	if len(parts) < 5 {
		t.Fatalf("%d parts, want the 100 entries of ~210 bytes cut at 2 KiB", len(parts))
	}
	n := 0
	for i, p := range parts {
		data, _ := index.EncodeShard(p.Entries)
		if len(data) > index.MinShardMaxBytes {
			t.Errorf("part %d: %d bytes, bound %d", i, len(data), index.MinShardMaxBytes)
		}
		n += len(p.Entries)
	}
	if n != 100 || parts[0].Lo != "" {
		t.Fatalf("parts hold %d entries, first lo %q", n, parts[0].Lo)
	}
}

// A log whose head's state reads from no checkpoint (a delta below it
// gone, and the hint) is an error for readers, and recover commits the
// newest snapshot that reads as a reset on the newest entry, then a
// checkpoint of it: the bucket reads again.
func TestDelta_Recover_ResetOnAHeadThatDoesNotRead(t *testing.T) {
	b := mem.New()
	for i := range 6 {
		deltaCommit(t, b, time.Now, 4, map[string]string{fmt.Sprint("f", i): "x"})
	}
	ctx := t.Context()
	want, err := index.ReadLogEntry(ctx, b, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{index.LogKey(5), index.ManifestKey} {
		if err := b.Delete(ctx, k, backend.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := index.ReadHead(ctx, b, time.Now); !errors.Is(err, index.ErrCorruptIndex) {
		t.Fatalf("read of a head that does not read: %v, want ErrCorruptIndex", err)
	}
	rep, err := index.Recover(ctx, b, index.RecoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.From != 4 || rep.Seq != 7 {
		t.Fatalf("recover: from %d as %d, want 4 as 7 (%+v)", rep.From, rep.Seq, rep)
	}
	got := readHead(t, b)
	if got.Manifest.Seq != 7 || !slices.Equal(got.Manifest.Shards, want.Manifest.Shards) {
		t.Fatalf("after recover: seq %d, shards %v, want 7 with snapshot 4's", got.Manifest.Seq, got.Manifest.Shards)
	}
	mustExist(t, b, index.CheckpointKey(7), true)
}

// A checkpoint root whose pages make another state than the one it names
// is not read as the head: the reader falls back to the log.
func TestDelta_CheckpointThatLies_IsSkipped(t *testing.T) {
	b := mem.New()
	var head index.Head
	for i := range 5 {
		head = deltaCommit(t, b, time.Now, 4, map[string]string{fmt.Sprint("f", i): "x"})
	}
	ctx := t.Context()
	root, _, err := backend.ReadAll(ctx, b, index.CheckpointKey(4), backend.GetOptions{}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(root), `"state":"`) + 9
	lie := string(root[:i]) + strings.Repeat("0", 64) + string(root[i+64:])
	for _, k := range []string{index.CheckpointKey(4), index.ManifestKey} {
		if _, err := backend.PutBytes(ctx, b, k, []byte(lie), backend.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := readHead(t, b); !got.Same(head) {
		t.Fatalf("read seq %d, want %d", got.Manifest.Seq, head.Manifest.Seq)
	}
	if _, err := index.ReadLogEntry(ctx, b, 4); err != nil {
		t.Fatalf("snapshot 4 beside a checkpoint that lies: %v", err)
	}
}
