package backend_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/siltsync/silt/backend"
)

// FuzzValidateKey checks that every key ValidateKey accepts is safe to use
// as a path (no "..", ".", empty or absolute segment, no NUL or control
// character, valid UTF-8, bounded length) and that every refusal is a typed
// *KeyError matching ErrInvalidKey. Seeds: testdata/fuzz/FuzzValidateKey.
func FuzzValidateKey(f *testing.F) {
	for _, s := range []string{"a/b/c", "../x", "/abs", "a\x00b", "a//b", "a/./b", "é/ü", strings.Repeat("k", backend.MaxKeyLen+1), "a\\..\\b", "-dash/x y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := backend.ValidateKey(key)
		if err != nil {
			var ke *backend.KeyError
			if !errors.Is(err, backend.ErrInvalidKey) || !errors.As(err, &ke) {
				t.Fatalf("ValidateKey(%q) = %v: not a typed *KeyError", key, err)
			}
			return
		}
		switch {
		case key == "" || len(key) > backend.MaxKeyLen:
			t.Fatalf("accepted key of length %d", len(key))
		case !utf8.ValidString(key):
			t.Fatalf("accepted invalid UTF-8 %q", key)
		case strings.HasPrefix(key, "/"):
			t.Fatalf("accepted absolute key %q", key)
		case strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			t.Fatalf("accepted a control character in %q", key)
		}
		segs := strings.Split(key, "/")
		if slices.Contains(segs, "..") || slices.Contains(segs, ".") {
			t.Fatalf("accepted a dot segment in %q", key)
		}
		if slices.Contains(segs[:len(segs)-1], "") {
			t.Fatalf("accepted an empty segment in %q", key)
		}
	})
}
