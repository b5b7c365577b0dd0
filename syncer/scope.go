package syncer

import (
	"errors"
	"path"
	"strings"

	"github.com/siltsync/silt/index"
)

// normalizePath turns a host-supplied relative path (a file or a directory,
// maybe with a trailing slash or "./") into its canonical form, or refuses
// it. The empty path, "." and "/" all mean the whole cache.
func normalizePath(p string) (string, error) {
	orig := p
	if strings.HasPrefix(p, "/") && strings.Trim(p, "/") != "" {
		return "", &index.PathError{Path: orig, Reason: "absolute"}
	}
	for strings.HasPrefix(p, "./") {
		p = p[2:]
	}
	p = strings.TrimRight(p, "/")
	if p == "" || p == "." {
		return "", nil
	}
	if err := index.ValidPath(p); err != nil {
		var pe *index.PathError
		if errors.As(err, &pe) {
			pe.Path = orig
		}
		return "", err
	}
	if path.Clean(p) != p {
		return "", &index.PathError{Path: orig, Reason: "not in canonical form"}
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

// lock is the scope lock an operation on s takes.
func (s scope) lock() lockScope {
	if s.all() {
		return scopeAll()
	}
	return scopePaths(s.paths...)
}

func (s scope) contains(p string) bool {
	if s.all() {
		return true
	}
	for _, q := range s.paths {
		if index.Under(p, q) {
			return true
		}
	}
	return false
}

// cover returns the shards of m that meet the scope (index.Manifest.Cover).
func (s scope) cover(m *index.Manifest) []int { return m.Cover(s.paths...) }

// within reports whether shard i of m lies wholly inside the scope.
func (s scope) within(m *index.Manifest, i int) bool { return m.Within(i, s.paths...) }

func under(p, q string) bool { return index.Under(p, q) }
