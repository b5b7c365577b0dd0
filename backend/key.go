package backend

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxKeyLen is the longest key in bytes any backend accepts (S3's limit).
const MaxKeyLen = 1024

// KeyError is returned when a key or prefix is rejected before any I/O.
// It matches ErrInvalidKey with errors.Is.
type KeyError struct {
	Key    string
	Reason string
}

func (e *KeyError) Error() string { return fmt.Sprintf("invalid key %q: %s", e.Key, e.Reason) }

// Is makes errors.Is(err, ErrInvalidKey) true.
func (e *KeyError) Is(target error) bool { return target == ErrInvalidKey }

// ValidateKey checks that key is a relative, slash-separated path that every
// backend can store and that cannot escape a directory: non-empty, valid
// UTF-8, at most MaxKeyLen bytes, no control characters (NUL included), no
// backslash, no leading slash, and no empty, "." or ".." segment.
func ValidateKey(key string) error {
	if key == "" {
		return &KeyError{key, "empty"}
	}
	if err := validateChars(key); err != nil {
		return err
	}
	for seg := range strings.SplitSeq(key, "/") {
		if err := validateSegment(key, seg); err != nil {
			return err
		}
	}
	return nil
}

// ValidatePrefix checks a List prefix. It follows ValidateKey, except that
// it may be empty and its last segment may be empty or partial.
func ValidatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if err := validateChars(prefix); err != nil {
		return err
	}
	segs := strings.Split(prefix, "/")
	for _, seg := range segs[:len(segs)-1] {
		if err := validateSegment(prefix, seg); err != nil {
			return err
		}
	}
	return nil
}

func validateChars(s string) error {
	switch {
	case len(s) > MaxKeyLen:
		return &KeyError{s, fmt.Sprintf("longer than %d bytes", MaxKeyLen)}
	case !utf8.ValidString(s):
		return &KeyError{s, "not valid UTF-8"}
	case strings.ContainsRune(s, '\\'):
		return &KeyError{s, "contains a backslash"}
	case strings.HasPrefix(s, "/"):
		return &KeyError{s, "absolute (leading slash)"}
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return &KeyError{s, fmt.Sprintf("contains control character %U", r)}
		}
	}
	return nil
}

func validateSegment(key, seg string) error {
	switch seg {
	case "":
		return &KeyError{key, "empty path segment"}
	case ".", "..":
		return &KeyError{key, fmt.Sprintf("%q path segment", seg)}
	}
	return nil
}
