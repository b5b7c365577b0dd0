package backend_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	_ "github.com/siltsync/silt/backend/mem"
)

// FuzzBucketAndPrefix checks the URL split every store's opener uses: a
// hostile URL is an error, never a panic, and an accepted one names a
// bucket and a prefix that is empty or a valid key ending in "/". Seeds:
// testdata/fuzz/FuzzBucketAndPrefix.
func FuzzBucketAndPrefix(f *testing.F) {
	for _, s := range []string{"s3://b/p/q", "s3://b", "gs://b/../x", "s3:///nobucket", "s3://b/a%00b", "s3://b//", "file:///tmp/x", "s3://b/a?region=x&bogus=1", "mem://n/%2e%2e/x",
		"s3://b/p?profile=work", "s3://b?profile=", "s3://KEY:SECRET@b/p", "s3://:@b", "s3://k%00:s@b",
		"gs://b/p?credentials=/tmp/key.json", "gs://b?credentials=", "gs://b?credentials=..%2F..%2Fetc%2Fpasswd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		_ = backend.CheckParams(u, "region", "endpoint", "profile", "credentials")
		bucket, prefix, err := backend.BucketAndPrefix(u)
		if err != nil {
			return
		}
		if bucket == "" {
			t.Fatalf("%q: accepted with no bucket", raw)
		}
		if prefix != "" {
			if !strings.HasSuffix(prefix, "/") {
				t.Fatalf("%q: prefix %q without a trailing slash", raw, prefix)
			}
			if err := backend.ValidateKey(strings.TrimSuffix(prefix, "/")); err != nil {
				t.Fatalf("%q: invalid prefix %q accepted: %v", raw, prefix, err)
			}
		}
	})
}

// FuzzOpen checks backend.Open on hostile URLs: an error or a backend, never
// a panic, and a mem backend that refuses keys escaping its prefix. Seeds:
// testdata/fuzz/FuzzOpen.
func FuzzOpen(f *testing.F) {
	for _, s := range []string{"mem://fuzz/p", "mem://", "nosuch://x", "://", "mem://fuzz/../../etc", "mem://fuzz/a%00", "MEM://fuzz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		b, err := backend.Open(context.Background(), raw)
		if err != nil {
			return
		}
		defer b.Close()
		if _, err := b.Stat(context.Background(), "../escape"); err == nil {
			t.Fatalf("%q: a key with .. was accepted", raw)
		}
	})
}
