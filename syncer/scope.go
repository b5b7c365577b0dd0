package syncer

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/siltsync/silt/backend"
)

// ErrInvalidPath is returned (wrapped in a *PathError) when a path given to
// the syncer, or found in the remote index, could escape the cache or names
// silt's own files.
var ErrInvalidPath = errors.New("invalid path")

// PathError says which path was refused and why.
type PathError struct {
	Path   string
	Reason string
}

func (e *PathError) Error() string { return fmt.Sprintf("path %q: %s", e.Path, e.Reason) }

// Is makes errors.Is(err, ErrInvalidPath) true.
func (e *PathError) Is(target error) bool { return target == ErrInvalidPath }

// validDataPath checks a cache-relative data path: a valid backend key
// (no "..", no absolute path, no NUL, no backslash) outside silt's own
// directory.
func validDataPath(p string) error {
	if err := backend.ValidateKey(p); err != nil {
		var ke *backend.KeyError
		if errors.As(err, &ke) {
			return &PathError{Path: p, Reason: ke.Reason}
		}
		return &PathError{Path: p, Reason: err.Error()}
	}
	if isInternal(p) {
		return &PathError{Path: p, Reason: "inside silt's internal directory " + InternalDir}
	}
	return nil
}

// isInternal reports whether p names silt's own files, which never sync.
func isInternal(p string) bool {
	first, _, _ := strings.Cut(p, "/")
	return first == InternalDir
}

// normalizePath turns a host-supplied relative path (a file or a directory,
// maybe with a trailing slash or "./") into its canonical form, or refuses
// it. The empty path, "." and "/" all mean the whole cache.
func normalizePath(p string) (string, error) {
	orig := p
	p = strings.ReplaceAll(p, "\\", "\x00") // refused below, never reinterpreted as a separator
	if strings.HasPrefix(p, "/") && strings.Trim(p, "/") != "" {
		return "", &PathError{Path: orig, Reason: "absolute"}
	}
	for strings.HasPrefix(p, "./") {
		p = p[2:]
	}
	p = strings.TrimRight(p, "/")
	if p == "" || p == "." {
		return "", nil
	}
	if err := validDataPath(p); err != nil {
		var pe *PathError
		if errors.As(err, &pe) {
			pe.Path = orig
		}
		return "", err
	}
	if path.Clean(p) != p {
		return "", &PathError{Path: orig, Reason: "not in canonical form"}
	}
	return p, nil
}

// scope is a normalized set of paths; a path is in scope when it equals one
// of them or lies below one. The empty scope is everything.
type scope struct {
	paths []string // canonical, no trailing slash; nil = everything
}

func newScope(paths []string) (scope, error) {
	var s scope
	for _, p := range paths {
		n, err := normalizePath(p)
		if err != nil {
			return scope{}, err
		}
		if n == "" {
			return scope{}, nil // the whole cache swallows every other path
		}
		s.paths = append(s.paths, n)
	}
	return s, nil
}

func (s scope) all() bool { return len(s.paths) == 0 }

func (s scope) contains(p string) bool {
	if s.all() {
		return true
	}
	for _, q := range s.paths {
		if under(p, q) {
			return true
		}
	}
	return false
}

// under reports whether p is q or lies below the directory q.
func under(p, q string) bool {
	return q == "" || p == q || (strings.HasPrefix(p, q) && p[len(q)] == '/')
}

// keyRange is the half-open interval [lo, hi) of keys; hi == "" is unbounded.
type keyRange struct{ lo, hi string }

// ranges returns key intervals that hold every path in scope (and possibly
// a few siblings such as "a-b" next to "a", which callers filter out).
func (s scope) ranges() []keyRange {
	if s.all() {
		return []keyRange{{"", ""}}
	}
	out := make([]keyRange, 0, len(s.paths))
	for _, p := range s.paths {
		out = append(out, keyRange{p, successor(p + "/")})
	}
	return out
}

// successor returns the least string greater than every string that has
// prefix s ("" when there is none).
func successor(s string) string {
	b := []byte(s)
	for len(b) > 0 && b[len(b)-1] == 0xff {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return ""
	}
	b[len(b)-1]++
	return string(b)
}

// overlaps reports whether [lo1, hi1) and [lo2, hi2) meet ("" hi = unbounded).
func overlaps(a, b keyRange) bool {
	return (b.hi == "" || a.lo < b.hi) && (a.hi == "" || b.lo < a.hi)
}

// covers reports whether a contains all of b.
func covers(a, b keyRange) bool {
	return a.lo <= b.lo && (a.hi == "" || (b.hi != "" && b.hi <= a.hi))
}

// cover returns the indexes of the shards of m whose key ranges meet the
// scope: the one function that maps paths (files or directories) to shards.
// Nothing parses a path to guess its shard.
func (m *Manifest) cover(s scope) []int {
	var out []int
	rs := s.ranges()
	for i := range m.Shards {
		r := keyRange{m.Shards[i].Lo, m.hi(i)}
		for _, q := range rs {
			if overlaps(r, q) {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

// within reports whether shard i lies wholly inside the scope, so that
// reconciling the scope reconciles the whole shard. It uses the exact
// directory interval [p/, successor(p/)), not ranges(), whose intervals
// also hold siblings such as "a-b" that the scope does not contain.
func (m *Manifest) within(i int, s scope) bool {
	if s.all() {
		return true
	}
	r := keyRange{m.Shards[i].Lo, m.hi(i)}
	for _, p := range s.paths {
		if covers(keyRange{p + "/", successor(p + "/")}, r) {
			return true
		}
	}
	return false
}
