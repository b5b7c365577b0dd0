package index_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/index"
)

func FuzzDecodeManifest(f *testing.F) {
	f.Add([]byte(`{"format":2,"seq":1,"shards":[{"lo":"","id":"00000000000000000000000000000000","count":1,"bytes":2}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := index.DecodeManifest(index.ManifestKey, data)
		if err != nil {
			var fe *index.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// Accepted manifests tile the key space and round-trip.
		for i := range m.Shards {
			if i == 0 && m.Shards[0].Lo != "" || i > 0 && m.Shards[i].Lo <= m.Shards[i-1].Lo {
				t.Fatalf("bad tiling %+v", m.Shards)
			}
		}
		if _, err := index.DecodeManifest(index.ManifestKey, index.EncodeManifest(m)); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
	})
}

func FuzzDecodeShard(f *testing.F) {
	f.Add([]byte(`{"format":2,"entries":{"a":{"size":1,"sha256":"0000000000000000000000000000000000000000000000000000000000000000","seq":1}}}`), "", "")
	f.Fuzz(func(t *testing.T, data []byte, lo, hi string) {
		r := index.Range{Lo: lo, Hi: hi}
		entries, err := index.DecodeShard(index.ShardID(data), r, data)
		if err != nil {
			var fe *index.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for p, e := range entries {
			if !r.Contains(p) || index.ValidPath(p) != nil || !index.ValidSHA256(e.SHA256) || e.Size < 0 {
				t.Fatalf("accepted bad entry %q %+v", p, e)
			}
		}
	})
}

func FuzzCover(f *testing.F) {
	f.Add("a/b", "a\x00b/c\x00d", "a/b/x\x00a/bc\x00a\x00z")
	f.Fuzz(func(t *testing.T, prefix, los, keys string) {
		if prefix != "" && index.ValidPath(prefix) != nil {
			return
		}
		bounds := strings.Split(los, "\x00")
		bounds[0] = ""
		slices.Sort(bounds)
		bounds = slices.Compact(bounds)
		m := &index.Manifest{Format: index.FormatVersion}
		for _, lo := range bounds {
			m.Shards = append(m.Shards, index.ShardRef{Lo: lo, ID: strings.Repeat("0", 32)})
		}
		cover := m.Cover(prefix)
		// Brute force: every key in scope lies in a covered shard, and
		// every covered shard meets the scope's range.
		for _, k := range strings.Split(keys, "\x00") {
			if index.Under(k, prefix) && !slices.Contains(cover, m.ShardFor(k)) {
				t.Fatalf("key %q under %q in shard %d, cover %v", k, prefix, m.ShardFor(k), cover)
			}
		}
		for _, i := range cover {
			if !m.Range(i).Overlaps(index.PrefixRange(prefix)) {
				t.Fatalf("shard %d does not meet %q", i, prefix)
			}
		}
		for i := range m.Shards {
			if !slices.Contains(cover, i) && m.Range(i).Overlaps(index.PrefixRange(prefix)) {
				t.Fatalf("shard %d meets %q but is not covered", i, prefix)
			}
		}
	})
}

func FuzzValidPath(f *testing.F) {
	for _, s := range []string{"a/b", "../x", "a/.silt/b", "a\\b", "", "/", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := index.ValidPath(p)
		if err == nil {
			for seg := range strings.SplitSeq(p, "/") {
				if seg == "" || seg == "." || seg == ".." || seg == index.InternalDir {
					t.Fatalf("accepted %q", p)
				}
			}
			if strings.ContainsRune(p, 0) || strings.HasPrefix(p, "/") {
				t.Fatalf("accepted %q", p)
			}
			return
		}
		if !errors.Is(err, index.ErrInvalidPath) {
			t.Fatalf("untyped error %v", err)
		}
	})
}

// A delta log entry of any bytes is read as a head only when it makes a
// state that checks; anything else is a typed error, never a panic.
func FuzzReadDelta(f *testing.F) {
	f.Add([]byte(`{"format":5,"seq":3,"prev":"","state":"","set":[{"lo":"b","id":"00000000000000000000000000000000","count":1,"bytes":2}]}`))
	f.Add([]byte(`{"format":5,"seq":3,"reset":true,"del":["a"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b := mem.New()
		deltaCommit(t, b, time.Now, 100, map[string]string{"a": "1"})
		known := deltaCommit(t, b, time.Now, 100, map[string]string{"b": "1"})
		if _, err := backend.PutBytes(t.Context(), b, index.LogKey(3), data, backend.Cond{}); err != nil {
			t.Fatal(err)
		}
		h, err := index.ReadHeadSince(t.Context(), b, known, time.Now)
		if err != nil {
			var fe *index.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if h.Manifest.Seq != 3 || index.EncodeManifest(h.Manifest) == nil {
			t.Fatalf("accepted seq %d", h.Manifest.Seq)
		}
		if _, err := index.DecodeManifest(index.ManifestKey, h.Data); err != nil {
			t.Fatalf("accepted a state that does not decode: %v", err)
		}
	})
}
