package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/cobra/doc"
)

var updateReference = flag.Bool("update", false, "rewrite docs/cli and docs/man from the command table")

// referenceDirs are where the generated CLI reference and man pages live,
// relative to this package.
var referenceDirs = map[string]string{"markdown": "../../docs/cli", "man": "../../docs/man/man1"}

// genReference writes the CLI reference (markdown) and the man pages of the
// command table under dir.
func genReference(t *testing.T, dir string) map[string]string {
	t.Helper()
	t.Setenv(envTrace, "") // a flag default read from the environment
	root := newRoot(&cli{jsonChanges: defaultJSONChanges})
	out := map[string]string{"markdown": filepath.Join(dir, "markdown"), "man": filepath.Join(dir, "man")}
	for _, d := range out {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := doc.GenMarkdownTree(root, out["markdown"]); err != nil {
		t.Fatal(err)
	}
	date := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // fixed: the pages must not change by date
	hdr := &doc.GenManHeader{Title: "SILT", Section: "1", Source: "silt", Manual: "silt manual", Date: &date}
	if err := doc.GenManTree(root, hdr, out["man"]); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReference_CheckedIn_Current fails when docs/cli or docs/man differ
// from what the command table generates; `go test -run
// TestReference_CheckedIn_Current ./cmd/silt/ -update` rewrites them.
func TestReference_CheckedIn_Current(t *testing.T) {
	gen := genReference(t, t.TempDir())
	for kind, want := range referenceDirs {
		if *updateReference {
			if err := os.RemoveAll(want); err != nil {
				t.Fatal(err)
			}
			if err := os.CopyFS(want, os.DirFS(gen[kind])); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, _ := filepath.Glob(filepath.Join(gen[kind], "*"))
		have, _ := filepath.Glob(filepath.Join(want, "*"))
		if len(got) != len(have) {
			t.Errorf("%s: %d files checked in, the command table makes %d; run: go test -run TestReference_CheckedIn_Current ./cmd/silt/ -update", want, len(have), len(got))
		}
		for _, g := range got {
			name := filepath.Base(g)
			a, _ := os.ReadFile(g)
			b, err := os.ReadFile(filepath.Join(want, name))
			if err != nil || !bytes.Equal(a, b) {
				t.Errorf("%s/%s is stale (or missing); run: go test -run TestReference_CheckedIn_Current ./cmd/silt/ -update", want, name)
			}
		}
	}
}
