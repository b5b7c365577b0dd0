package syncer_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	_ "github.com/siltsync/silt/backend/mem" // mem:// buckets
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// openBucket opens a fresh in-process bucket the way the CLI does.
func openBucket(t *testing.T) backend.Backend {
	t.Helper()
	b, err := backend.Open(context.Background(), "mem://"+strings.ReplaceAll(t.Name(), "/", "-"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeDirty(t *testing.T, s *syncer.Syncer, files map[string]string) {
	t.Helper()
	for p, c := range files {
		abs := filepath.Join(s.Root(), filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := s.MarkDirty(p); err != nil {
			t.Fatal(err)
		}
	}
}

func readLocal(t *testing.T, s *syncer.Syncer, p string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.Root(), filepath.FromSlash(p)))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(data)
}

// TestPull_Regression_SeqJumpLocksCacheOut: a manifest whose seq jumped
// to 1,000,000 was accepted, and every cache that pulled it then refused
// the real manifest forever as a rollback, with no way out. A pull with
// Reanchor takes the bucket's real manifest, says which seqs it moved
// between, and the cache works again. The bucket is an older silt's
// format 3, whose one manifest a single write jumps; a push to it needs
// the migration first.
func TestPull_Regression_SeqJumpLocksCacheOut(t *testing.T) {
	ctx := context.Background()
	b := openBucket(t)
	olderPush(t, b, index.FormatVersion, "data/x", "real")
	real, _, err := backend.ReadAll(ctx, b, index.ManifestKey, backend.GetOptions{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := index.DecodeManifest(index.ManifestKey, real)
	if err != nil {
		t.Fatal(err)
	}
	// A mistaken or hostile writer jumps the seq; a cache pulls it.
	jumped := *m
	jumped.Seq = 1_000_000
	if _, err := backend.PutBytes(ctx, b, index.ManifestKey, index.EncodeManifest(&jumped), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	c := openCache(t, b)
	if _, err := c.Pull(ctx, syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	// The owner puts the real manifest back.
	if _, err := backend.PutBytes(ctx, b, index.ManifestKey, real, backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pull(ctx, syncer.PullOptions{}); !errors.Is(err, syncer.ErrRollback) {
		t.Fatalf("plain pull of the real manifest = %v, want ErrRollback (it went back)", err)
	}
	st, err := c.Pull(ctx, syncer.PullOptions{Reanchor: true})
	if err != nil {
		t.Fatalf("pull --reanchor: %v", err)
	}
	if st.Reanchor == nil || st.Reanchor.From != 1_000_000 || st.Reanchor.To != m.Seq {
		t.Errorf("Stats.Reanchor = %+v, want from 1000000 to %d", st.Reanchor, m.Seq)
	}
	// Anchored on the real history: plain pulls and, once the bucket is
	// migrated, pushes work again, and a rollback below it is still refused.
	if _, err := c.Pull(ctx, syncer.PullOptions{}); err != nil {
		t.Errorf("pull after reanchor: %v", err)
	}
	if _, err := index.Migrate(ctx, b, index.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	writeDirty(t, c, map[string]string{"data/y": "after"})
	if _, err := c.Push(ctx, syncer.PushOptions{}); err != nil {
		t.Errorf("push after reanchor: %v", err)
	}
	if got := readLocal(t, c, "data/x"); got != "real" {
		t.Errorf("data/x = %q", got)
	}
	st, err = c.Pull(ctx, syncer.PullOptions{Reanchor: true})
	if err != nil || st.Reanchor != nil {
		t.Errorf("a reanchor with nothing to move = %+v, %v; want no Reanchor", st.Reanchor, err)
	}
}
