package index

import (
	"errors"
	"fmt"
	"testing"
)

func TestManifest_Split_HalvesPastTheBound(t *testing.T) {
	entries := map[string]Entry{}
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		entries[k] = Entry{}
	}
	parts := (&Manifest{ShardMaxEntries: 4}).Split("", entries)
	if len(parts) != 3 || parts[0].Lo != "" || parts[1].Lo != "c" || parts[2].Lo != "e" {
		t.Errorf("split = %+v", parts)
	}
	if parts := (&Manifest{ShardMaxEntries: 5}).Split("x", entries); len(parts) != 1 || parts[0].Lo != "x" {
		t.Errorf("split at the bound = %+v, want one part", parts)
	}
	// Not recorded: the default bound.
	if parts := (&Manifest{}).Split("", entries); len(parts) != 1 {
		t.Errorf("split without a recorded bound = %+v, want one part", parts)
	}
}

func TestManifest_ShardBound_RecordedWinsOverOwn(t *testing.T) {
	for _, tc := range []struct{ recorded, own, want int }{
		{4, 1000, 4},
		{1000, 4, 1000},
		{0, 4, 4},                        // not recorded: the writer's own
		{0, 0, DefaultShardMaxEntries},   // the writer's default
		{0, 1, MinShardMaxEntries},       // clamped up
		{0, 1 << 30, MaxShardMaxEntries}, // clamped down
		{0, -7, DefaultShardMaxEntries},  // negative is "unset"
		{MaxShardMaxEntries, 9, MaxShardMaxEntries},
	} {
		if got := (&Manifest{ShardMaxEntries: tc.recorded}).ShardBound(tc.own); got != tc.want {
			t.Errorf("ShardBound(recorded %d, own %d) = %d, want %d", tc.recorded, tc.own, got, tc.want)
		}
	}
}

func TestDecodeManifest_ShardBound_AbsentAndInRange(t *testing.T) {
	for _, tc := range []struct {
		field string
		want  int
	}{
		{``, 0},
		{`,"shard_max_entries":null`, 0},
		{`,"shard_max_entries":4`, 4},
		{`,"shard_max_entries":1000`, 1000},
		{fmt.Sprintf(`,"shard_max_entries":%d`, MaxShardMaxEntries), MaxShardMaxEntries},
	} {
		m, err := DecodeManifest(ManifestKey, []byte(`{"format":3,"seq":1,"shards":[]`+tc.field+`}`))
		if err != nil || m.ShardMaxEntries != tc.want {
			t.Errorf("decode with %q = %+v, %v; want bound %d", tc.field, m, err, tc.want)
		}
	}
	// Written and read back unchanged; not written when unrecorded.
	m := &Manifest{Format: FormatVersion, Seq: 2, ShardMaxEntries: 4}
	if got, err := DecodeManifest(ManifestKey, EncodeManifest(m)); err != nil || got.ShardMaxEntries != 4 {
		t.Errorf("round trip = %+v, %v", got, err)
	}
	if data := string(EncodeManifest(&Manifest{Format: FormatVersion})); data != `{"format":3,"seq":0,"shards":null}` {
		t.Errorf("unrecorded bound encodes as %s", data)
	}
}

// A hostile manifest's bound (which every writer of the bucket would obey)
// is refused, typed, rather than obeyed: 0 or below 4 would split every
// shard into parts of under two entries, a huge one would let shards grow
// past MaxShardBytes.
func TestDecodeManifest_ShardBound_HostileIsCorrupt(t *testing.T) {
	for _, v := range []string{"0", "-1", "3", fmt.Sprint(MaxShardMaxEntries + 1), "1e30", "99999999999999999999", "4.5", `"4"`} {
		_, err := DecodeManifest(ManifestKey, []byte(`{"format":3,"seq":1,"shards":[],"shard_max_entries":`+v+`}`))
		var fe *FormatError
		if !errors.Is(err, ErrCorruptIndex) || !errors.As(err, &fe) || fe.Key != ManifestKey {
			t.Errorf("shard_max_entries %s: err = %v, want a *FormatError with ErrCorruptIndex", v, err)
		}
	}
}
