package gcs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/gcs"
)

func put(t *testing.T, b backend.Backend, key, data string, cond backend.Cond) (backend.ObjectInfo, error) {
	t.Helper()
	return backend.PutBytes(context.Background(), b, key, []byte(data), cond)
}

func mustPut(t *testing.T, b backend.Backend, key, data string, cond backend.Cond) backend.ObjectInfo {
	t.Helper()
	info, err := put(t, b, key, data, cond)
	if err != nil {
		t.Fatalf("put %q: %v", key, err)
	}
	return info
}

func read(t *testing.T, b backend.Backend, key string, opts backend.GetOptions) (string, backend.ObjectInfo, error) {
	t.Helper()
	data, info, err := backend.ReadAll(context.Background(), b, key, opts, 0)
	return string(data), info, err
}

func TestBackend_Put_VersionIsGenerationAndMatchesGet(t *testing.T) {
	b := newEmulator(t).backend(t)
	w := mustPut(t, b, "a/b.txt", "hello", backend.Cond{})
	if _, err := strconv.ParseInt(string(w.Version), 10, 64); err != nil {
		t.Fatalf("version %q is not a decimal generation", w.Version)
	}
	if w.Size != 5 || w.Key != "a/b.txt" {
		t.Fatalf("put info = %+v", w)
	}
	data, g, err := read(t, b, "a/b.txt", backend.GetOptions{})
	if err != nil || data != "hello" || g.Version != w.Version || g.Size != 5 {
		t.Fatalf("get = %q %+v %v; want hello at %s", data, g, err, w.Version)
	}
	s, err := b.Stat(context.Background(), "a/b.txt")
	if err != nil || s.Version != w.Version || s.Size != 5 {
		t.Fatalf("stat = %+v %v", s, err)
	}
}

func TestBackend_Put_IfAbsent(t *testing.T) {
	b := newEmulator(t).backend(t)
	mustPut(t, b, "k", "one", backend.Cond{IfAbsent: true})
	if _, err := put(t, b, "k", "two", backend.Cond{IfAbsent: true}); !backend.IsPrecondition(err) {
		t.Fatalf("second IfAbsent put: %v, want ErrPrecondition", err)
	}
	if data, _, _ := read(t, b, "k", backend.GetOptions{}); data != "one" {
		t.Fatalf("object = %q after failed IfAbsent, want one", data)
	}
}

func TestBackend_Put_IfMatch(t *testing.T) {
	b := newEmulator(t).backend(t)
	v1 := mustPut(t, b, "k", "one", backend.Cond{}).Version
	v2 := mustPut(t, b, "k", "two", backend.Cond{IfMatch: v1}).Version
	if v2 == v1 {
		t.Fatalf("CAS kept version %s", v1)
	}
	for _, tc := range []struct {
		name string
		key  string
		v    backend.Version
	}{
		{"stale", "k", v1},
		{"missing key", "nope", v2},
		{"non-numeric", "k", "etag-like"},
		{"zero means absent to GCS", "nope", "0"},
		{"negative", "k", "-5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := put(t, b, tc.key, "x", backend.Cond{IfMatch: tc.v}); !backend.IsPrecondition(err) {
				t.Fatalf("put IfMatch %q: %v, want ErrPrecondition", tc.v, err)
			}
		})
	}
	if ok, _ := backend.Exists(context.Background(), b, "nope"); ok {
		t.Fatal("a failed IfMatch put created the key")
	}
	if data, info, _ := read(t, b, "k", backend.GetOptions{}); data != "two" || info.Version != v2 {
		t.Fatalf("object = %q at %s, want two at %s", data, info.Version, v2)
	}
}

func TestBackend_Get_IfMatch(t *testing.T) {
	b := newEmulator(t).backend(t)
	v1 := mustPut(t, b, "k", "one", backend.Cond{}).Version
	if data, _, err := read(t, b, "k", backend.GetOptions{IfMatch: v1}); err != nil || data != "one" {
		t.Fatalf("get at current version: %q %v", data, err)
	}
	mustPut(t, b, "k", "two", backend.Cond{})
	for _, tc := range []struct {
		name, key string
		v         backend.Version
	}{{"stale", "k", v1}, {"missing", "gone", v1}, {"non-numeric", "k", "abc"}} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := read(t, b, tc.key, backend.GetOptions{IfMatch: tc.v}); !backend.IsPrecondition(err) {
				t.Fatalf("get IfMatch: %v, want ErrPrecondition", err)
			}
		})
	}
}

