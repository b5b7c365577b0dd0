package check_test

import (
	"context"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/conformance/check"
)

func TestScratch_Remove_LeavesOnlyWhatWasThere(t *testing.T) {
	ctx := context.Background()
	m := mem.New()
	if _, err := backend.PutBytes(ctx, m, "keep/me", []byte("x"), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	s := check.NewScratch(m)
	var views []backend.Backend
	for range 3 {
		v, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		views = append(views, v)
	}
	for i, v := range views {
		for _, k := range []string{"a", "d/b", "d/e/c"} {
			if _, err := backend.PutBytes(ctx, v, k, []byte{byte(i)}, backend.Cond{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := v.Close(); err != nil { // a view's Close leaves the store open
			t.Fatal(err)
		}
	}
	// Each view starts empty and sees only its own keys.
	if ok, err := backend.Exists(ctx, views[1], "keep/me"); err != nil || ok {
		t.Fatalf("a view sees the store's own key: %v %v", ok, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Remove(cancelled); err != nil {
		t.Fatalf("Remove on a cancelled context: %v", err)
	}
	var left []string
	if err := m.List(ctx, "", backend.ListOptions{}, func(p []backend.ObjectInfo) error {
		for _, o := range p {
			left = append(left, o.Key)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(left, ",") != "keep/me" {
		t.Fatalf("left after Remove: %v, want only keep/me (scratch prefix %s)", left, s.Prefix())
	}
}
