package peers

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNewTree_Sizes_RoundUpToWholeModels(t *testing.T) {
	for n, want := range map[int]int{1: 11, 1000: 1001, 10_000: 10_010, 100_000: 100_001} {
		if got := NewTree(n).Files(); got != want {
			t.Errorf("NewTree(%d).Files() = %d, want %d", n, got, want)
		}
	}
}

func TestNewTree_SameSize_IsTheSameTree(t *testing.T) {
	a, b := NewTree(1000), NewTree(1000)
	for i := range a.Models {
		if a.Models[i] != b.Models[i] {
			t.Fatalf("model %d: %+v then %+v", i, a.Models[i], b.Models[i])
		}
	}
	seen := map[string]bool{}
	for _, m := range a.Models {
		if seen[m.Dir()] {
			t.Fatalf("model directory %s twice", m.Dir())
		}
		seen[m.Dir()] = true
	}
}

func TestNewTree_Types_HaveTwoThreeAndFourSegments(t *testing.T) {
	segs := map[int]bool{}
	for _, m := range NewTree(100).Models {
		segs[strings.Count(m.Type, "/")+1] = true
	}
	for _, n := range []int{2, 3, 4} {
		if !segs[n] {
			t.Errorf("no model type of %d segments", n)
		}
	}
}

func TestModel_Files_FollowTheHostLayout(t *testing.T) {
	m := Model{Type: "aws/ec2/vpc", ID: "x"}
	f := m.Files()
	if len(f) != FilesPerModel {
		t.Fatalf("%d files, want %d", len(f), FilesPerModel)
	}
	for _, want := range []string{"data/aws/ec2/vpc/x/state/1/raw", "data/aws/ec2/vpc/x/state/1/metadata.yaml", "data/aws/ec2/vpc/x/state/latest"} {
		found := false
		for _, p := range f {
			found = found || p == want
		}
		if !found {
			t.Errorf("no %s in %v", want, f)
		}
	}
}

func TestContent_Generations_SameSizeDifferentBytes(t *testing.T) {
	a, b, c := Content("data/a", 0), Content("data/a", 1), Content("data/b", 0)
	if len(a) != FileSize || len(b) != FileSize || len(c) != FileSize {
		t.Fatalf("sizes %d %d %d, want %d", len(a), len(b), len(c), FileSize)
	}
	if bytes.Equal(a, b) || bytes.Equal(a, c) {
		t.Error("two paths or generations share their content")
	}
	if !bytes.Equal(a, Content("data/a", 0)) {
		t.Error("content is not deterministic")
	}
}

func TestTree_Write_WritesEveryFileWithItsTime(t *testing.T) {
	dir := t.TempDir()
	tree := NewTree(30)
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := tree.Write(dir, mtime); err != nil {
		t.Fatal(err)
	}
	n, err := countFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n != tree.Files() {
		t.Errorf("%d files written, want %d", n, tree.Files())
	}
	p := tree.Middle().Files()[0]
	fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p)))
	if err != nil {
		t.Fatal(err)
	}
	if !fi.ModTime().Equal(mtime) || fi.Size() != FileSize {
		t.Errorf("%s: mtime %v size %d, want %v and %d", p, fi.ModTime(), fi.Size(), mtime, FileSize)
	}
}
