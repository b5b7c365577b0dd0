// Package ignore decides which paths of a cache never sync: gitignore
// syntax (git's gitignore(5)), read from a cache's .siltignore and from
// the rules a host or the command line passes.
//
// Two lists make a Matcher. Exclude rules behave as one .gitignore at the
// top of the data paths: the last rule that matches a path decides, a rule
// starting with "!" re-includes what an earlier one excluded, and (as in
// git) nothing below an excluded directory can be re-included by an
// exclude list's "!" rule. Include rules take precedence over every
// exclude rule, the way rclone's and restic's --include keep what they
// name: a path an include rule matches (or that lies below a directory
// one matches) is never excluded, even below an excluded directory. So
// --exclude 'cache/' --include 'cache/keep.bin' syncs cache/keep.bin and
// nothing else under cache/.
//
// The walk asks Descend before reading a directory: an excluded directory
// is not read unless an include rule could match something below it, so a
// walk's cost grows with what it includes.
package ignore

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBadPattern is matched (errors.Is) by every *PatternError.
var ErrBadPattern = errors.New("bad exclude or include pattern")

// PatternError names a rule that does not parse: where it came from (a
// file name or a flag), its line (1-based; 0 for a flag) and why.
type PatternError struct {
	Source  string
	Line    int
	Pattern string
	Reason  string
}

func (e *PatternError) Error() string {
	at := e.Source
	if e.Line > 0 {
		at = fmt.Sprintf("%s:%d", e.Source, e.Line)
	}
	return fmt.Sprintf("%s: pattern %q: %s", at, e.Pattern, e.Reason)
}

func (e *PatternError) Unwrap() error { return ErrBadPattern }

// Verdict is what a Matcher decided for one path.
type Verdict uint8

const (
	// Keep: no rule excludes the path.
	Keep Verdict = iota
	// Excluded: the path never syncs, nor does anything below it that
	// no include rule names.
	Excluded
	// Included: an include rule matched the path or a directory above
	// it; nothing excludes it or anything below it.
	Included
)

// rule is one compiled pattern line.
type rule struct {
	negate  bool
	dirOnly bool
	segs    []string // "/"-separated parts; "**" is a segment of its own
	base    bool     // one segment, unanchored: matched against the last path segment only
}

// Matcher holds exclude and include rules. The zero Matcher, and a nil
// *Matcher, exclude nothing.
type Matcher struct {
	exclude, include []rule
}

// Exclude adds gitignore lines (one rule per element; blank lines and
// comments are allowed) to the exclude list. source names them in errors.
// On error nothing is added.
func (m *Matcher) Exclude(source string, lines ...string) error {
	rs, err := compileAll(source, lines)
	if err == nil {
		m.exclude = append(m.exclude, rs...)
	}
	return err
}

// Include adds gitignore lines to the include list (see the package doc).
func (m *Matcher) Include(source string, lines ...string) error {
	rs, err := compileAll(source, lines)
	if err == nil {
		m.include = append(m.include, rs...)
	}
	return err
}

// ExcludeFile adds the lines of a .gitignore-syntax file's bytes.
func (m *Matcher) ExcludeFile(source string, data []byte) error {
	s := strings.TrimPrefix(string(data), "\ufeff") // git skips a BOM too
	return m.Exclude(source, strings.Split(s, "\n")...)
}

// Empty reports whether m has no rule at all (so nothing is excluded).
func (m *Matcher) Empty() bool { return m == nil || len(m.exclude) == 0 }

