package ignore_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/siltsync/silt/internal/ignore"
)

// git itself is the oracle: random rule sets and random trees, each path
// judged by the Matcher and by `git check-ignore --no-index` (parent
// directories included) must agree. Skipped where git is not installed.
func TestMatcher_Path_AgreesWithGit(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	segs := []string{"a", "b", "a.x", "ab", "*", "?", "[ab]", "[!a]*", "*.x", "**", "a*", "\\*"}
	names := []string{"a", "b", "a.x", "ab", "ba", "*"}
	rapid.Check(t, func(rt *rapid.T) {
		var rules []string
		for range rapid.IntRange(1, 4).Draw(rt, "rules") {
			var parts []string
			for range rapid.IntRange(1, 3).Draw(rt, "segs") {
				parts = append(parts, rapid.SampledFrom(segs).Draw(rt, "seg"))
			}
			r := strings.Join(parts, "/")
			if rapid.Bool().Draw(rt, "anchor") {
				r = "/" + r
			}
			if rapid.Bool().Draw(rt, "dirOnly") {
				r += "/"
			}
			if rapid.IntRange(0, 3).Draw(rt, "negate") == 0 {
				r = "!" + r
			}
			rules = append(rules, r)
		}
		files := map[string]bool{}
		for range rapid.IntRange(1, 6).Draw(rt, "files") {
			var parts []string
			for range rapid.IntRange(1, 3).Draw(rt, "depth") {
				parts = append(parts, rapid.SampledFrom(names).Draw(rt, "name"))
			}
			files[strings.Join(parts, "/")] = true
		}
		dir := t.TempDir()
		isDir := map[string]bool{}
		var paths []string
		for f := range files {
			// A file may not also be a directory: keep the first shape.
			clash := false
			for i := range f {
				if f[i] == '/' && files[f[:i]] {
					clash = true
				}
			}
			for g := range files {
				if strings.HasPrefix(g, f+"/") {
					clash = true
				}
			}
			if clash {
				continue
			}
			abs := filepath.Join(dir, filepath.FromSlash(f))
			if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
				rt.Fatal(err)
			}
			if err := os.WriteFile(abs, nil, 0o644); err != nil {
				rt.Fatal(err)
			}
			paths = append(paths, f)
			for i := range f {
				if f[i] == '/' && !isDir[f[:i]] {
					isDir[f[:i]] = true
					paths = append(paths, f[:i])
				}
			}
		}
		if len(paths) == 0 {
			return
		}
		slices.Sort(paths)
		if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(strings.Join(rules, "\n")+"\n"), 0o644); err != nil {
			rt.Fatal(err)
		}
		cmd := exec.Command(gitBin, "-c", "core.excludesFile=/dev/null", "check-ignore", "--no-index", "--stdin", "-n", "-v")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_DIR="+filepath.Join(dir, ".nogit"), "GIT_WORK_TREE="+dir)
		if err := exec.Command(gitBin, "init", "-q", "--bare", filepath.Join(dir, ".nogit")).Run(); err != nil {
			rt.Fatal(err)
		}
		cmd.Stdin = strings.NewReader(strings.Join(paths, "\n") + "\n")
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil && cmd.ProcessState.ExitCode() != 1 {
			rt.Fatalf("git check-ignore: %v", err)
		}
		var m ignore.Matcher
		if err := m.Exclude(".gitignore", rules...); err != nil {
			rt.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			src, p, ok := strings.Cut(line, "\t")
			if !ok {
				continue
			}
			fields := strings.SplitN(src, ":", 3)
			gitIgnored := fields[0] != "" && !strings.HasPrefix(fields[2], "!")
			got := m.Path(p, isDir[p]) == ignore.Excluded
			if got != gitIgnored {
				rt.Fatalf("rules %q, path %q (dir %v): excluded %v, git says %v (%s)", rules, p, isDir[p], got, gitIgnored, src)
			}
		}
	})
}
