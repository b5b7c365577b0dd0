package index_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
)

// refsCommit commits, on b's head, the shard list edit makes of the
// head's (each new ref naming a fresh shard of its own), checkpointing
// every `every` commits.
func refsCommit(t *testing.T, b backend.Backend, every int, edit func(refs []index.ShardRef, shard func(lo string) index.ShardRef) []index.ShardRef) index.Head {
	t.Helper()
	ctx := context.Background()
	base, err := index.ReadHead(ctx, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := index.Commit(ctx, b, base, func(ctx context.Context, base index.Head) (index.Proposal, error) {
		shard := func(lo string) index.ShardRef {
			data, id := index.EncodeFreshShard(map[string]index.Entry{lo + "/" + time.Now().String(): {Size: 0, SHA256: strings.Repeat("0", 64)}})
			if _, err := backend.PutBytes(ctx, b, index.ShardKey(id), data, backend.Cond{}); err != nil {
				t.Fatal(err)
			}
			return index.ShardRef{Lo: lo, ID: id, Count: 1, Bytes: int64(len(data))}
		}
		refs := edit(slices.Clone(base.Manifest.Shards), shard)
		slices.SortFunc(refs, func(a, b index.ShardRef) int { return strings.Compare(a.Lo, b.Lo) })
		return index.Proposal{Next: &index.Manifest{Seq: base.Manifest.Seq + 1, Shards: refs}}, nil
	}, index.CommitOptions{CheckpointEvery: every})
	if err != nil {
		t.Fatal(err)
	}
	return res.Head
}

// setRef replaces (or adds) lo's ref; dropRef removes it.
func setRef(lo string) func([]index.ShardRef, func(string) index.ShardRef) []index.ShardRef {
	return func(refs []index.ShardRef, shard func(string) index.ShardRef) []index.ShardRef {
		refs = slices.DeleteFunc(refs, func(r index.ShardRef) bool { return r.Lo == lo })
		return append(refs, shard(lo))
	}
}

func dropRef(lo string) func([]index.ShardRef, func(string) index.ShardRef) []index.ShardRef {
	return func(refs []index.ShardRef, _ func(string) index.ShardRef) []index.ShardRef {
		return slices.DeleteFunc(refs, func(r index.ShardRef) bool { return r.Lo == lo })
	}
}

// entryOf decodes the fields of log entry seq a test looks at.
type cumEntry struct {
	Base *uint64          `json:"base"`
	Set  []index.ShardRef `json:"set"`
	Del  []string         `json:"del"`
	Gone []string         `json:"gone"`
}

func entryOf(t *testing.T, b backend.Backend, seq uint64) (cumEntry, []byte) {
	t.Helper()
	data, _, err := backend.ReadAll(context.Background(), b, index.LogKey(seq), backend.GetOptions{}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var e cumEntry
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatal(err)
	}
	return e, data
}

// A shard set and then dropped since the entries' base is named in Gone
// by every entry after, a shard the last commit drops in Del; a reader
// that jumps from the genesis (cold), one that reads entry by entry from
// each seq (warm), and the writer all hold the same head.
func TestCumulative_ShardSetThenGone_EveryReaderAgrees(t *testing.T) {
	b := mem.New()
	var heads []index.Head
	for _, edit := range []func([]index.ShardRef, func(string) index.ShardRef) []index.ShardRef{
		func(_ []index.ShardRef, shard func(string) index.ShardRef) []index.ShardRef {
			return []index.ShardRef{shard(""), shard("a"), shard("m")}
		},
		setRef("q"), dropRef("q"), setRef("z"), dropRef("m"),
	} {
		heads = append(heads, refsCommit(t, b, 1000, edit))
	}
	head := heads[len(heads)-1]
	e4, raw := entryOf(t, b, 4)
	if e4.Base == nil || *e4.Base != 0 || !slices.Contains(e4.Gone, "q") {
		t.Fatalf("entry 4 is not cumulative from 0 with q gone: %s", raw)
	}
	e5, raw := entryOf(t, b, 5)
	if !slices.Equal(e5.Del, []string{"m"}) || !slices.Contains(e5.Gone, "q") || slices.Contains(e5.Gone, "m") {
		t.Fatalf("entry 5: Del is not [m] or Gone lacks q: %s", raw)
	}
	count := wrap.Count(b)
	cold, err := index.ReadHead(context.Background(), count, nil)
	if err != nil || !cold.Same(head) {
		t.Fatalf("cold reader: %v, %v; want seq %d", cold.Manifest, err, head.Manifest.Seq)
	}
	if n := count.Counts().Total(); n != 3 {
		t.Errorf("cold read: %d requests, want 3 (the hint, the listing, entry 5)", n)
	}
	for _, h := range heads[:len(heads)-1] {
		got, err := index.ReadHeadSince(context.Background(), b, h, time.Now)
		if err != nil || !got.Same(head) {
			t.Fatalf("warm reader from %d: %v, %v", h.Manifest.Seq, got.Manifest, err)
		}
	}
}

// A hint older than the entries' base (its rewrite failed, say): the cold
// reader reads the base's checkpoint the newest entry names, then that
// entry: still a fixed number of requests, whatever the log's length.
func TestCumulative_StaleHint_ReadsTheBaseCheckpoint(t *testing.T) {
	b := mem.New()
	genesisHint, _, err := backend.ReadAll(context.Background(), b, index.ManifestKey, backend.GetOptions{}, 1<<20)
	if !backend.IsNotExist(err) {
		t.Fatalf("a new bucket has a hint: %v", err)
	}
	var head index.Head
	for i := range 10 {
		if i == 0 {
			head = refsCommit(t, b, 4, func(_ []index.ShardRef, shard func(string) index.ShardRef) []index.ShardRef {
				return []index.ShardRef{shard(""), shard("a")}
			})
			genesisHint, _, err = backend.ReadAll(context.Background(), b, index.ManifestKey, backend.GetOptions{}, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		head = refsCommit(t, b, 4, setRef([]string{"a", "k", "t"}[i%3]))
	}
	if e, raw := entryOf(t, b, 10); e.Base == nil || *e.Base != 8 {
		t.Fatalf("entry 10 is not cumulative from checkpoint 8: %s", raw)
	}
	if _, err := backend.PutBytes(context.Background(), b, index.ManifestKey, genesisHint, backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	count := wrap.Count(b)
	cold, err := index.ReadHead(context.Background(), count, nil)
	if err != nil || !cold.Same(head) {
		t.Fatalf("cold reader: %v, %v; want seq 10", cold.Manifest, err)
	}
	// The hint, the listing, entry 10, checkpoint 8's root and its page.
	if n := count.Counts().Total(); n != 5 {
		t.Errorf("cold read from a stale hint: %d requests, want 5 (%v)", n, count.Counts())
	}
}

// An entry whose cumulative part lies (a shard touched since its base left
// out of Set) while its plain delta is right: the jump makes another state
// than the entry names, and the reader walks entry by entry instead,
// reaching the right head.
func TestCumulative_EntryThatLies_FallsBackToTheWalk(t *testing.T) {
	b := mem.New()
	refsCommit(t, b, 1000, func(_ []index.ShardRef, shard func(string) index.ShardRef) []index.ShardRef {
		return []index.ShardRef{shard(""), shard("a"), shard("m")}
	})
	refsCommit(t, b, 1000, setRef("a"))
	head := refsCommit(t, b, 1000, setRef("m"))
	_, raw := entryOf(t, b, 3)
	var e map[string]any
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	set := e["set"].([]any)
	kept := set[:0]
	for _, r := range set {
		if r.(map[string]any)["lo"] != "a" {
			kept = append(kept, r)
		}
	}
	if len(kept) == len(set) {
		t.Fatalf("entry 3 does not carry shard a: %s", raw)
	}
	e["set"] = kept
	lied, _ := json.Marshal(e)
	if _, err := backend.PutBytes(context.Background(), b, index.LogKey(3), lied, backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	cold, err := index.ReadHead(context.Background(), b, nil)
	if err != nil || !cold.Same(head) {
		t.Fatalf("cold reader: %v, %v; want seq 3", cold.Manifest, err)
	}
}