func compileAll(source string, lines []string) ([]rule, error) {
	var out []rule
	for i, l := range lines {
		r, ok, reason := compile(l)
		if reason != "" {
			line := i + 1
			if len(lines) == 1 {
				line = 0
			}
			return nil, &PatternError{Source: source, Line: line, Pattern: l, Reason: reason}
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// compile parses one line: ok is false for a blank line or a comment;
// a non-empty reason says why the line is refused.
func compile(line string) (r rule, ok bool, reason string) {
	line = strings.TrimSuffix(line, "\r")
	line = trimTrailingSpaces(line)
	if line == "" || line[0] == '#' {
		return rule{}, false, ""
	}
	if line[0] == '!' {
		r.negate = true
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") && !escapedAt(line, len(line)-1) {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return rule{}, false, "" // "!" or "/" alone: matches nothing, as in git
	}
	anchored := strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	r.segs = strings.Split(line, "/")
	for _, s := range r.segs {
		if s == "" {
			return rule{}, false, "empty path segment (\"//\")"
		}
		if why := checkSegment(s); why != "" {
			return rule{}, false, why
		}
	}
	if !anchored {
		r.base = true
	}
	return r, true, ""
}

// escapedAt reports whether the byte at i is escaped by a backslash.
func escapedAt(s string, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && s[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// trimTrailingSpaces drops trailing spaces that no backslash escapes, as
// git does.
func trimTrailingSpaces(s string) string {
	end := -1 // start of the current run of unescaped spaces
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			if end < 0 {
				end = i
			}
		case '\\':
			i++
			end = -1
		default:
			end = -1
		}
	}
	if end >= 0 {
		return s[:end]
	}
	return s
}

// Judge decides path (a data path; isDir when it is a directory), given
// the verdict of its parent directory (Keep for a top-level entry). A nil
// m keeps everything.
func (m *Matcher) Judge(parent Verdict, path string, isDir bool) Verdict {
	if m == nil {
		return Keep
	}
	if parent == Included {
		return Included
	}
	if matches(m.include, path, isDir) {
		return Included
	}
	if parent == Excluded {
		return Excluded
	}
	if matches(m.exclude, path, isDir) {
		return Excluded
	}
	return Keep
}

// Path judges a whole data path, each parent directory first: the verdict
// Judge gives it in a walk from the top.
func (m *Matcher) Path(path string, isDir bool) Verdict {
	if m.Empty() && (m == nil || len(m.include) == 0) {
		return Keep
	}
	v := Keep
	for i := 0; i < len(path); i++ {
		if path[i] == '/' {
			v = m.Judge(v, path[:i], true)
		}
	}
	return m.Judge(v, path, isDir)
}

// Excluded reports whether the file at path is excluded.
func (m *Matcher) Excluded(path string) bool { return m.Path(path, false) == Excluded }

// Descend reports whether a walk must read the directory dir whose
// verdict is v: it is not excluded, or an include rule could match a
// path below it.
func (m *Matcher) Descend(dir string, v Verdict) bool {
	if m == nil || v != Excluded {
		return true
	}
	for i := range m.include {
		if r := &m.include[i]; !r.negate && r.mayMatchBelow(dir) {
			return true
		}
	}
	return false
}

// matches reports whether the last rule of rs matching path excludes it
// (is not a "!" rule).
func matches(rs []rule, path string, isDir bool) bool {
	for i := len(rs) - 1; i >= 0; i-- {
		r := &rs[i]
		if r.dirOnly && !isDir {
			continue
		}
		if r.match(path) {
			return !r.negate
		}
	}
	return false
}

func (r *rule) match(path string) bool {
	if r.base {
		return matchSegment(r.segs[0], path[strings.LastIndexByte(path, '/')+1:])
	}
	return matchSegs(r.segs, path)
}

// matchSegs matches pattern segments against the "/"-separated path p.
func matchSegs(pat []string, p string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			if len(rest) == 0 {
				return p != "" // "a/**" matches what is inside a, not a
			}
			for {
				if matchSegs(rest, p) {
					return true
				}
				i := strings.IndexByte(p, '/')
				if i < 0 {
					return false
				}
				p = p[i+1:]
			}
		}
		if p == "" {
			return false
		}
		seg, rest, _ := strings.Cut(p, "/")
		if !matchSegment(pat[0], seg) {
			return false
		}
		pat, p = pat[1:], rest
	}
	return p == ""
}

// mayMatchBelow reports whether the rule could match a path below dir.
func (r *rule) mayMatchBelow(dir string) bool {
	if r.base {
		return true // matches at any depth
	}
	pat, p := r.segs, dir
	for p != "" {
		if len(pat) == 0 {
			return false
		}
		if pat[0] == "**" {
			return true
		}
		seg, rest, _ := strings.Cut(p, "/")
		if !matchSegment(pat[0], seg) {
			return false
		}
		pat, p = pat[1:], rest
	}
	return len(pat) > 0
}
