package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrace_File_OneJSONLinePerSpanWithParents checks --trace FILE writes
// the push's operation span and its phases, each a JSON line, the phases
// children of the operation; and that SILT_TRACE=stdout is refused with
// --json, whose stdout holds exactly one object.
func TestTrace_File_OneJSONLinePerSpanWithParents(t *testing.T) {
	_, dirs := setup(t, 1)
	a := dirs[0]
	write(t, a, "data/x", "x")
	spans := filepath.Join(t.TempDir(), "spans.jsonl")
	ok(t, "push", "--dir", a, "--trace", spans)
	f, err := os.Open(spans)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type sc struct{ SpanID string }
	parents := map[string]string{}
	ids := map[string]string{}
	sc2 := bufio.NewScanner(f)
	for sc2.Scan() {
		var s struct {
			Name        string
			SpanContext sc
			Parent      sc
		}
		if err := json.Unmarshal(sc2.Bytes(), &s); err != nil {
			t.Fatalf("not a JSON line: %v\n%s", err, sc2.Text())
		}
		ids[s.Name] = s.SpanContext.SpanID
		parents[s.Name] = s.Parent.SpanID
	}
	for _, p := range []string{"walk", "index", "upload", "commit"} {
		if parents["silt.push."+p] != ids["silt.push"] || ids["silt.push"] == "" {
			t.Errorf("silt.push.%s: parent %q, want silt.push %q (spans %v)", p, parents["silt.push."+p], ids["silt.push"], ids)
		}
	}
	r := siltAt(t, t.TempDir(), []string{"SILT_TRACE=stdout"}, "status", "--json", "--dir", a)
	wantCode(t, r, exitUsage, "SILT_TRACE=stdout with --json")
	if strings.Count(r.stdout, "\"error\"") != 1 || !strings.Contains(r.stdout, "--trace stdout: stdout carries the --json object") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
}
