package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file/directory clash between two caches (issue 21): one pushes
// "clash", the other "clash/inner.txt". Each resolve form settles it in
// either direction; status shows it as one conflict naming both sides,
// and is clean afterwards.
func TestResolve_FileDirClash_SettledEitherWay(t *testing.T) {
	for _, tc := range []struct {
		name         string
		remote, mine string // the path the peer pushes, the one this cache has
		args         []string
	}{
		{"LocalFile_TakeRemote", "clash/inner.txt", "clash", []string{"--take-remote", "clash"}},
		{"LocalFile_KeepLocal", "clash/inner.txt", "clash", []string{"--keep-local", "clash"}},
		{"LocalDir_TakeRemote", "clash", "clash/inner.txt", []string{"--take-remote", "clash/inner.txt"}},
		{"LocalDir_KeepLocal", "clash", "clash/inner.txt", []string{"--keep-local", "--all"}},
		{"LocalDir_TakeRemoteAll", "clash", "clash/inner.txt", []string{"--take-remote", "--all"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, dirs := setup(t, 2)
			peer, b := dirs[0], dirs[1]
			write(t, peer, tc.remote, "theirs")
			ok(t, "push", "--dir", peer)
			write(t, b, tc.mine, "mine")
			wantCode(t, silt(t, "push", "--dir", b), exitRefused, "push (clashing)")
			silt(t, "pull", "--dir", b) // the pull finds the clash too; still one conflict

			st := object(t, ok(t, "status", "--dir", b, "--offline", "--json"))["status"].(map[string]any)
			cs, _ := st["conflicts"].([]any)
			if len(cs) != 1 {
				t.Fatalf("status lists %d conflicts, want the clash once: %v", len(cs), cs)
			}
			reason := cs[0].(map[string]any)["reason"].(string)
			for _, w := range []string{"local", "remote", "file", "directory"} {
				if !strings.Contains(reason, w) {
					t.Errorf("conflict reason %q does not name both sides (%q missing)", reason, w)
				}
			}

			r := ok(t, append([]string{"resolve", "--dir", b}, tc.args...)...)
			if !strings.Contains(r.stdout, "resolved 1 path") {
				t.Errorf("resolve output:\n%s", r.stdout)
			}
			s := ok(t, "status", "--dir", b)
			if !strings.Contains(s.stdout, "unpushed: 0 to upload, 0 to delete") || strings.Contains(s.stdout, "conflicts: ") ||
				!strings.Contains(s.stdout, "remote: up to date") {
				t.Fatalf("status after resolve is not clean:\n%s", s.stdout)
			}
			want, gone := tc.remote, tc.mine // take-remote
			body := "theirs"
			if strings.Contains(strings.Join(tc.args, " "), "--keep-local") {
				want, gone, body = tc.mine, tc.remote, "mine"
			}
			if got := read(t, b, want); got != body {
				t.Fatalf("%s = %q after resolve, want %q", want, got, body)
			}
			if got := ok(t, "cat", u, want).stdout; got != body {
				t.Fatalf("remote %s = %q after resolve, want %q", want, got, body)
			}
			if r := silt(t, "cat", u, gone); r.code == 0 {
				t.Fatalf("remote still holds %s after resolve", gone)
			}
			ok(t, "pull", "--dir", peer)
			if got := read(t, peer, want); got != body {
				t.Fatalf("the peer's %s = %q after its pull, want %q", want, got, body)
			}
			if body == "theirs" {
				// Nothing is lost: the local side is a backup, and resolve
				// --restore puts it back once its place is free.
				bk, _ := object(t, ok(t, "status", "--dir", b, "--offline", "--json"))["status"].(map[string]any)["backups"].([]any)
				if len(bk) != 1 || bk[0].(map[string]any)["path"] != tc.mine {
					t.Fatalf("backups %v, want the local %s", bk, tc.mine)
				}
				copyPath := filepath.Join(b, bk[0].(map[string]any)["copy"].(string))
				if data, err := os.ReadFile(copyPath); err != nil || string(data) != "mine" {
					t.Fatalf("backup %s: %q, %v", copyPath, data, err)
				}
			}
		})
	}
}
