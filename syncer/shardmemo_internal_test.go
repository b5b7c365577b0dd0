package syncer

import (
	"fmt"
	"testing"

	"github.com/siltsync/silt/index"
)

// A remembered shard answers only a manifest whose range for it holds all
// its entries: shards are named by content, but the range is the
// manifest's, and a hostile manifest could name a known shard where its
// entries do not belong (DecodeShard refuses that; the memo must too). The
// memo forgets the oldest past its bound.
func TestShardMemo_RangeIsCheckedForEachManifest(t *testing.T) {
	var sm shardMemo
	entries := map[string]index.Entry{"m/b": {}, "m/d": {}}
	sm.put("s1", entries)
	for _, tc := range []struct {
		r    index.Range
		want bool
	}{
		{index.All, true},
		{index.Range{Lo: "m/b", Hi: "m/e"}, true},
		{index.Range{Lo: "m/c", Hi: ""}, false}, // m/b is below it
		{index.Range{Lo: "", Hi: "m/d"}, false}, // m/d is not below m/d
	} {
		if _, ok := sm.get("s1", tc.r); ok != tc.want {
			t.Errorf("range %+v: remembered %v, want %v", tc.r, ok, tc.want)
		}
	}
	sm.put("empty", map[string]index.Entry{})
	if _, ok := sm.get("empty", index.Range{Lo: "x", Hi: "y"}); !ok {
		t.Error("an empty shard fits any range")
	}
	for i := range memoShards {
		sm.put(fmt.Sprint("more", i), entries)
	}
	if _, ok := sm.get("s1", index.All); ok {
		t.Error("the oldest shard is still remembered past the bound")
	}
	if _, ok := sm.get(fmt.Sprint("more", memoShards-1), index.All); !ok {
		t.Error("the newest shard is forgotten")
	}
}
