package index

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// genShardEntries draws a shard's entries: paths from an alphabet with
// the characters json.Marshal escapes or rewrites (quotes, backslashes,
// <>&, control characters, U+2028, invalid UTF-8), and fields at their
// corners, valid or not (DecodeShard's checks come after decoding).
func genShardEntries(t *rapid.T) map[string]Entry {
	alphabet := []string{"a", "b", "/", "-", ".", "é", "日", "\"", "\\", "<", ">", "&", "\x01", "\u2028", "\xff", " ", "\x7f"}
	entries := map[string]Entry{}
	for range rapid.IntRange(0, 12).Draw(t, "n") {
		var b strings.Builder
		for range rapid.IntRange(1, 6).Draw(t, "len") {
			b.WriteString(rapid.SampledFrom(alphabet).Draw(t, "c"))
		}
		e := Entry{
			Size:   rapid.Int64().Draw(t, "size"),
			SHA256: rapid.SampledFrom([]string{"", strings.Repeat("ab", 32), "ABC", "0"}).Draw(t, "sha"),
			Seq:    rapid.Uint64().Draw(t, "seq"),
			Off:    rapid.Int64().Draw(t, "off"),
			Exec:   rapid.Bool().Draw(t, "x"),
		}
		if rapid.Bool().Draw(t, "packed") {
			e.Pack = rapid.SampledFrom([]string{strings.Repeat("cd", 32), "Z9", ""}).Draw(t, "pack")
		}
		entries[b.String()] = e
	}
	return entries
}

// sameShard compares two decodings, a nil map being an empty one.
func sameShard(a, b shardFile) bool {
	return a.Format == b.Format && a.Salt == b.Salt && len(a.Entries) == len(b.Entries) && maps.Equal(a.Entries, b.Entries)
}

// What decodeShardFast accepts, encoding/json decodes to the same
// shardFile: for shards as encodeShard writes them, which it must accept
// whenever no path needed an escape, and for every one-byte edit of them
// (most of which it leaves to encoding/json).
func TestDecodeShardFast_AgreesWithEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		entries := genShardEntries(t)
		salt := rapid.SampledFrom([]string{"", "0123456789abcdef"}).Draw(t, "salt")
		data, _ := encodeShard(entries, salt)
		check := func(what string, data []byte) bool {
			fast, ok := decodeShardFast(data)
			if !ok {
				return false
			}
			var slow shardFile
			if err := json.Unmarshal(data, &slow); err != nil {
				t.Fatalf("%s: the fast path accepted %q, encoding/json refuses it: %v", what, data, err)
			}
			if !sameShard(fast, slow) {
				t.Fatalf("%s: %q decoded as %+v, encoding/json: %+v", what, data, fast, slow)
			}
			return true
		}
		// The fast path's form: paths without escapes, lower-case hex
		// strings, integers of at most 18 digits.
		plain := true
		isHex := func(s string) bool { return strings.Trim(s, "0123456789abcdef") == "" }
		short := func(n int64) bool { return n > -1e18 && n < 1e18 }
		for p, e := range entries {
			if q, _ := json.Marshal(p); string(q) != `"`+p+`"` || !isHex(e.SHA256) || !isHex(e.Pack) || !short(e.Size) || !short(e.Off) || e.Seq >= 1e18 {
				plain = false
			}
		}
		if ok := check("as written", data); !ok && plain {
			t.Fatalf("the fast path refused a shard as encodeShard writes it: %q", data)
		}
		if len(data) == 0 {
			return
		}
		i := rapid.IntRange(0, len(data)-1).Draw(t, "at")
		edited := append([]byte(nil), data...)
		switch rapid.IntRange(0, 2).Draw(t, "edit") {
		case 0:
			edited[i] = rapid.SampledFrom([]byte(`{}[]":,-0123456789.eE tfnrux\a`)).Draw(t, "byte")
		case 1:
			edited = append(edited[:i], edited[i+1:]...)
		default:
			edited = append(edited[:i], append([]byte{rapid.Byte().Draw(t, "ins")}, edited[i:]...)...)
		}
		check("edited", edited)
	})
}

// Duplicate paths, which encoding/json resolves as the last one, are left
// to it, as are numbers it refuses for these fields.
func TestDecodeShardFast_LeavesTheIrregularToEncodingJSON(t *testing.T) {
	sha := strings.Repeat("ab", 32)
	for _, data := range []string{
		`{"format":3,"entries":{"a":{"size":1,"sha256":"` + sha + `","seq":1},"a":{"size":2,"sha256":"` + sha + `","seq":1}}}`,
		`{"format":3,"entries":{"b":{"size":1,"sha256":"` + sha + `","seq":1},"a":{"size":2,"sha256":"` + sha + `","seq":1}}}`,
		`{"format":3,"entries":{"a":{"size":01,"sha256":"` + sha + `","seq":1}}}`,
		`{"format":3,"entries":{"a":{"size":1.5,"sha256":"` + sha + `","seq":1}}}`,
		`{"format":3,"entries":{"a":{"size":1,"sha256":"` + sha + `","seq":-1}}}`,
		`{"format":3,"entries":{"a":{"size":1,"sha256":"` + sha + `","seq":1}}} `,
		`{"format":3,"entries":null}`,
	} {
		if f, ok := decodeShardFast([]byte(data)); ok {
			t.Errorf("fast path took %s as %+v", data, f)
		}
	}
}

// BenchmarkDecodeShard decodes a full shard of 1,000 entries in the
// host layout, as a pull that reconciles it does.
func BenchmarkDecodeShard(b *testing.B) {
	entries := map[string]Entry{}
	for i := range DefaultShardMaxEntries {
		entries[fmt.Sprintf("data/acme/nlp/en/m%04d/state/%d/raw", i/11, i%11)] = Entry{Size: 5120, SHA256: strings.Repeat("ab", 32), Seq: uint64(i), Pack: strings.Repeat("cd", 32), Off: int64(i) * 5120}
	}
	data, id := encodeShard(entries, "0123456789abcdef")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := DecodeShard(id, Range{}, data); err != nil {
			b.Fatal(err)
		}
	}
}
