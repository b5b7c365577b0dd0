package backend_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
)

// put stores data under key directly, failing the test on error.
func put(t *testing.T, b backend.Backend, key, data string) backend.ObjectInfo {
	t.Helper()
	info, err := backend.PutBytes(context.Background(), b, key, []byte(data), backend.Cond{})
	if err != nil {
		t.Fatalf("put %q: %v", key, err)
	}
	return info
}

// read returns key's content, failing the test on error.
func read(t *testing.T, b backend.Backend, key string) string {
	t.Helper()
	data, _, err := backend.ReadAll(context.Background(), b, key, backend.GetOptions{}, 0)
	if err != nil {
		t.Fatalf("read %q: %v", key, err)
	}
	return string(data)
}

// fill returns a store holding n keys "d/k00" ... under one prefix.
func fill(t *testing.T, n int) *mem.Backend {
	t.Helper()
	m := mem.New()
	for i := range n {
		put(t, m, fmt.Sprintf("d/k%02d", i), "x")
	}
	return m
}

// listPages lists prefix and returns how many pages and keys fn saw.
func listPages(b backend.Backend, prefix string, pageSize int) (pages, keys int, err error) {
	err = b.List(context.Background(), prefix, backend.ListOptions{PageSize: pageSize}, func(page []backend.ObjectInfo) error {
		pages++
		keys += len(page)
		return nil
	})
	return pages, keys, err
}

// wantRetryable fails the test unless err is a retryable failure matching
// target.
func wantRetryable(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) || !backend.IsRetryable(err) {
		t.Fatalf("err = %v, want a retryable error matching %v", err, target)
	}
}
