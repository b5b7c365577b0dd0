package syncer

import (
	"errors"
	"slices"
	"testing"

	"github.com/siltsync/silt/index"
)

func TestManifest_Cover_DirectoriesFilesAndDepths(t *testing.T) {
	m := &index.Manifest{Shards: []index.ShardRef{{Lo: ""}, {Lo: "data/a/b/c/m1/state/5"}, {Lo: "data/a/b/c/m2"}, {Lo: "data/z"}}}
	for _, tc := range []struct {
		scope []string
		want  []int
	}{
		{nil, []int{0, 1, 2, 3}},
		{[]string{"data/a/b/c/m1"}, []int{0, 1}},            // a directory spanning two shards
		{[]string{"data/a/b/c/m1/state"}, []int{0, 1}},      // a deeper directory, same shards
		{[]string{"data/a/b/c/m1/state/7/raw"}, []int{1}},   // a file
		{[]string{"data/a/b/c/m2/"}, []int{2}},              // trailing slash
		{[]string{"data/a"}, []int{0, 1, 2}},                // a type directory
		{[]string{"data/zz", "data/a/b/c/m2"}, []int{2, 3}}, // several paths
	} {
		sc, err := newScope(tc.scope)
		if err != nil {
			t.Fatal(err)
		}
		if got := sc.cover(m); !slices.Equal(got, tc.want) {
			t.Errorf("cover(%v) = %v, want %v", tc.scope, got, tc.want)
		}
	}
}

func TestScope_Contains_NoSiblingLeak(t *testing.T) {
	sc, _ := newScope([]string{"data/m1"})
	for p, want := range map[string]bool{"data/m1": true, "data/m1/x": true, "data/m10": false, "data/m1-x": false, "data": false} {
		if got := sc.contains(p); got != want {
			t.Errorf("contains(%q) = %v", p, got)
		}
	}
}

func TestManifest_Within_ExactDirectoryOnly(t *testing.T) {
	m := &index.Manifest{Shards: []index.ShardRef{{Lo: ""}, {Lo: "a/"}, {Lo: "a0"}}}
	sc, _ := newScope([]string{"a"})
	if sc.within(m, 0) || !sc.within(m, 1) || sc.within(m, 2) {
		t.Errorf("within: %v %v %v", sc.within(m, 0), sc.within(m, 1), sc.within(m, 2))
	}
}

func TestNormalizePath_RefusesEscapes(t *testing.T) {
	for _, p := range []string{"../a", "a/../../b", "/abs", "a/.silt/x", ".silt/x", "a\x00b", "a//b", "a/./b"} {
		if _, err := normalizePath(p); !errors.Is(err, index.ErrInvalidPath) {
			t.Errorf("normalizePath(%q) = %v", p, err)
		}
	}
	for in, want := range map[string]string{"./a/b/": "a/b", "": "", ".": "", "/": ""} {
		if got, err := normalizePath(in); err != nil || got != want {
			t.Errorf("normalizePath(%q) = %q, %v", in, got, err)
		}
	}
}

func TestDropEmpty_PassesTheRangeOn(t *testing.T) {
	if got := dropEmpty([]index.ShardRef{{Lo: "", Count: 0}, {Lo: "m", Count: 2}}); len(got) != 1 || got[0].Lo != "" {
		t.Errorf("dropEmpty = %+v", got)
	}
	if got := dropEmpty([]index.ShardRef{{Lo: "", Count: 0, ID: "x"}}); len(got) != 1 {
		t.Errorf("dropEmpty of an emptied index = %+v, want one empty shard", got)
	}
}
