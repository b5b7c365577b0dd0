package ignore_test

import (
	"errors"
	"testing"

	"github.com/siltsync/silt/internal/ignore"
)

// The examples of git's gitignore(5) (PATTERN FORMAT and EXAMPLES), and
// the corner cases of its syntax, each as rules, a path, whether the path
// is a directory, and whether it is excluded once every parent directory
// is judged first (as git does: nothing below an excluded directory is
// re-included by "!").
func TestMatcher_Path_GitignoreExamples(t *testing.T) {
	cases := []struct {
		rules []string
		path  string
		dir   bool
		want  bool
	}{
		// "hello.*" matches any file or directory whose name begins with "hello.".
		{[]string{"hello.*"}, "hello.c", false, true},
		{[]string{"hello.*"}, "a/b/hello.txt", false, true},
		{[]string{"hello.*"}, "hello", false, false},
		// "doc/frotz/" matches the directory doc/frotz, not a/doc/frotz.
		{[]string{"doc/frotz/"}, "doc/frotz", true, true},
		{[]string{"doc/frotz/"}, "doc/frotz/x.txt", false, true},
		{[]string{"doc/frotz/"}, "a/doc/frotz", true, false},
		{[]string{"doc/frotz/"}, "doc/frotz", false, false}, // a file of that name
		// "frotz/" matches frotz and a/frotz that are directories.
		{[]string{"frotz/"}, "frotz", true, true},
		{[]string{"frotz/"}, "a/frotz", true, true},
		{[]string{"frotz/"}, "a/frotz", false, false},
		// "doc/frotz" and "/doc/frotz" have the same effect.
		{[]string{"doc/frotz"}, "doc/frotz", false, true},
		{[]string{"/doc/frotz"}, "doc/frotz", false, true},
		{[]string{"doc/frotz"}, "a/doc/frotz", false, false},
		// "/*.c" matches cat-file.c but not mozilla-sha1/sha1.c.
		{[]string{"/*.c"}, "cat-file.c", false, true},
		{[]string{"/*.c"}, "mozilla-sha1/sha1.c", false, false},
		{[]string{"*.c"}, "mozilla-sha1/sha1.c", false, true},
		// "foo/*" matches foo/test.json and foo/bar, and (through its
		// directory) foo/bar/hello.c.
		{[]string{"foo/*"}, "foo/test.json", false, true},
		{[]string{"foo/*"}, "foo/bar", true, true},
		{[]string{"foo/*"}, "foo/bar/hello.c", false, true},
		{[]string{"foo/*"}, "foo", true, false},
		// "**/foo" matches foo anywhere; "**/foo/bar" bar directly under foo.
		{[]string{"**/foo"}, "foo", false, true},
		{[]string{"**/foo"}, "x/y/foo", true, true},
		{[]string{"**/foo/bar"}, "x/foo/bar", false, true},
		{[]string{"**/foo/bar"}, "foo/bar", false, true},
		{[]string{"**/foo/bar"}, "foo/x/bar", false, false},
		// "abc/**" matches everything inside abc, not abc itself.
		{[]string{"abc/**"}, "abc/x", false, true},
		{[]string{"abc/**"}, "abc/x/y/z", false, true},
		{[]string{"abc/**"}, "abc", true, false},
		// "a/**/b" matches a/b, a/x/b, a/x/y/b.
		{[]string{"a/**/b"}, "a/b", false, true},
		{[]string{"a/**/b"}, "a/x/b", false, true},
		{[]string{"a/**/b"}, "a/x/y/b", false, true},
		{[]string{"a/**/b"}, "a/x/y/c", false, false},
		{[]string{"a/**/b"}, "x/a/b", false, false},
		// Other consecutive asterisks are ordinary stars.
		{[]string{"a**b"}, "axxb", false, true},
		{[]string{"a**b"}, "a/b", false, false},
		{[]string{"**"}, "any/thing", false, true},
		// "*" and "?" never match "/".
		{[]string{"a*z"}, "a/z", false, false},
		{[]string{"a?z"}, "a/z", false, false},
		{[]string{"a?z"}, "abz", false, true},
		{[]string{"a?z"}, "aéz", false, true},
		{[]string{"a?z"}, "az", false, false},
		// Character classes: ranges, negation, "]" first, escapes, POSIX.
		{[]string{"file[0-9].txt"}, "file7.txt", false, true},
		{[]string{"file[0-9].txt"}, "filex.txt", false, false},
		{[]string{"file[!0-9].txt"}, "filex.txt", false, true},
		{[]string{"file[^0-9].txt"}, "file7.txt", false, false},
		{[]string{"[]x]"}, "]", false, true},
		{[]string{"[]x]"}, "x", false, true},
		{[]string{"[a\\]]"}, "]", false, true},
		{[]string{"[[:digit:]]*"}, "9lives", false, true},
		{[]string{"[[:upper:]]*"}, "lower", false, false},
		{[]string{"[a-c-]"}, "-", false, true},
		// Comments, blank lines, escapes, trailing spaces.
		{[]string{"# not a rule"}, "# not a rule", false, false},
		{[]string{"\\#hash"}, "#hash", false, true},
		{[]string{"", "   "}, "x", false, false},
		{[]string{"\\!important!.txt"}, "!important!.txt", false, true},
		{[]string{"trail   "}, "trail", false, true},
		{[]string{"trail\\ "}, "trail ", false, true},
		{[]string{"trail\\ "}, "trail", false, false},
		{[]string{"sp\\*ce"}, "sp*ce", false, true},
		{[]string{"sp\\*ce"}, "spxce", false, false},
		{[]string{"crlf\r"}, "crlf", false, true},
		// Negation: the last matching rule decides.
		{[]string{"*.log", "!keep.log"}, "keep.log", false, false},
		{[]string{"*.log", "!keep.log"}, "drop.log", false, true},
		{[]string{"!keep.log", "*.log"}, "keep.log", false, true},
		// ... but nothing below an excluded directory comes back.
		{[]string{"build/", "!build/keep.txt"}, "build/keep.txt", false, true},
		// gitignore(5): exclude everything except the directory foo/bar.
		{[]string{"/*", "!/foo", "/foo/*", "!/foo/bar"}, "foo/bar/x", false, false},
		{[]string{"/*", "!/foo", "/foo/*", "!/foo/bar"}, "foo/baz", false, true},
		{[]string{"/*", "!/foo", "/foo/*", "!/foo/bar"}, "top.txt", false, true},
		// A directory-only rule excludes a directory's contents.
		{[]string{"node_modules/"}, "a/node_modules/x/y.js", false, true},
		// "!" and "/" alone match nothing.
		{[]string{"!"}, "x", false, false},
		{[]string{"/"}, "x", false, false},
	}
	for _, c := range cases {
		var m ignore.Matcher
		if err := m.Exclude("test", c.rules...); err != nil {
			t.Fatalf("%q: %v", c.rules, err)
		}
		got := m.Path(c.path, c.dir) == ignore.Excluded
		if got != c.want {
			t.Errorf("rules %q, path %q (dir %v): excluded %v, want %v", c.rules, c.path, c.dir, got, c.want)
		}
	}
}