func TestBackend_Get_IfNoneMatch(t *testing.T) {
	b := newEmulator(t).backend(t)
	ctx := context.Background()
	v1 := mustPut(t, b, "k", "one", backend.Cond{}).Version
	rc, _, err := b.Get(ctx, "k", backend.GetOptions{IfNoneMatch: v1})
	if rc != nil {
		rc.Close()
		t.Error("get IfNoneMatch current returned a reader")
	}
	if !errors.Is(err, backend.ErrNotModified) || backend.IsRetryable(err) {
		t.Fatalf("get IfNoneMatch current: %v, want permanent ErrNotModified", err)
	}
	v2 := mustPut(t, b, "k", "two", backend.Cond{}).Version
	// A stale generation, and versions that are no generation at all (from
	// another store), read the object.
	for _, v := range []backend.Version{v1, "abc", "0", "-1", `"etag"`} {
		data, info, err := read(t, b, "k", backend.GetOptions{IfNoneMatch: v})
		if err != nil || data != "two" || info.Version != v2 {
			t.Errorf("get IfNoneMatch %q: %q at %q, %v; want \"two\" at %q", v, data, info.Version, err, v2)
		}
	}
	if _, _, err := read(t, b, "gone", backend.GetOptions{IfNoneMatch: v2}); !backend.IsNotExist(err) || backend.IsPrecondition(err) {
		t.Fatalf("get IfNoneMatch missing: %v, want ErrNotExist", err)
	}
}

func TestBackend_Get_Missing(t *testing.T) {
	b := newEmulator(t).backend(t)
	if _, _, err := read(t, b, "missing", backend.GetOptions{}); !backend.IsNotExist(err) || backend.IsRetryable(err) {
		t.Fatalf("get missing: %v, want permanent ErrNotExist", err)
	}
	if _, err := b.Stat(context.Background(), "missing"); !backend.IsNotExist(err) {
		t.Fatalf("stat missing: %v, want ErrNotExist", err)
	}
}

func TestBackend_Delete(t *testing.T) {
	e := newEmulator(t)
	b := e.backend(t)
	ctx := context.Background()
	mustPut(t, b, "k", "x", backend.Cond{})
	if err := b.Delete(ctx, "k", backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "k", backend.Cond{}); err != nil {
		t.Fatalf("unconditional delete of a missing key: %v, want nil", err)
	}
	if err := b.Delete(ctx, "k", backend.Cond{IfMatch: "1"}); !errors.Is(err, backend.ErrNotSupported) {
		t.Fatalf("conditional delete with ConditionalDelete off: %v, want ErrNotSupported", err)
	}
	if err := b.Delete(ctx, "k", backend.Cond{IfAbsent: true}); !errors.Is(err, backend.ErrNotSupported) {
		t.Fatalf("IfAbsent delete: %v, want ErrNotSupported", err)
	}
}

// TestEmulator_Delete_IgnoresGenerationMatch measures the deviation that
// makes the emulator legs run with ConditionalDelete off: fake-gcs-server
// v1.56.1 deletes on a stale ifGenerationMatch (fsouza/fake-gcs-server#1282,
// fixed upstream after v1.56.1). When this test fails, the emulator has
// been fixed and the legs can turn conditional delete back on.
func TestEmulator_Delete_IgnoresGenerationMatch(t *testing.T) {
	e := newEmulator(t)
	bucket := e.newBucket()
	ctx := context.Background()
	b, err := newPortable(ctx, gcs.Config{Bucket: bucket, Client: e.Client})
	if err != nil {
		t.Fatal(err)
	}
	v1 := mustPut(t, b, "k", "one", backend.Cond{}).Version
	v2 := mustPut(t, b, "k", "two", backend.Cond{}).Version
	if err := b.Delete(ctx, "k", backend.Cond{IfMatch: v1}); err != nil {
		t.Fatalf("stale conditional delete returned %v: the emulator now honours it", err)
	}
	if ok, _ := backend.Exists(ctx, b, "k"); ok {
		t.Fatal("stale conditional delete kept the object: the emulator now honours ifGenerationMatch on DELETE")
	}
	// The current generation deletes, as it should; a missing key under a
	// condition is a precondition failure (404 classified as a lost race).
	mustPut(t, b, "m", "x", backend.Cond{})
	if err := b.Delete(ctx, "gone", backend.Cond{IfMatch: v2}); !backend.IsPrecondition(err) {
		t.Fatalf("conditional delete of a missing key: %v, want ErrPrecondition", err)
	}
}

