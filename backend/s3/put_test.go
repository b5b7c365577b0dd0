package s3_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/s3"
)

func randomBytes(n int) []byte {
	out := make([]byte, n)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(out)
	return out
}

// TestBackend_Put_MultipartRoundTrips sends an object in three parts, read
// from the middle of a larger body, with and without SDK checksums.
//
// gofakes3 deviates here: CompleteMultipartUpload answers with an AWS-style
// "<md5>-<parts>" ETag but the stored object's ETag is the MD5 of the whole,
// so the version Put returns does not match Get's (a later IfMatch with it
// fails safe, with ErrPrecondition). The strict check runs on real servers
// in TestBackend_Endpoint_Multipart.
func TestBackend_Put_MultipartRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		name     string
		checksum aws.RequestChecksumCalculation
	}{
		{"SDKChecksums", aws.RequestChecksumCalculationWhenSupported},
		{"WhenRequired", aws.RequestChecksumCalculationWhenRequired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			b := f.open(t, s3.Config{MultipartThreshold: 1, PartSize: s3.MinPartSize, RequestChecksumCalculation: tc.checksum})
			checkMultipart(t, b, false)
		})
	}
}

// checkMultipart puts a three-part object from an offset inside a larger
// body and reads it back. strict also requires Put's version to be Get's
// and runs the conditional checks as subtests, which a leg whose store
// deviates can skip by name (see .ci/run).
func checkMultipart(t *testing.T, b backend.Backend, strict bool) {
	t.Helper()
	data := randomBytes(2*s3.MinPartSize + 12345)
	const lead = 7
	body := bytes.NewReader(append(make([]byte, lead), append(data, "trailing"...)...))
	if _, err := body.Seek(lead, 0); err != nil {
		t.Fatal(err)
	}
	info, err := b.Put(t.Context(), "big", body, int64(len(data)), backend.Cond{IfAbsent: true})
	if err != nil {
		t.Fatal(err)
	}
	got, ginfo, err := backend.ReadAll(t.Context(), b, "big", backend.GetOptions{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) || info.Size != int64(len(data)) {
		t.Errorf("Get returned %d bytes, not the %d put (Put said %d)", len(got), len(data), info.Size)
	}
	// Ranged reads across the first part boundary and of the last part's
	// tail: the store ranges over the assembled object, and Size is the
	// whole object's.
	for _, r := range []backend.Range{{Offset: s3.MinPartSize - 50, Length: 100}, {Offset: int64(len(data)) - 10, Length: 10}} {
		part, pinfo, err := backend.ReadAll(t.Context(), b, "big", backend.GetOptions{Range: &r}, 0)
		if err != nil {
			t.Fatalf("Get(Range %+v) of a multipart object: %v", r, err)
		}
		if !bytes.Equal(part, data[r.Offset:r.End()]) || pinfo.Size != int64(len(data)) || pinfo.Version != ginfo.Version {
			t.Errorf("Get(Range %+v) of a multipart object: %d bytes (equal: %v), Size %d, Version %s; want %d bytes, Size %d, Version %s",
				r, len(part), bytes.Equal(part, data[r.Offset:r.End()]), pinfo.Size, pinfo.Version, r.Length, len(data), ginfo.Version)
		}
	}
	if info.Version != ginfo.Version {
		if strict {
			t.Fatalf("Put returned version %s, Get %s: want the same", info.Version, ginfo.Version)
		}
		t.Logf("known store deviation: Put version %s, Get version %s", info.Version, ginfo.Version)
		return
	}
	if !strict {
		return
	}
	t.Run("IfAbsent", func(t *testing.T) {
		_, err := b.Put(t.Context(), "big", bytes.NewReader(data), int64(len(data)), backend.Cond{IfAbsent: true})
		if !errors.Is(err, backend.ErrPrecondition) {
			t.Errorf("second multipart create-if-absent: err = %v, want ErrPrecondition", err)
		}
	})
	t.Run("IfMatch", func(t *testing.T) {
		next, err := b.Put(t.Context(), "big", bytes.NewReader(data[1:]), int64(len(data)-1), backend.Cond{IfMatch: info.Version})
		if err != nil {
			t.Fatalf("multipart Put with current version: %v", err)
		}
		// Different bytes from the first write, so a store that compares
		// If-Match with the new upload's ETag instead of the object's is
		// caught too.
		stale := data[2:]
		_, err = b.Put(t.Context(), "big", bytes.NewReader(stale), int64(len(stale)), backend.Cond{IfMatch: info.Version})
		if !errors.Is(err, backend.ErrPrecondition) {
			t.Errorf("multipart Put with stale version: err = %v, want ErrPrecondition", err)
		}
		if st, err := b.Stat(t.Context(), "big"); err != nil || st.Version != next.Version {
			t.Errorf("Stat = %+v, %v; want version %s", st, err, next.Version)
		}
	})
}

// TestBackend_Put_ShortBodyFailsBeforeSending: a body shorter than size is
// the caller's bug, not a network failure for backend.Retry to repeat.
func TestBackend_Put_ShortBodyFailsBeforeSending(t *testing.T) {
	srv := &scripted{status: 500, code: "InternalError"}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	b := openAt(t, ts.URL, s3.Config{Bucket: "scripted"})
	_, err := b.Put(t.Context(), "k", bytes.NewReader([]byte("abc")), 5, backend.Cond{})
	var be *backend.Error
	if !errors.As(err, &be) || backend.IsRetryable(err) {
		t.Errorf("err = %v, want a permanent *backend.Error", err)
	}
	if n := srv.hits.Load(); n != 0 {
		t.Errorf("server saw %d requests, want none", n)
	}
}

// TestBackend_Verbs_InvalidKeySendsNothing checks ValidateKey runs before
// any I/O, through the real client.
func TestBackend_Verbs_InvalidKeySendsNothing(t *testing.T) {
	srv := &scripted{status: 500, code: "InternalError"}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	b := openAt(t, ts.URL, s3.Config{Bucket: "scripted"})
	ctx := t.Context()
	for name, err := range map[string]error{
		"put":    func() error { _, err := backend.PutBytes(ctx, b, "../x", nil, backend.Cond{}); return err }(),
		"get":    func() error { _, _, err := b.Get(ctx, "a//b", backend.GetOptions{}); return err }(),
		"stat":   func() error { _, err := b.Stat(ctx, "/abs"); return err }(),
		"delete": b.Delete(ctx, "", backend.Cond{}),
		"list":   b.List(ctx, "a/../", backend.ListOptions{}, func([]backend.ObjectInfo) error { return nil }),
	} {
		if !errors.Is(err, backend.ErrInvalidKey) {
			t.Errorf("%s: err = %v, want ErrInvalidKey", name, err)
		}
	}
	if n := srv.hits.Load(); n != 0 {
		t.Errorf("server saw %d requests, want none", n)
	}
}
