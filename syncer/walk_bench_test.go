package syncer_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/syncer"
)

// writeModelTree writes n small files in the host layout of the seed
// models (data/{type}/{id}/state/{n}/{raw,metadata.yaml} and
// state/latest, types of two to four segments), every mtime an hour old.
func writeModelTree(tb testing.TB, root string, n int) {
	types := []string{"command/shell", "aws/ec2/vpc", "@test/aws/ec2/subnet", "gcp/compute/network/firewall"}
	old := time.Now().Add(-time.Hour)
	for i := 0; n > 0; i++ {
		dir := filepath.Join(root, "data", filepath.FromSlash(types[i%len(types)]), fmt.Sprintf("%08x-model", i*2654435761), "state")
		var files []string
		for v := 1; v <= 5; v++ {
			files = append(files, filepath.Join(dir, fmt.Sprint(v), "raw"), filepath.Join(dir, fmt.Sprint(v), "metadata.yaml"))
		}
		files = append(files, filepath.Join(dir, "latest"))
		for _, f := range files[:min(len(files), n)] {
			if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
				tb.Fatal(err)
			}
			if err := os.WriteFile(f, []byte(f), 0o644); err != nil {
				tb.Fatal(err)
			}
			if err := os.Chtimes(f, old, old); err != nil {
				tb.Fatal(err)
			}
		}
		n -= len(files)
	}
}

// BenchmarkPush_NoOp100k is `silt push` of a cache in sync: a walk of
// 100,000 files whose size and mtime match the state, on mem (no request
// is sent). -short runs 10,000.
func BenchmarkPush_NoOp100k(b *testing.B) {
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	s, err := syncer.Open(b.Context(), syncer.Config{Backend: mem.New(), Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	writeModelTree(b, s.Root(), n)
	if st, err := s.Push(b.Context(), syncer.PushOptions{All: true}); err != nil || st.Files.Uploaded != n {
		b.Fatalf("seed: %+v, %v", st.Files, err)
	}
	hashes := syncer.Hashes(s)
	b.ReportAllocs()
	for b.Loop() {
		st, err := s.Push(b.Context(), syncer.PushOptions{All: true})
		if err != nil || st.Files.Unchanged != n || st.Requests.Get+st.Requests.Put != 0 {
			b.Fatalf("no-op push: %+v %+v, %v", st.Files, st.Requests, err)
		}
	}
	if h := syncer.Hashes(s) - hashes; h != 0 {
		b.Fatalf("a no-op push hashed %d files", h)
	}
	b.ReportMetric(float64(n), "files/op")
}
