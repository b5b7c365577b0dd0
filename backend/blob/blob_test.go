package blob_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	gcblob "gocloud.dev/blob"
	"gocloud.dev/blob/memblob"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/blob"
	"github.com/siltsync/silt/conformance"
)

// newMem adapts a fresh memblob bucket, behind backend.Portable as
// backend.Open returns every store.
func newMem(t testing.TB, cfg blob.Config) (backend.Backend, *gcblob.Bucket) {
	bkt := memblob.OpenBucket(nil)
	t.Cleanup(func() { bkt.Close() })
	return backend.Portable(blob.New(bkt, cfg)), bkt
}

// TestBackend_Conformance runs the shared suite on memblob. The CAS checks
// (Put and Delete with IfMatch) skip by capability, each naming it, and the
// NotSupportedWhenNotClaimed checks verify the refusals instead.
func TestBackend_Conformance(t *testing.T) {
	conformance.RunBackend(t, func(t *testing.T) backend.Backend {
		b, _ := newMem(t, blob.Config{AtomicCreate: true, ListAfterWrite: true})
		return b
	})
}

// TestBackend_ConformanceNoAtomicCreate runs the suite as over fileblob,
// whose IfNotExist is not atomic: IfAbsent must be refused, not emulated.
func TestBackend_ConformanceNoAtomicCreate(t *testing.T) {
	conformance.RunBackend(t, func(t *testing.T) backend.Backend {
		b, _ := newMem(t, blob.Config{ListAfterWrite: true})
		return b
	})
}

func TestBackend_Put_IfMatchNotSupported(t *testing.T) {
	b, _ := newMem(t, blob.Config{AtomicCreate: true})
	ctx := context.Background()
	info, err := backend.PutBytes(ctx, b, "k", []byte("one"), backend.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = backend.PutBytes(ctx, b, "k", []byte("two"), backend.Cond{IfMatch: info.Version})
	if !errors.Is(err, backend.ErrNotSupported) {
		t.Fatalf("Put IfMatch: %v, want ErrNotSupported", err)
	}
	if err := b.Delete(ctx, "k", backend.Cond{IfMatch: info.Version}); !errors.Is(err, backend.ErrNotSupported) {
		t.Fatalf("Delete IfMatch: %v, want ErrNotSupported", err)
	}
	if c := b.Capabilities(); c.ConditionalPut || c.ConditionalDelete {
		t.Fatalf("capabilities %+v claim CAS", c)
	}
}

// TestBackend_Get_VersionTracksOutOfBandWrites checks the bracket in Get
// against writes made straight to the bucket, as another process would.
func TestBackend_Get_VersionTracksOutOfBandWrites(t *testing.T) {
	b, bkt := newMem(t, blob.Config{})
	ctx := context.Background()
	if err := bkt.WriteAll(ctx, "k", []byte("one"), nil); err != nil {
		t.Fatal(err)
	}
	data, v1, err := backend.ReadAll(ctx, b, "k", backend.GetOptions{}, 0)
	if err != nil || string(data) != "one" || !strings.HasPrefix(string(v1.Version), "md5:") {
		t.Fatalf("get = %q %+v %v", data, v1, err)
	}
	if err := bkt.WriteAll(ctx, "k", []byte("two"), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := backend.ReadAll(ctx, b, "k", backend.GetOptions{IfMatch: v1.Version}, 0); !backend.IsPrecondition(err) {
		t.Fatalf("get at the version before an out-of-band write: %v, want ErrPrecondition", err)
	}
}

// TestBackend_Version_FallsBackToETag covers drivers that report no MD5
// (memblob with nomd5, S3 multipart uploads): List must then agree with Stat.
func TestBackend_Version_FallsBackToETag(t *testing.T) {
	bkt := memblob.OpenBucket(&memblob.Options{NoMD5: true})
	defer bkt.Close()
	b := backend.Portable(blob.New(bkt, blob.Config{}))
	ctx := context.Background()
	info, err := backend.PutBytes(ctx, b, "k", []byte("x"), backend.Cond{})
	if err != nil || !strings.HasPrefix(string(info.Version), "etag:") {
		t.Fatalf("put = %+v %v, want an etag version", info, err)
	}
	var listed backend.Version
	if err := b.List(ctx, "", backend.ListOptions{}, func(p []backend.ObjectInfo) error { listed = p[0].Version; return nil }); err != nil {
		t.Fatal(err)
	}
	if listed != info.Version {
		t.Fatalf("listed version %s, put said %s", listed, info.Version)
	}
}

func TestBackend_Put_CancelledLeavesNothing(t *testing.T) {
	b, _ := newMem(t, blob.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Put(ctx, "k", bytes.NewReader([]byte("x")), 1, backend.Cond{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled put: %v", err)
	}
	if ok, _ := backend.Exists(context.Background(), b, "k"); ok {
		t.Fatal("cancelled put stored the object")
	}
}

func TestOpen_BlobMemURL(t *testing.T) {
	ctx := context.Background()
	b, err := backend.Open(ctx, "blob+mem://x")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if c := b.Capabilities(); !c.AtomicCreate || c.ConditionalPut {
		t.Fatalf("blob+mem capabilities = %+v", c)
	}
	if _, err := backend.PutBytes(ctx, b, "k", []byte("v"), backend.Cond{IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	if data, _, err := backend.ReadAll(ctx, b, "k", backend.GetOptions{}, 0); err != nil || string(data) != "v" {
		t.Fatalf("read back %q %v", data, err)
	}
	// The prefix is gocloud's own parameter.
	p, err := backend.Open(ctx, "blob+mem://?prefix=a/")
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
}

func TestRegister_BlobSchemes_OnlyLinkedDrivers(t *testing.T) {
	var got []string
	for _, s := range backend.Schemes() {
		if strings.HasPrefix(s, blob.SchemePrefix) {
			got = append(got, s)
		}
	}
	if want := []string{"blob+azblob", "blob+mem"}; !slices.Equal(got, want) {
		t.Fatalf("registered blob schemes = %v, want %v", got, want)
	}
}

func TestOpen_BlobURLErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ url, mentions string }{
		{"blob+mem://x?bogus=1", "bogus"},            // the gocloud opener rejects it
		{"blob+azblob://container", "azblob"},        // linked, but no account configured
		{"blob+file:///tmp/x", "unsupported scheme"}, // not linked, so not registered
		{"blob+s3://bucket", "unsupported scheme"},   // s3:// is the native backend
	} {
		if _, err := backend.Open(ctx, tc.url); err == nil || !strings.Contains(err.Error(), tc.mentions) {
			t.Errorf("Open(%q) = %v, want an error mentioning %q", tc.url, err, tc.mentions)
		}
	}
}
