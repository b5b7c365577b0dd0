package syncer

import (
	"fmt"
	"path"
	"strings"
)

// LazyGlobs returns a Config.Lazy that selects the paths matching any of
// globs: path.Match patterns per segment, where a "**" segment matches any
// number of segments ("data/**/raw", "**/*.bin"). A malformed pattern is
// an error wrapping path.ErrBadPattern.
func LazyGlobs(globs ...string) (func(p string) bool, error) {
	parsed := make([][]string, 0, len(globs))
	for _, g := range globs {
		segs := strings.Split(strings.Trim(g, "/"), "/")
		for _, s := range segs {
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("lazy pattern %q: %w", g, err)
			}
		}
		parsed = append(parsed, segs)
	}
	return func(p string) bool {
		segs := strings.Split(p, "/")
		for _, g := range parsed {
			if globMatch(g, segs) {
				return true
			}
		}
		return false
	}, nil
}

func globMatch(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(segs); i++ {
				if globMatch(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}
