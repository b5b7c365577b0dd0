package silttest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
)

// Put stores data under key directly, failing the test on error.
func Put(t testing.TB, b backend.Backend, key, data string) backend.ObjectInfo {
	t.Helper()
	info, err := backend.PutBytes(context.Background(), b, key, []byte(data), backend.Cond{})
	if err != nil {
		t.Fatalf("put %q: %v", key, err)
	}
	return info
}

// Read returns key's content, failing the test on error.
func Read(t testing.TB, b backend.Backend, key string) string {
	t.Helper()
	data, _, err := backend.ReadAll(context.Background(), b, key, backend.GetOptions{}, 0)
	if err != nil {
		t.Fatalf("read %q: %v", key, err)
	}
	return string(data)
}

// Fill returns an in-memory store holding n keys "d/k00" ... under one
// prefix.
func Fill(t testing.TB, n int) backend.Backend {
	t.Helper()
	m := mem.New()
	for i := range n {
		Put(t, m, fmt.Sprintf("d/k%02d", i), "x")
	}
	return m
}

// ListPages lists prefix and returns how many pages and keys it saw.
func ListPages(b backend.Backend, prefix string, pageSize int) (pages, keys int, err error) {
	err = b.List(context.Background(), prefix, backend.ListOptions{PageSize: pageSize}, func(page []backend.ObjectInfo) error {
		pages++
		keys += len(page)
		return nil
	})
	return pages, keys, err
}

// WantRetryable fails the test unless err is a retryable failure matching
// target.
func WantRetryable(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) || !backend.IsRetryable(err) {
		t.Fatalf("err = %v, want a retryable error matching %v", err, target)
	}
}

// WantTimeoutEachVerb runs Get, Stat and List on b, a store opened on
// addr (a HeldOpen socket) with a short timeout, and fails unless each
// ends well within 5 s with backend.ErrTimeout naming addr.
func WantTimeoutEachVerb(t *testing.T, b backend.Backend, addr string) {
	t.Helper()
	for name, call := range map[string]func(ctx context.Context) error{
		"Get": func(ctx context.Context) error {
			_, _, err := backend.ReadAll(ctx, b, "k", backend.GetOptions{}, 0)
			return err
		},
		"Stat": func(ctx context.Context) error { _, err := b.Stat(ctx, "k"); return err },
		"List": func(ctx context.Context) error {
			return b.List(ctx, "", backend.ListOptions{}, func([]backend.ObjectInfo) error { return nil })
		},
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			err := call(t.Context())
			// A few attempts of the timeout plus backoff, far below 5 s.
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %v, want well under 5s", took)
			}
			if !errors.Is(err, backend.ErrTimeout) || !strings.Contains(err.Error(), addr) {
				t.Fatalf("err = %v, want a timeout naming %s", err, addr)
			}
		})
	}
}