// An include rule wins over every exclude rule, below an excluded
// directory too; what it does not name stays excluded.
func TestMatcher_Path_IncludeTakesPrecedence(t *testing.T) {
	var m ignore.Matcher
	if err := m.Exclude(".siltignore", "cache/", "*.tmp"); err != nil {
		t.Fatal(err)
	}
	if err := m.Include("--include", "cache/keep.bin", "important.tmp"); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]ignore.Verdict{
		"cache/keep.bin":   ignore.Included,
		"cache/drop.bin":   ignore.Excluded,
		"important.tmp":    ignore.Included,
		"x/important.tmp":  ignore.Included,
		"other.tmp":        ignore.Excluded,
		"data/raw":         ignore.Keep,
		"cache/sub/keep.x": ignore.Excluded,
	} {
		if got := m.Path(p, false); got != want {
			t.Errorf("%s: verdict %d, want %d", p, got, want)
		}
	}
}

// The walk reads an excluded directory only when an include rule could
// match below it.
func TestMatcher_Descend_OnlyWhereIncludesReach(t *testing.T) {
	var m ignore.Matcher
	if err := m.Exclude("x", "cache/", "logs/"); err != nil {
		t.Fatal(err)
	}
	if err := m.Include("x", "cache/models/**/*.bin"); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]bool{
		"cache":             true,
		"cache/models":      true,
		"cache/models/a/b":  true,
		"cache/other":       false,
		"logs":              false,
		"data":              true, // not excluded at all
		"cache/modelsx/bin": false,
	} {
		v := m.Path(dir, true)
		if got := m.Descend(dir, v); got != want {
			t.Errorf("%s (verdict %d): descend %v, want %v", dir, v, got, want)
		}
	}
	var none *ignore.Matcher
	if !none.Descend("x", ignore.Excluded) || none.Excluded("x") {
		t.Error("a nil Matcher excludes something")
	}
}

// A rule that does not parse is a *PatternError naming its source and
// line, and adds nothing.
func TestMatcher_Exclude_BadPattern(t *testing.T) {
	for _, bad := range []string{"file[0-9", "trailing\\", "[[:nope:]]", "a//b", "[\\"} {
		var m ignore.Matcher
		err := m.ExcludeFile(".siltignore", []byte("ok\n"+bad+"\n"))
		var pe *ignore.PatternError
		if !errors.As(err, &pe) || !errors.Is(err, ignore.ErrBadPattern) || pe.Line != 2 || pe.Source != ".siltignore" {
			t.Errorf("%q: %v", bad, err)
			continue
		}
		if !m.Empty() {
			t.Errorf("%q: rules were added", bad)
		}
	}
	var m ignore.Matcher
	if err := m.Exclude("--exclude", "x["); err == nil || err.(*ignore.PatternError).Line != 0 {
		t.Errorf("a flag's bad pattern: %v", err)
	}
}
