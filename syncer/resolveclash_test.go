package syncer_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// clashCaches opens caches over one file:// bucket, the way the CLI does.
type clashCaches struct {
	t    *testing.T
	root string
}

func (c clashCaches) open(name string) *syncer.Syncer {
	c.t.Helper()
	b, err := backend.Open(c.t.Context(), "file://"+filepath.Join(c.root, "bucket"))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { b.Close() })
	s, err := syncer.Open(c.t.Context(), syncer.Config{Backend: b, Dir: filepath.Join(c.root, name)})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { s.Close() })
	return s
}

func putMarked(t *testing.T, s *syncer.Syncer, p, body string) {
	t.Helper()
	full := filepath.Join(s.Root(), p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkDirty(p); err != nil {
		t.Fatal(err)
	}
}

// tree maps each data file of s to its content.
func tree(t *testing.T, s *syncer.Syncer) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(s.Root(), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(s.Root(), p)
		if d.IsDir() && rel == index.InternalDir {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %v, want %v", what, got, want)
	}
	for p, v := range want {
		if got[p] != v {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}
}

func TestResolve_FileDirClash_BothDirectionsBothResolutions(t *testing.T) {
	dirSide := map[string]string{"clash/inner.txt": "inner", "clash/sub/deep.txt": "deep"}
	fileSide := map[string]string{"clash": "the file"}
	for _, tc := range []struct {
		name          string
		remote, local map[string]string
		paths         []string // what the user names
	}{
		{"LocalFileRemoteDir", dirSide, fileSide, []string{"clash"}},
		{"LocalDirRemoteFile", fileSide, dirSide, []string{"clash/inner.txt"}},
	} {
		for _, keep := range []syncer.Resolution{syncer.TakeRemote, syncer.KeepLocal} {
			name := tc.name + map[syncer.Resolution]string{syncer.TakeRemote: "_TakeRemote", syncer.KeepLocal: "_KeepLocal"}[keep]
			t.Run(name, func(t *testing.T) {
				cs := clashCaches{t, t.TempDir()}
				a, b := cs.open("a"), cs.open("b")
				for p, v := range tc.remote {
					putMarked(t, a, p, v)
				}
				if _, err := a.Push(t.Context(), syncer.PushOptions{}); err != nil {
					t.Fatal(err)
				}
				for p, v := range tc.local {
					putMarked(t, b, p, v)
				}
				putMarked(t, b, "other.txt", "unrelated")
				if _, err := b.Push(t.Context(), syncer.PushOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := b.Pull(t.Context(), syncer.PullOptions{}); err != nil {
					t.Fatal(err)
				}
				st, err := b.Status(t.Context(), false)
				if err != nil {
					t.Fatal(err)
				}
				if len(st.Conflicts) != 1 {
					t.Fatalf("after push and pull, %d conflicts remembered, want the clash once: %+v", len(st.Conflicts), st.Conflicts)
				}
				for _, c := range st.Conflicts {
					if !strings.Contains(c.Reason, "local") || !strings.Contains(c.Reason, "remote") ||
						!strings.Contains(c.Reason, "file") || !strings.Contains(c.Reason, "directory") {
						t.Errorf("conflict %s: reason %q does not name both sides", c.Path, c.Reason)
					}
				}
				if _, err := b.Resolve(t.Context(), syncer.ResolveOptions{Paths: tc.paths, Keep: keep}); err != nil {
					t.Fatalf("Resolve: %v", err)
				}
				if keep == syncer.KeepLocal {
					if _, err := b.Push(t.Context(), syncer.PushOptions{Paths: []string{"clash"}}); err != nil {
						t.Fatal(err)
					}
				}
				st, err = b.Status(t.Context(), false)
				if err != nil {
					t.Fatal(err)
				}
				if len(st.Conflicts) != 0 {
					t.Fatalf("conflicts after resolve: %+v", st.Conflicts)
				}
				pv, err := b.PreviewPush(t.Context())
				if err != nil || pv.Total != 0 {
					t.Fatalf("after resolve, a push would still send %+v (%v)", pv, err)
				}
				winner := tc.remote
				if keep == syncer.KeepLocal {
					winner = tc.local
				}
				want := map[string]string{"other.txt": "unrelated"}
				for p, v := range winner {
					want[p] = v
				}
				sameTree(t, "b after resolve", tree(t, b), want)
				if _, err := b.Pull(t.Context(), syncer.PullOptions{}); err != nil {
					t.Fatalf("pull after resolve: %v", err)
				}
				sameTree(t, "b after resolve and a pull", tree(t, b), want)
				fresh := cs.open("fresh")
				if _, err := fresh.Pull(t.Context(), syncer.PullOptions{}); err != nil {
					t.Fatal(err)
				}
				sameTree(t, "the bucket after resolve", tree(t, fresh), want)
				if keep == syncer.TakeRemote {
					// Nothing is lost: each local file is a listed backup.
					kept := map[string]string{}
					for _, bk := range st.Backups {
						data, err := os.ReadFile(filepath.Join(b.Root(), bk.Copy))
						if err != nil {
							t.Fatal(err)
						}
						kept[bk.Path] = string(data)
					}
					sameTree(t, "backups of the local side", kept, tc.local)
				}
			})
		}
	}
}

// A peer that replaced a file by a directory (or the reverse) is pulled in
// one pull: the local side it replaced is removed first, then the other
// kind installed, with no conflict (before, the install was refused as
// "a parent is not a directory" until a second pull).
func TestPull_PeerSwappedFileAndDirectory_OnePullInstallsIt(t *testing.T) {
	for _, tc := range []struct {
		name        string
		before, now map[string]string
	}{
		{"FileToDirectory", map[string]string{"x": "file"}, map[string]string{"x/inner.txt": "inner"}},
		{"DirectoryToFile", map[string]string{"x/inner.txt": "inner", "x/sub/deep": "deep"}, map[string]string{"x": "file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := clashCaches{t, t.TempDir()}
			a, b := cs.open("a"), cs.open("b")
			for p, v := range tc.before {
				putMarked(t, a, p, v)
			}
			if _, err := a.Push(t.Context(), syncer.PushOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Pull(t.Context(), syncer.PullOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(filepath.Join(a.Root(), "x")); err != nil {
				t.Fatal(err)
			}
			for p, v := range tc.now {
				putMarked(t, a, p, v)
			}
			if err := a.MarkDirty("x"); err != nil {
				t.Fatal(err)
			}
			if st, err := a.Push(t.Context(), syncer.PushOptions{}); err != nil || st.Files.Conflicts != 0 {
				t.Fatalf("push of the swap: %+v, %v", st.Files, err)
			}
			st, err := b.Pull(t.Context(), syncer.PullOptions{})
			if err != nil || st.Files.Conflicts != 0 {
				t.Fatalf("pull of the swap: %+v %v, %v", st.Files, st.Conflicts, err)
			}
			sameTree(t, "b after one pull", tree(t, b), tc.now)
		})
	}
}
