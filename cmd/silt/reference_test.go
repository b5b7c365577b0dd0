package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
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
	addManCommands(t, root, out["man"])
	return out
}

// addManCommands gives the page of every command with subcommands a
// COMMANDS section, one line of summary each: cobra's man pages list them
// only by name under SEE ALSO, so `man silt` did not say what any does.
func addManCommands(t *testing.T, cmd *cobra.Command, dir string) {
	t.Helper()
	var b strings.Builder
	for _, c := range cmd.Commands() {
		if !c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand() {
			continue
		}
		fmt.Fprintf(&b, ".TP\n\\fB%s\\fP\n%s\n", c.CommandPath(), c.Short)
		addManCommands(t, c, dir)
	}
	if b.Len() == 0 {
		return
	}
	page := filepath.Join(dir, strings.ReplaceAll(cmd.CommandPath(), " ", "-")+".1")
	text, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	before, after, ok := strings.Cut(string(text), ".SH SEE ALSO")
	if !ok {
		t.Fatalf("%s has no SEE ALSO section", page)
	}
	if err := os.WriteFile(page, []byte(before+".SH COMMANDS\n"+b.String()+"\n\n.SH SEE ALSO"+after), 0o644); err != nil {
		t.Fatal(err)
	}
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

// TestMan_Root_ListsEveryCommandWithItsSummary is issue 37's newcomer
// finding: `man silt` named the commands without saying what any does.
func TestMan_Root_ListsEveryCommandWithItsSummary(t *testing.T) {
	out := genReference(t, t.TempDir())
	page, err := os.ReadFile(filepath.Join(out["man"], "silt.1"))
	if err != nil {
		t.Fatal(err)
	}
	_, cmds, ok := strings.Cut(string(page), ".SH COMMANDS\n")
	if !ok {
		t.Fatal("silt.1 has no COMMANDS section")
	}
	for _, c := range newRoot(&cli{jsonChanges: defaultJSONChanges}).Commands() {
		if !c.IsAvailableCommand() {
			continue
		}
		if want := "\\fB" + c.CommandPath() + "\\fP\n" + c.Short + "\n"; !strings.Contains(cmds, want) {
			t.Errorf("COMMANDS lacks %q", want)
		}
	}
}
