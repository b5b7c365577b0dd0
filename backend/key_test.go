package backend_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
)

func TestValidateKey(t *testing.T) {
	for _, tc := range []struct {
		key    string
		reason string // substring of the KeyError's reason; "" means valid
	}{
		{"a", ""},
		{"a/b/c.txt", ""},
		{".silt/manifest.json", ""},
		{"..a/b..", ""}, // dots inside a segment are fine
		{"a/.b", ""},
		{"with space/plus+sign", ""},
		{"unicodé/日本語/😀", ""},
		{"\u00a0", ""}, // a non-breaking space is not a control character
		{strings.Repeat("k", backend.MaxKeyLen), ""},

		{"", "empty"},
		{strings.Repeat("k", backend.MaxKeyLen+1), "longer than"},
		{"\xff", "UTF-8"},
		{"a/\xc3", "UTF-8"}, // truncated sequence
		{"a\\b", "backslash"},
		{"/abs", "absolute"},
		{"a\x00b", "control"},
		{"a\nb", "control"},
		{"a\x1fb", "control"},
		{"a\x7fb", "control"},
		{"a//b", "empty path segment"},
		{"a/", "empty path segment"},
		{"a/./b", `"."`},
		{".", `"."`},
		{"./a", `"."`},
		{"a/../b", `".."`},
		{"..", `".."`},
		{"a/..", `".."`},
	} {
		err := backend.ValidateKey(tc.key)
		checkKeyErr(t, "ValidateKey", tc.key, tc.reason, err)
	}
}

func TestValidatePrefix(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		reason string
	}{
		{"", ""},
		{"a", ""},
		{"a/", ""}, // a prefix may end at a slash
		{"a/b", ""},
		{"a/b/", ""},
		{"a/.", ""},  // a partial last segment: ".hidden" starts like this
		{"a/..", ""}, // and "..a" like this
		{".", ""},
		{strings.Repeat("k", backend.MaxKeyLen), ""},

		{"/", "absolute"},
		{"/a", "absolute"},
		{"../x", `".."`},
		{"./x", `"."`},
		{"a/../b", `".."`},
		{"a/./", `"."`},
		{"a//", "empty path segment"},
		{"a//b", "empty path segment"},
		{"a\\", "backslash"},
		{"a\x00", "control"},
		{"\xff", "UTF-8"},
		{strings.Repeat("k", backend.MaxKeyLen+1), "longer than"},
	} {
		err := backend.ValidatePrefix(tc.prefix)
		checkKeyErr(t, "ValidatePrefix", tc.prefix, tc.reason, err)
	}
}

// checkKeyErr checks err against a table row: nil for a valid key, else a
// *KeyError for that key, matching ErrInvalidKey, whose reason says why.
func checkKeyErr(t *testing.T, fn, key, reason string, err error) {
	t.Helper()
	if reason == "" {
		if err != nil {
			t.Errorf("%s(%q) = %v, want nil", fn, key, err)
		}
		return
	}
	if !errors.Is(err, backend.ErrInvalidKey) {
		t.Errorf("%s(%q) = %v, want errors.Is(err, ErrInvalidKey)", fn, key, err)
		return
	}
	var ke *backend.KeyError
	if !errors.As(err, &ke) {
		t.Errorf("%s(%q) = %T, want a *KeyError", fn, key, err)
		return
	}
	if ke.Key != key {
		t.Errorf("%s(%q): KeyError.Key = %q", fn, key, ke.Key)
	}
	if !strings.Contains(ke.Reason, reason) {
		t.Errorf("%s(%q): reason %q, want it to mention %q", fn, key, ke.Reason, reason)
	}
	if errors.Is(err, backend.ErrNotExist) || errors.Is(err, backend.ErrPrecondition) {
		t.Errorf("%s(%q) = %v also matches another sentinel", fn, key, err)
	}
}
