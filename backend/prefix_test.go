package backend_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/conformance"
)

func TestPrefixed_Conformance(t *testing.T) {
	conformance.RunBackend(t, func(t *testing.T) backend.Backend {
		return backend.Prefixed(mem.New(), "tenant/ns")
	})
}

func TestPrefixed_EmptyPrefix_ReturnsBackendItself(t *testing.T) {
	b := mem.New()
	if p := backend.Prefixed(b, ""); p != backend.Backend(b) {
		t.Errorf("Prefixed(b, \"\") = %T, want b itself", p)
	}
}

func TestPrefixed_RoundTrip_StoresUnderPrefixAndStripsIt(t *testing.T) {
	for _, prefix := range []string{"ns", "ns/"} { // a trailing slash is optional
		ctx := t.Context()
		inner := mem.New()
		p := backend.Prefixed(inner, prefix)
		for _, k := range []string{"nsx/z", "other", "ns"} { // beside the prefix, not under it
			if _, err := backend.PutBytes(ctx, inner, k, []byte(k), backend.Cond{}); err != nil {
				t.Fatal(err)
			}
		}

		info, err := backend.PutBytes(ctx, p, "a", []byte("A"), backend.Cond{})
		if err != nil || info.Key != "a" {
			t.Fatalf("Put via Prefixed(%q) = key %q, err %v; want key \"a\"", prefix, info.Key, err)
		}
		if _, err := backend.PutBytes(ctx, p, "b/c", []byte("BC"), backend.Cond{}); err != nil {
			t.Fatal(err)
		}
		if data, in, err := backend.ReadAll(ctx, inner, "ns/a", backend.GetOptions{}, 0); err != nil || string(data) != "A" || in.Version != info.Version {
			t.Errorf("inner Get(ns/a) = %q, %q, %v; want the write made through the prefix", data, in.Version, err)
		}
		if data, gi, err := backend.ReadAll(ctx, p, "a", backend.GetOptions{}, 0); err != nil || string(data) != "A" || gi.Key != "a" {
			t.Errorf("Get via prefix = %q, key %q, %v", data, gi.Key, err)
		}
		if st, err := p.Stat(ctx, "b/c"); err != nil || st.Key != "b/c" || st.Size != 2 {
			t.Errorf("Stat via prefix = %+v, %v; want key b/c, size 2", st, err)
		}
		// "z" lives at "nsx/z", which is beside the prefix, not under it.
		if _, err := p.Stat(ctx, "z"); !errors.Is(err, backend.ErrNotExist) {
			t.Errorf("Stat(z) via prefix = %v, want ErrNotExist", err)
		}

		for _, tc := range []struct {
			prefix string
			want   []string
		}{
			{"", []string{"a", "b/c"}},
			{"b", []string{"b/c"}},
			{"b/", []string{"b/c"}},
			{"z", nil},
		} {
			var got []string
			err := p.List(ctx, tc.prefix, backend.ListOptions{PageSize: 1}, func(page []backend.ObjectInfo) error {
				for _, o := range page {
					got = append(got, o.Key)
				}
				return nil
			})
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("Prefixed(%q).List(%q) = %q, %v; want %q", prefix, tc.prefix, got, err, tc.want)
			}
		}

		if err := p.Delete(ctx, "a", backend.Cond{IfMatch: info.Version}); err != nil {
			t.Errorf("Delete(IfMatch) via prefix: %v", err)
		}
		if ok, _ := backend.Exists(ctx, inner, "ns/a"); ok {
			t.Error("Delete via prefix left ns/a in the inner backend")
		}
		if p.Capabilities() != inner.Capabilities() {
			t.Errorf("Capabilities via prefix = %+v, want the inner %+v", p.Capabilities(), inner.Capabilities())
		}
		if backend.Base(p) != backend.Base(inner) {
			t.Errorf("Base(Prefixed) = %T, want the inner backend", backend.Base(p))
		}
	}
}

// spy counts the calls that reach it.
type spy struct {
	backend.Backend
	calls  atomic.Int64
	closed atomic.Bool
}

func (s *spy) Get(ctx context.Context, key string, o backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	s.calls.Add(1)
	return s.Backend.Get(ctx, key, o)
}

func (s *spy) Put(ctx context.Context, key string, r io.ReadSeeker, n int64, c backend.Cond) (backend.ObjectInfo, error) {
	s.calls.Add(1)
	return s.Backend.Put(ctx, key, r, n, c)
}

func (s *spy) Delete(ctx context.Context, key string, c backend.Cond) error {
	s.calls.Add(1)
	return s.Backend.Delete(ctx, key, c)
}

func (s *spy) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	s.calls.Add(1)
	return s.Backend.Stat(ctx, key)
}

func (s *spy) List(ctx context.Context, prefix string, o backend.ListOptions, fn func([]backend.ObjectInfo) error) error {
	s.calls.Add(1)
	return s.Backend.List(ctx, prefix, o, fn)
}

func (s *spy) Close() error {
	s.closed.Store(true)
	return s.Backend.Close()
}

// A key that is invalid on its own must be rejected by the wrapper, with
// the caller's key in the error, not passed on glued to the prefix.
func TestPrefixed_InvalidKey_RejectedBeforeInner(t *testing.T) {
	ctx := t.Context()
	inner := &spy{Backend: mem.New()}
	p := backend.Prefixed(inner, "ns")
	for _, key := range []string{"", "/x", "../x", "a//b", "a/"} {
		_, _, err := p.Get(ctx, key, backend.GetOptions{})
		wantKeyErrFor(t, "Get", key, err)
		_, err = backend.PutBytes(ctx, p, key, nil, backend.Cond{})
		wantKeyErrFor(t, "Put", key, err)
		wantKeyErrFor(t, "Delete", key, p.Delete(ctx, key, backend.Cond{}))
		_, err = p.Stat(ctx, key)
		wantKeyErrFor(t, "Stat", key, err)
	}
	err := p.List(ctx, "../x", backend.ListOptions{}, func([]backend.ObjectInfo) error { return nil })
	wantKeyErrFor(t, "List", "../x", err)
	if n := inner.calls.Load(); n != 0 {
		t.Errorf("%d calls with invalid keys reached the inner backend", n)
	}
	if err := p.Close(); err != nil || !inner.closed.Load() {
		t.Errorf("Close via prefix: err %v, inner closed %v", err, inner.closed.Load())
	}
}

func wantKeyErrFor(t *testing.T, op, key string, err error) {
	t.Helper()
	var ke *backend.KeyError
	if !errors.As(err, &ke) || ke.Key != key {
		t.Errorf("%s(%q) via prefix: err = %v, want a *KeyError for %q", op, key, err, key)
	}
}
