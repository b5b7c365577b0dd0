package crypt_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siltsync/silt/internal/crypt"
)

func TestPassphraseFromEnv(t *testing.T) {
	t.Setenv(crypt.PassphraseEnv, " secret words\n")
	if p, ok := crypt.PassphraseFromEnv(); !ok || string(p) != " secret words\n" {
		t.Fatalf("set: %q, %t; want it as it is", p, ok)
	}
	t.Setenv(crypt.PassphraseEnv, "")
	if p, ok := crypt.PassphraseFromEnv(); ok || p != nil {
		t.Fatalf("empty: %q, %t; want none", p, ok)
	}
	os.Unsetenv(crypt.PassphraseEnv)
	if _, ok := crypt.PassphraseFromEnv(); ok {
		t.Fatal("unset: want none")
	}
}

func TestReadPassphraseFile(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]string{
		"pw":          "pw",
		"pw\n":        "pw",
		"pw\r\n":      "pw",
		"pw\n\n":      "pw\n",
		" pw \t\n":    " pw \t",
		"two\nlines":  "two\nlines",
		"pw\r":        "pw\r",
		"ünïcödé 🔑\n": "ünïcödé 🔑",
	} {
		path := filepath.Join(dir, "pw")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := crypt.ReadPassphraseFile(path)
		if err != nil || string(got) != want {
			t.Fatalf("%q: %q, %v; want %q", content, got, err, want)
		}
	}
}

func TestReadPassphraseFile_Errors(t *testing.T) {
	dir := t.TempDir()
	for _, content := range []string{"", "\n", "\r\n"} {
		path := filepath.Join(dir, "empty")
		os.WriteFile(path, []byte(content), 0o600)
		if _, err := crypt.ReadPassphraseFile(path); !errors.Is(err, crypt.ErrEmptyPassphrase) || !strings.Contains(err.Error(), path) {
			t.Fatalf("%q: %v; want ErrEmptyPassphrase naming the path", content, err)
		}
	}
	missing := filepath.Join(dir, "missing")
	if _, err := crypt.ReadPassphraseFile(missing); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("missing: %v; want ErrNotExist naming the path", err)
	}
	if _, err := crypt.ReadPassphraseFile(dir); err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("a directory: %v; want an error naming it", err)
	}
	big := filepath.Join(dir, "big")
	secret := "the-passphrase-itself-"
	os.WriteFile(big, []byte(strings.Repeat(secret, 4000)), 0o600)
	if _, err := crypt.ReadPassphraseFile(big); err == nil || !strings.Contains(err.Error(), big) || strings.Contains(err.Error(), secret) {
		t.Fatalf("too long: %v; want an error naming the path, not the content", err)
	}
}
