package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// demoVolatile are the parts of the demo's output that change from run to
// run: its temporary directory and timings. The README shows the demo
// under /tmp; a TMPDIR elsewhere is put back to it first (TestReadme_DemoTranscript_MatchesTheDemo).
var demoVolatile = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`silt-demo-[0-9]+`), "silt-demo-N"},
	{regexp.MustCompile(`[0-9]+\.[0-9] ms`), "N ms"},
}

func normalizeDemo(s string) string {
	for _, v := range demoVolatile {
		s = v.re.ReplaceAllString(s, v.repl)
	}
	return s
}

// TestReadme_DemoTranscript_MatchesTheDemo keeps the README's quick start
// true: its transcript is what silt demo prints, request counts included.
func TestReadme_DemoTranscript_MatchesTheDemo(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const start = "$ go run ./cmd/silt demo\n"
	i := strings.Index(string(data), start)
	if i < 0 {
		t.Fatalf("README.md has no %q block", start)
	}
	rest := string(data[i+len(start):])
	want := rest[:strings.Index(rest, "```")]
	got := strings.ReplaceAll(ok(t, "demo").stdout, filepath.Clean(os.TempDir()), "/tmp")
	if normalizeDemo(got) != normalizeDemo(want) {
		t.Errorf("README.md's demo transcript is stale; silt demo prints:\n%s\nREADME.md shows:\n%s", got, want)
	}
}

// TestDoc_CommandList_NamesEveryCommand keeps cmd/silt/doc.go's usage list
// true to the command table.
func TestDoc_CommandList_NamesEveryCommand(t *testing.T) {
	data, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range append(commands, &command{name: "completion"}) {
		if !strings.Contains(string(data), "//\tsilt "+cmd.name+" ") && !strings.HasSuffix(strings.TrimSpace(string(data)), "silt "+cmd.name) &&
			!strings.Contains(string(data), "//\tsilt "+cmd.name+"\n") {
			t.Errorf("doc.go's usage does not list silt %s", cmd.name)
		}
	}
}
