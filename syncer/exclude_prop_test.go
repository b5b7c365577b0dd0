package syncer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/siltsync/silt/internal/ignore"
	"github.com/siltsync/silt/syncer"
)

// Property: whatever the rules and the tree, a push commits exactly the
// files the rules do not exclude, and a later walk of everything (after
// local deletions and a new rule) never deletes an excluded path
// remotely. The Matcher is the oracle; TestMatcher_Path_AgreesWithGit
// checks it against git.
func TestSyncer_Push_Property_ExcludedNeverInTheIndex(t *testing.T) {
	segs := []string{"a", "b", "*.x", "a*", "**", "[ab]", "?"}
	names := []string{"a", "b", "a.x", "ab", "c"}
	rapid.Check(t, func(rt *rapid.T) {
		rule := func(label string) string {
			var parts []string
			for range rapid.IntRange(1, 2).Draw(rt, label+"segs") {
				parts = append(parts, rapid.SampledFrom(segs).Draw(rt, label+"seg"))
			}
			r := strings.Join(parts, "/")
			if rapid.Bool().Draw(rt, label+"dir") {
				r += "/"
			}
			if rapid.IntRange(0, 3).Draw(rt, label+"neg") == 0 {
				r = "!" + r
			}
			return r
		}
		var exclude, include []string
		for range rapid.IntRange(0, 3).Draw(rt, "excludes") {
			exclude = append(exclude, rule("x"))
		}
		for range rapid.IntRange(0, 1).Draw(rt, "includes") {
			include = append(include, rule("i"))
		}
		b := fileStore(t)
		s, err := syncer.Open(t.Context(), syncer.Config{Backend: b, Dir: t.TempDir()})
		if err != nil {
			rt.Fatal(err)
		}
		defer s.Close()
		files := map[string]bool{}
		for range rapid.IntRange(1, 8).Draw(rt, "files") {
			var parts []string
			for range rapid.IntRange(1, 3).Draw(rt, "depth") {
				parts = append(parts, rapid.SampledFrom(names).Draw(rt, "name"))
			}
			p := strings.Join(parts, "/")
			abs := filepath.Join(s.Root(), filepath.FromSlash(p))
			if os.MkdirAll(filepath.Dir(abs), 0o755) != nil || os.WriteFile(abs, []byte(p), 0o644) != nil {
				continue // a file where a directory is, or the reverse
			}
			files[p] = true
		}
		var m ignore.Matcher
		if m.Exclude("x", exclude...) != nil || m.Include("i", include...) != nil {
			rt.Fatal("rules do not compile")
		}
		opts := syncer.PushOptions{All: true, Exclude: exclude, Include: include}
		if _, err := s.Push(t.Context(), opts); err != nil {
			rt.Fatal(err)
		}
		committed := remoteEntries(t, b)
		for p := range files {
			if _, ok := committed[p]; ok == m.Excluded(p) {
				rt.Fatalf("rules %q include %q: %s committed %v, excluded %v", exclude, include, p, ok, m.Excluded(p))
			}
		}
		// Delete everything locally, exclude one more thing, walk it all.
		extra := rule("e")
		for p := range files {
			os.Remove(filepath.Join(s.Root(), filepath.FromSlash(p)))
		}
		if err := m.Exclude("e", extra); err != nil {
			rt.Fatal(err)
		}
		opts.Exclude = append(opts.Exclude, extra)
		if _, err := s.Push(t.Context(), opts); err != nil {
			rt.Fatal(err)
		}
		after := remoteEntries(t, b)
		for p := range committed {
			if _, ok := after[p]; ok != m.Excluded(p) {
				rt.Fatalf("rules %q+%q include %q: %s after deleting it locally: committed %v, excluded %v", exclude, extra, include, p, ok, m.Excluded(p))
			}
		}
	})
}