// TestEmulator_Get_IgnoresReadPrecondition measures why Get compares the
// reader's generation itself: fake-gcs-server v1.56.1 serves the current
// object despite a stale x-goog-if-generation-match. Real GCS answers 412.
func TestEmulator_Get_IgnoresReadPrecondition(t *testing.T) {
	e := newEmulator(t)
	ctx := context.Background()
	o := e.Client.Bucket(e.newBucket()).Object("k")
	var gens []int64
	for _, data := range []string{"one", "two"} {
		w := o.NewWriter(ctx)
		if _, err := io.WriteString(w, data); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		gens = append(gens, w.Attrs().Generation)
	}
	r, err := o.If(storage.Conditions{GenerationMatch: gens[0]}).NewReader(ctx)
	if err != nil {
		t.Fatalf("stale read precondition failed with %v: the emulator now honours it", err)
	}
	defer r.Close()
	if r.Attrs.Generation != gens[1] {
		t.Fatalf("stale read served generation %d, want the current %d", r.Attrs.Generation, gens[1])
	}
}

// TestEmulator_Get_IgnoresGenerationNotMatch measures why Get compares the
// reader's generation for IfNoneMatch too: even over JSON reads, where the
// client sends ifGenerationNotMatch, fake-gcs-server v1.56.1 serves the
// unchanged object. Real GCS answers 304.
func TestEmulator_Get_IgnoresGenerationNotMatch(t *testing.T) {
	e := newEmulator(t)
	ctx := context.Background()
	client, err := storage.NewClient(ctx, option.WithEndpoint(e.Server.URL()+"/storage/v1/"), option.WithoutAuthentication(), storage.WithJSONReads())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	o := client.Bucket(e.newBucket()).Object("k")
	w := o.NewWriter(ctx)
	if _, err := io.WriteString(w, "one"); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	gen := w.Attrs().Generation
	r, err := o.If(storage.Conditions{GenerationNotMatch: gen}).NewReader(ctx)
	if err != nil {
		t.Fatalf("read under ifGenerationNotMatch=current failed with %v: the emulator now honours it", err)
	}
	defer r.Close()
	if r.Attrs.Generation != gen {
		t.Fatalf("read served generation %d, want %d", r.Attrs.Generation, gen)
	}
}

func TestBackend_Put_RacersIfAbsentOneWins(t *testing.T) {
	b := newEmulator(t).backend(t)
	const racers = 16
	var wg sync.WaitGroup
	errs := make([]error, racers)
	for i := range racers {
		wg.Go(func() { _, errs[i] = put(t, b, "lock", fmt.Sprint(i), backend.Cond{IfAbsent: true}) })
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case !backend.IsPrecondition(err):
			t.Errorf("racer: %v, want nil or ErrPrecondition", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d racers won IfAbsent, want 1", wins)
	}
}

// errReader fails after its bytes, as a dying upload source does.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		return n, e.err
	}
	return n, err
}
func (e *errReader) Seek(int64, int) (int64, error) { return 0, errors.New("not seekable") }

// cancelReader cancels the Put's context once half the body is read, so
// the cancellation lands mid-upload rather than before it starts.
type cancelReader struct {
	data   []byte
	off    int
	cancel context.CancelFunc
}

func (c *cancelReader) Read(p []byte) (int, error) {
	if c.off >= len(c.data)/2 {
		c.cancel()
	}
	if c.off >= len(c.data) {
		return 0, io.EOF
	}
	n := copy(p, c.data[c.off:min(len(c.data), c.off+len(p))])
	c.off += n
	return n, nil
}
func (c *cancelReader) Seek(int64, int) (int64, error) { return 0, errors.New("not seekable") }

func TestBackend_Put_CancelledOrFailedLeavesOldObject(t *testing.T) {
	b := newEmulator(t).backend(t)
	ctx := context.Background()
	v1 := mustPut(t, b, "k", "old", backend.Cond{}).Version
	for _, size := range []int{1 << 10, 20 << 20} { // one request; resumable upload
		for _, key := range []string{"k", "fresh"} {
			t.Run(fmt.Sprintf("cancel %s %d", key, size), func(t *testing.T) {
				cctx, cancel := context.WithCancel(ctx)
				defer cancel()
				body := &cancelReader{data: bytes.Repeat([]byte("n"), size), cancel: cancel}
				if _, err := b.Put(cctx, key, body, int64(size), backend.Cond{}); !errors.Is(err, context.Canceled) {
					t.Fatalf("cancelled put: %v, want context.Canceled", err)
				}
			})
		}
	}
	t.Run("short body", func(t *testing.T) {
		if _, err := b.Put(ctx, "k", bytes.NewReader([]byte("ab")), 3, backend.Cond{}); err == nil {
			t.Fatal("put with a short body succeeded")
		}
	})
	t.Run("long body", func(t *testing.T) {
		if _, err := b.Put(ctx, "k", bytes.NewReader([]byte("abcd")), 3, backend.Cond{}); err == nil {
			t.Fatal("put with a long body succeeded")
		}
	})
	t.Run("read error", func(t *testing.T) {
		boom := errors.New("disk on fire")
		_, err := b.Put(ctx, "k", &errReader{r: bytes.NewReader([]byte("ab")), err: boom}, 2, backend.Cond{})
		if !errors.Is(err, boom) {
			t.Fatalf("put with a failing body: %v, want the body's error", err)
		}
	})
	if data, info, err := read(t, b, "k", backend.GetOptions{}); err != nil || data != "old" || info.Version != v1 {
		t.Fatalf("after failed puts: %q at %s (%v), want old at %s", data, info.Version, err, v1)
	}
	if ok, _ := backend.Exists(ctx, b, "fresh"); ok {
		t.Fatal("a cancelled put created its key")
	}
}

