package main

import (
	"strings"
	"testing"
)

// resolve --restore runs the same directly and through `silt serve`: the
// kept copy back in place and marked dirty, the same Stats (--json) and
// output, the same refusal of a path with nothing kept.
func TestCLI_BothWays_ResolveRestoreSameEffectsStatsAndOutput(t *testing.T) {
	outs := bothWays(t, []step{
		{writes("A", "data/t/m1/a", "one", "A", "data/t/m2/b", "two"), []string{"push", "--dir", "A"}},
		{nil, []string{"pull", "--dir", "B"}},
		{writes("B", "data/t/m1/a", "peer one", "B", "data/t/m2/b", "peer two"), []string{"push", "--dir", "B"}},
		{writes("A", "data/t/m1/a", "mine one", "A", "data/t/m2/b", "mine two"), []string{"push", "--dir", "A"}}, // two conflicts: exit 3
		{nil, []string{"resolve", "--dir", "A", "--take-remote", "--all"}},
		{nil, []string{"status", "--dir", "A", "--offline"}},
		{nil, []string{"resolve", "--dir", "A", "--restore", "data/t/m1/a", "-v"}},
		{nil, []string{"resolve", "--dir", "A", "--restore", "data/t/m2/b", "--json"}},
		{nil, []string{"resolve", "--dir", "A", "--restore", "data/t/m1/a"}},         // nothing kept any more: exit 1
		{nil, []string{"resolve", "--dir", "A", "--restore", "data/none", "--json"}}, // exit 1, typed
		{nil, []string{"resolve", "--dir", "A", "--restore", "../outside"}},          // a bad path
		{nil, []string{"status", "--dir", "A", "--offline", "--json"}},
		{nil, []string{"push", "--dir", "A", "--json"}},
	})
	if got := outs[7]; got.code != 0 || !contains(got.files, "data/t/m1/a=mine one", "data/t/m2/b=mine two") {
		t.Errorf("after the restores: exit %d, files\n%s\nwant both local copies back", got.code, got.files)
	}
	if got := outs[8]; got.code != 0 || !contains(got.files, "data/t/m1/a=peer one") {
		t.Errorf("a second restore of data/t/m1/a: exit %d, files\n%s\nwant the copy the first one replaced back", got.code, got.files)
	}
	if got := outs[9]; got.code != 1 || !contains(got.stdout, "no kept local copy") {
		t.Errorf("restore of a path with nothing kept: exit %d, stdout\n%s\nwant 1 and the reason", got.code, got.stdout)
	}
}

func contains(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
