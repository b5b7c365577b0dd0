package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// walkBytes returns every file under dir and its bytes.
func walkBytes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEncrypt_CLI_InitPushPullRotate_NothingReadableInTheBucket drives
// an encrypted bucket as a user does: init --encrypt with SILT_PASSWORD,
// push, a second cache pulling with --password-file, key add, rotate and
// remove; without a passphrase and with a wrong one every command fails
// with its hint and installs nothing, and no name or byte of the files
// shows in the bucket.
func TestEncrypt_CLI_InitPushPullRotate_NothingReadableInTheBucket(t *testing.T) {
	root := t.TempDir()
	bdir := filepath.Join(root, "bucket")
	u := fileURL(bdir)
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	write(t, a, "plans/secret-plan.yaml", "the-secret-content")
	pw := []string{"SILT_PASSWORD=first passphrase"}
	if r := siltAt(t, root, pw, "init", "--encrypt", "--push-existing", "--dir", a, u); r.code != 0 {
		t.Fatalf("init --encrypt: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for p, data := range walkBytes(t, bdir) {
		if strings.Contains(p, "secret") || strings.Contains(p, "plans") || strings.Contains(data, "secret") {
			t.Errorf("the bucket shows a name or bytes: %s", p)
		}
	}
	// No passphrase: refused before anything is installed.
	r := siltAt(t, root, []string{"SILT_PASSWORD="}, "init", "--dir", b, u)
	wantCode(t, r, exitError, "init without the passphrase")
	if !strings.Contains(r.stderr, "encrypted") || !strings.Contains(r.stderr, "hint: the bucket is encrypted: set SILT_PASSWORD or pass --password-file FILE") {
		t.Errorf("init without the passphrase:\n%s", r.stderr)
	}
	r = siltAt(t, root, []string{"SILT_PASSWORD=wrong"}, "init", "--dir", b, u)
	wantCode(t, r, exitError, "init with a wrong passphrase")
	if !strings.Contains(r.stderr, "wrong passphrase") || strings.Contains(r.stderr, "wrong\n") {
		t.Errorf("init with a wrong passphrase:\n%s", r.stderr)
	}
	file := filepath.Join(root, "pw.txt")
	if err := os.WriteFile(file, []byte("first passphrase\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := siltAt(t, root, nil, "init", "--password-file", file, "--dir", b, u); r.code != 0 {
		t.Fatalf("init with --password-file: %s", r.stderr)
	}
	if r := siltAt(t, root, nil, "pull", "--password-file", file, "--dir", b); r.code != 0 {
		t.Fatalf("pull: %s", r.stderr)
	}
	if got := read(t, b, "plans/secret-plan.yaml"); got != "the-secret-content" {
		t.Fatalf("pulled %q", got)
	}
	r = siltAt(t, root, []string{"SILT_PASSWORD="}, "pull", "--dir", b)
	wantCode(t, r, exitError, "pull of an encrypted binding without the passphrase")
	// Keys: add a second, rotate the first away, remove the second.
	r = siltAt(t, root, append(pw, "SILT_NEW_PASSWORD=second"), "key", "add", "--label", "ci", u)
	wantCode(t, r, 0, "key add")
	r = siltAt(t, root, append(pw, "SILT_NEW_PASSWORD=third"), "key", "rotate", u)
	wantCode(t, r, 0, "key rotate")
	if r := siltAt(t, root, pw, "ls", u); r.code == 0 {
		t.Errorf("the rotated-away passphrase still opens the bucket:\n%s", r.stdout)
	}
	keys := object(t, siltAt(t, root, []string{"SILT_PASSWORD=third"}, "key", "list", "--json", u))
	rows, _ := keys["keys"].([]any)
	if len(rows) != 2 {
		t.Fatalf("key list after add and rotate: %v", keys)
	}
	var ci string
	for _, row := range rows {
		m := row.(map[string]any)
		if m["label"] == "ci" {
			ci, _ = m["id"].(string)
		}
	}
	wantCode(t, siltAt(t, root, []string{"SILT_PASSWORD=third"}, "key", "remove", ci, u), 0, "key remove")
	r = siltAt(t, root, []string{"SILT_PASSWORD=third"}, "ls", u)
	if r.code != 0 || !strings.Contains(r.stdout, "plans/secret-plan.yaml") {
		t.Errorf("ls with the rotated passphrase: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A plain bucket's init --encrypt over its index is refused.
	plain := filepath.Join(root, "plain")
	write(t, filepath.Join(root, "c"), "x", "x")
	ok(t, "init", "--push-existing", "--dir", filepath.Join(root, "c"), fileURL(plain))
	r = siltAt(t, root, pw, "init", "--encrypt", "--dir", filepath.Join(root, "d"), fileURL(plain))
	wantCode(t, r, exitRefused, "init --encrypt of a bucket with a plain index")
}
