package mem_test

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/conformance"
)

func TestBackend_Conformance(t *testing.T) {
	conformance.RunBackend(t, func(t *testing.T) backend.Backend { return mem.New() })
}

// bucketSeq names a fresh shared bucket per call: named buckets live for the
// whole process, and -count=N reruns tests in the same process.
var bucketSeq atomic.Int64

func freshBucket(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, bucketSeq.Add(1))
}

// TestOpen_Conformance_UnderURLPrefix runs the suite through backend.Open,
// so the URL opener and the Prefixed wrapper keep the contract too.
func TestOpen_Conformance_UnderURLPrefix(t *testing.T) {
	conformance.RunBackend(t, func(t *testing.T) backend.Backend {
		b, err := backend.Open(t.Context(), "mem://"+freshBucket("conformance")+"/ns/sub")
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}

func TestOpen_SameName_SharesBucketAndAppliesPrefix(t *testing.T) {
	ctx := t.Context()
	name := freshBucket("shared")
	root, err := backend.Open(ctx, "mem://"+name)
	if err != nil {
		t.Fatal(err)
	}
	scoped, err := backend.Open(ctx, "mem://"+name+"/team/a/")
	if err != nil {
		t.Fatal(err)
	}
	other, err := backend.Open(ctx, "mem://"+freshBucket("shared"))
	if err != nil {
		t.Fatal(err)
	}

	if _, err := backend.PutBytes(ctx, scoped, "f.txt", []byte("scoped"), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := backend.PutBytes(ctx, root, "top.txt", []byte("root"), backend.Cond{}); err != nil {
		t.Fatal(err)
	}

	// The root view sees the scoped write under its prefix.
	data, info, err := backend.ReadAll(ctx, root, "team/a/f.txt", backend.GetOptions{}, 0)
	if err != nil || string(data) != "scoped" || info.Key != "team/a/f.txt" {
		t.Errorf("root Get(team/a/f.txt) = %q, key %q, err %v; want the scoped write", data, info.Key, err)
	}
	// The scoped view lists only its prefix, with keys relative to it.
	var keys []string
	err = scoped.List(ctx, "", backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		for _, o := range page {
			keys = append(keys, o.Key)
		}
		return nil
	})
	if err != nil || !slices.Equal(keys, []string{"f.txt"}) {
		t.Errorf("scoped List = %q, err %v; want [f.txt]", keys, err)
	}
	// Another name is another bucket.
	if ok, err := backend.Exists(ctx, other, "top.txt"); err != nil || ok {
		t.Errorf("another bucket name sees top.txt: exists=%v err=%v", ok, err)
	}
	// Closing one opener leaves the shared bucket usable by the others.
	if err := scoped.Close(); err != nil {
		t.Fatal(err)
	}
	if ok, err := backend.Exists(ctx, root, "team/a/f.txt"); err != nil || !ok {
		t.Errorf("after closing one opener: exists=%v err=%v; want the object still there", ok, err)
	}
}

func TestOpen_BadURL_Fails(t *testing.T) {
	for _, tc := range []struct{ url, wantInErr string }{
		{"mem://b?region=x", `unknown parameter "region"`},
		{"mem:///only/path", "names no bucket"},
		{"mem://b/a/../c", "prefix"},
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
}

// TestSyncer_Model runs the model-based syncer test on the in-memory store
// (a small budget; SILT_MODEL_BUDGET raises it).
func TestSyncer_Model(t *testing.T) {
	conformance.RunSyncerModel(t, func(t *testing.T) backend.Backend { return mem.New() }, conformance.ModelBudget{Checks: 10, Steps: 15})
}