func TestBackend_List_PagesAndPrefix(t *testing.T) {
	e := newEmulator(t)
	bucket := e.newBucket()
	ctx := context.Background()
	// An object outside the prefix must never be listed.
	if err := e.Client.Bucket(bucket).Object("other/x").NewWriter(ctx).Close(); err != nil {
		t.Fatal(err)
	}
	b, err := newPortable(ctx, gcs.Config{Bucket: bucket, Prefix: "root", Client: e.Client})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"d/a", "d/b", "d/c", "d/sub/x", "d/sub/y", "e"}
	versions := map[string]backend.Version{}
	for _, k := range want {
		versions[k] = mustPut(t, b, k, k, backend.Cond{}).Version
	}
	var got []string
	pages := 0
	err = b.List(ctx, "", backend.ListOptions{PageSize: 2}, func(page []backend.ObjectInfo) error {
		pages++
		if len(page) > 2 {
			t.Errorf("page of %d, want at most 2", len(page))
		}
		for _, o := range page {
			got = append(got, o.Key)
			if o.Version != versions[o.Key] || o.Size != int64(len(o.Key)) {
				t.Errorf("listed %+v, want version %s size %d", o, versions[o.Key], len(o.Key))
			}
		}
		return nil
	})
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) || pages != 3 {
		t.Fatalf("list = %v in %d pages (%v), want %v in 3", got, pages, err, want)
	}
	got = nil
	err = b.List(ctx, "d/s", backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		for _, o := range page {
			got = append(got, o.Key)
		}
		return nil
	})
	if err != nil || fmt.Sprint(got) != "[d/sub/x d/sub/y]" {
		t.Fatalf("list d/s = %v (%v)", got, err)
	}
	stop := errors.New("stop")
	if err := b.List(ctx, "", backend.ListOptions{PageSize: 1}, func([]backend.ObjectInfo) error { return stop }); err != stop {
		t.Fatalf("list with failing fn: %v, want fn's error", err)
	}
	// The prefix is applied on the wire, not only stripped from results.
	if _, err := e.Client.Bucket(bucket).Object("root/e").Attrs(ctx); err != nil {
		t.Fatalf("object not stored under the prefix: %v", err)
	}
}

func TestBackend_InvalidKeysRejectedBeforeIO(t *testing.T) {
	// No server: any I/O would fail with something other than ErrInvalidKey.
	client, err := storage.NewClient(context.Background(), optionNoServer()...)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	b, err := newPortable(context.Background(), gcs.Config{Bucket: "b", Client: client})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, k := range []string{"", "/abs", "a/../b", "a//b", "back\\slash", "nul\x00"} {
		_, _, err1 := b.Get(ctx, k, backend.GetOptions{})
		_, err2 := b.Put(ctx, k, bytes.NewReader(nil), 0, backend.Cond{})
		err3 := b.Delete(ctx, k, backend.Cond{})
		_, err4 := b.Stat(ctx, k)
		for _, err := range []error{err1, err2, err3, err4} {
			if !errors.Is(err, backend.ErrInvalidKey) {
				t.Errorf("key %q: %v, want ErrInvalidKey", k, err)
			}
		}
	}
	if err := b.List(ctx, "../", backend.ListOptions{}, nil); !errors.Is(err, backend.ErrInvalidKey) {
		t.Errorf("list ../: %v, want ErrInvalidKey", err)
	}
}

func TestNew_RejectsBadConfig(t *testing.T) {
	ctx := context.Background()
	if _, err := gcs.New(ctx, gcs.Config{}); err == nil {
		t.Error("New without a bucket succeeded")
	}
	if _, err := gcs.New(ctx, gcs.Config{Bucket: "b", Prefix: "a/../b"}); !errors.Is(err, backend.ErrInvalidKey) {
		t.Errorf("New with prefix a/../b: %v, want ErrInvalidKey", err)
	}
}
