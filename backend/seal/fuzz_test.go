package seal_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
)

// FuzzSeal_StoredBytes feeds arbitrary bytes as a stored sealed object:
// the read fails with a typed error or (only for bytes this ring sealed)
// returns them, and never panics.
func FuzzSeal_StoredBytes(f *testing.F) {
	f.Add([]byte("\x89SLE\x01\x00\x00\x01"))
	f.Add([]byte("{}"))
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0x89}, 100))
	f.Fuzz(func(t *testing.T, stored []byte) {
		s, raw := newSealed(t)
		k := ".silt/log/00000000000000000001.json"
		if _, err := backend.PutBytes(t.Context(), raw, k, stored, backend.Cond{}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := backend.ReadAll(t.Context(), s, k, backend.GetOptions{}, 0); err == nil {
			t.Fatalf("%d arbitrary bytes opened as a sealed object", len(stored))
		}
	})
}

// FuzzSeal_Names maps arbitrary keys to stored ones and back: every valid
// key round-trips through a listing, and no stored key shows a segment
// of the plain key outside the layout's names and sequence numbers.
func FuzzSeal_Names(f *testing.F) {
	for _, k := range []string{".silt/log/00000000000000000001.json", "ns/.silt/control/a/b", ".silt/objects/ab/" + strings.Repeat("ab", 32), "x", ".silt/shards/" + strings.Repeat("0", 32) + ".json", "~junk/.silt/log/1"} {
		f.Add(k)
	}
	layoutName := func(seg string) bool {
		switch seg {
		case ".silt", "objects", "packs", "shards", "pages", "log", "checkpoints", "manifests", "manifest.json", "namespaces", "control", "locks", "tmp":
			return true
		}
		return strings.Trim(strings.TrimSuffix(seg, ".json"), "0123456789") == ""
	}
	f.Fuzz(func(t *testing.T, key string) {
		s, raw := newSealed(t)
		ctx := t.Context()
		if backend.ValidateKey(key) != nil || strings.HasPrefix(key, ".silt/keys/") {
			return
		}
		if _, err := backend.PutBytes(ctx, s, key, []byte("v"), backend.Cond{}); err != nil {
			return // too long once sealed
		}
		var got []string
		err := s.List(ctx, "", backend.ListOptions{}, func(page []backend.ObjectInfo) error {
			for _, o := range page {
				got = append(got, o.Key)
			}
			return nil
		})
		if err != nil || len(got) != 1 || got[0] != key {
			t.Fatalf("List after Put(%q) = %q, %v", key, got, err)
		}
		var stored []string
		if err := raw.List(ctx, "", backend.ListOptions{}, func(page []backend.ObjectInfo) error {
			for _, o := range page {
				if !strings.HasPrefix(o.Key, ".silt/keys/") {
					stored = append(stored, o.Key)
				}
			}
			return nil
		}); err != nil || len(stored) != 1 {
			t.Fatalf("stored keys %q, %v", stored, err)
		}
		shown := map[string]bool{}
		for _, seg := range strings.Split(stored[0], "/") {
			shown[seg] = true
		}
		for _, seg := range strings.Split(key, "/") {
			if len(seg) >= 3 && !layoutName(seg) && shown[seg] {
				t.Fatalf("stored key %q shows the segment %q of %q", stored[0], seg, key)
			}
		}
	})
}
