package index

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// InternalDir is silt's own directory, in a cache and in a bucket. No data
// path has a segment of this name anywhere, so a cache inside a cache never
// syncs the inner one's state.
const InternalDir = ".silt"

// Bounds on data paths: what common local filesystems can hold.
const (
	MaxPathLen    = 4096
	MaxSegmentLen = 255
)

// ValidPath checks a data path: relative, '/'-separated, valid UTF-8 (the
// index is JSON), no NUL, no empty, "." or ".." segment, no segment named
// InternalDir, at most MaxPathLen bytes with segments of at most
// MaxSegmentLen. Store key rules do not apply: data paths live only in the
// index, so a backslash, a newline or a space is an ordinary character.
func ValidPath(p string) error {
	switch {
	case p == "":
		return &PathError{Path: p, Reason: "empty"}
	case len(p) > MaxPathLen:
		return &PathError{Path: p, Reason: fmt.Sprintf("longer than %d bytes", MaxPathLen)}
	case !utf8.ValidString(p):
		return &PathError{Path: p, Reason: "not valid UTF-8"}
	case strings.IndexByte(p, 0) >= 0:
		return &PathError{Path: p, Reason: "contains NUL"}
	case p[0] == '/':
		return &PathError{Path: p, Reason: "absolute"}
	}
	for seg := range strings.SplitSeq(p, "/") {
		switch {
		case seg == "":
			return &PathError{Path: p, Reason: "empty path segment"}
		case seg == "." || seg == "..":
			return &PathError{Path: p, Reason: fmt.Sprintf("%q path segment", seg)}
		case seg == InternalDir:
			return &PathError{Path: p, Reason: "has a " + InternalDir + " segment (silt's own files never sync)"}
		case len(seg) > MaxSegmentLen:
			return &PathError{Path: p, Reason: fmt.Sprintf("a segment is longer than %d bytes", MaxSegmentLen)}
		}
	}
	return nil
}

// IsInternal reports whether p has an InternalDir segment anywhere.
func IsInternal(p string) bool {
	for seg := range strings.SplitSeq(p, "/") {
		if seg == InternalDir {
			return true
		}
	}
	return false
}

// Under reports whether p is q or lies below the directory q ("" holds
// everything).
func Under(p, q string) bool {
	return q == "" || p == q || (strings.HasPrefix(p, q) && p[len(q)] == '/')
}
