package backend_test

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
)

// Schemes registered by these tests. The registry is process-wide and has
// no Unregister, so each is registered once (-count=N reruns tests in the
// same process).
const (
	schemeRecord = "silt-test-record"
	schemeDup    = "silt-test-dup"
)

var (
	registerOnce sync.Once
	opened       struct {
		sync.Mutex
		urls []string
	}
)

func registerTestSchemes() {
	registerOnce.Do(func() {
		backend.Register(schemeRecord, func(_ context.Context, u *url.URL) (backend.Driver, error) {
			opened.Lock()
			opened.urls = append(opened.urls, u.String())
			opened.Unlock()
			return mem.New(), nil
		})
		backend.Register(schemeDup, func(context.Context, *url.URL) (backend.Driver, error) {
			return nil, errors.New("never opened")
		})
	})
}

func TestRegister_DuplicateScheme_Panics(t *testing.T) {
	registerTestSchemes()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatal("second Register of one scheme did not panic")
		}
		if msg := r.(string); !strings.Contains(msg, schemeDup) {
			t.Errorf("panic %q does not name the scheme", msg)
		}
	}()
	backend.Register(schemeDup, func(context.Context, *url.URL) (backend.Driver, error) { return nil, nil })
}

func TestSchemes_ListsRegisteredSorted(t *testing.T) {
	registerTestSchemes()
	s := backend.Schemes()
	for _, want := range []string{mem.Scheme, schemeRecord, schemeDup} {
		if !slices.Contains(s, want) {
			t.Errorf("Schemes() = %q, missing %q", s, want)
		}
	}
	if !slices.IsSorted(s) {
		t.Errorf("Schemes() = %q, not sorted", s)
	}
}

func TestOpen_RegisteredScheme_CallsItsOpener(t *testing.T) {
	registerTestSchemes()
	raw := schemeRecord + "://bucket/some/prefix?x=1"
	b, err := backend.Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	opened.Lock()
	defer opened.Unlock()
	if !slices.Contains(opened.urls, raw) {
		t.Errorf("opener saw %q, want %q among them", opened.urls, raw)
	}
}

func TestOpen_BadURL_FailsNamingTheProblem(t *testing.T) {
	for _, tc := range []struct{ url, wantInErr string }{
		{"nosuch://bucket", `unsupported scheme "nosuch"`},
		{"bucket/path", "no scheme"},
		{"/srv/bucket", "no scheme"},
		{"", "no scheme"},
		{"mem://bad\x7fhost", "parse URL"},
	} {
		b, err := backend.Open(t.Context(), tc.url)
		if err == nil {
			b.Close()
			t.Errorf("Open(%q) succeeded", tc.url)
			continue
		}
		if !strings.Contains(err.Error(), tc.wantInErr) {
			t.Errorf("Open(%q): err = %v, want it to mention %q", tc.url, err, tc.wantInErr)
		}
	}
	// The error lists what is available, so a missing blank import is
	// easy to spot.
	_, err := backend.Open(t.Context(), "nosuch://bucket")
	if err == nil || !strings.Contains(err.Error(), mem.Scheme) {
		t.Errorf("Open(unknown scheme): err = %v, want it to list the registered schemes", err)
	}
}

func TestCheckParams(t *testing.T) {
	for _, tc := range []struct {
		url     string
		allowed []string
		wantBad string // "" means accepted
	}{
		{"s3://b", nil, ""},
		{"s3://b?region=eu", []string{"region", "endpoint"}, ""},
		{"s3://b?region=eu&endpoint=x", []string{"region", "endpoint"}, ""},
		{"s3://b?region=eu", nil, "region"},
		{"s3://b?zeta=1&alpha=2", []string{"region"}, "alpha"}, // the first in sorted order, every time
		{"s3://b?Region=eu", []string{"region"}, "Region"},     // names are case-sensitive
		{"s3://b?region", []string{"region"}, ""},              // a bare name counts as given
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		err = backend.CheckParams(u, tc.allowed...)
		switch {
		case tc.wantBad == "" && err != nil:
			t.Errorf("CheckParams(%q, %q) = %v, want nil", tc.url, tc.allowed, err)
		case tc.wantBad != "" && (err == nil || !strings.Contains(err.Error(), `"`+tc.wantBad+`"`)):
			t.Errorf("CheckParams(%q, %q) = %v, want an error naming %q", tc.url, tc.allowed, err, tc.wantBad)
		}
	}
}

func TestBucketAndPrefix(t *testing.T) {
	for _, tc := range []struct {
		url            string
		bucket, prefix string
		wantErr        string
	}{
		{"s3://b", "b", "", ""},
		{"s3://b/", "b", "", ""},
		{"s3://b/p", "b", "p/", ""},
		{"s3://b/p/q/", "b", "p/q/", ""},
		{"s3://b//p//", "b", "p/", ""}, // outer slashes are trimmed
		{"s3://b/a%20b/c", "b", "a b/c/", ""},
		{"gs://my-bucket.example/x?region=1", "my-bucket.example", "x/", ""},
		{"s3:///p", "", "", "names no bucket"},
		{"s3:b", "", "", "names no bucket"},
		{"s3://b/a/../c", "", "", "prefix"},
		{"s3://b/a//c", "", "", "prefix"},
		{"s3://b/a%5Cc", "", "", "prefix"},
		{"s3://b/a%00c", "", "", "prefix"},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		bucket, prefix, err := backend.BucketAndPrefix(u)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("BucketAndPrefix(%q) = %q, %q, %v; want an error mentioning %q", tc.url, bucket, prefix, err, tc.wantErr)
			}
			continue
		}
		if err != nil || bucket != tc.bucket || prefix != tc.prefix {
			t.Errorf("BucketAndPrefix(%q) = %q, %q, %v; want %q, %q", tc.url, bucket, prefix, err, tc.bucket, tc.prefix)
		}
	}
	// An invalid prefix is a key error, so callers can classify it.
	u, _ := url.Parse("s3://b/a/../c")
	if _, _, err := backend.BucketAndPrefix(u); !errors.Is(err, backend.ErrInvalidKey) {
		t.Errorf("BucketAndPrefix(invalid prefix) = %v, want errors.Is(err, ErrInvalidKey)", err)
	}
}
