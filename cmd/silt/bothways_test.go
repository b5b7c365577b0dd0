package main

import (
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/siltsync/silt/index"
)

// world is one run of a scenario: a bucket, the cache under test (a) and a
// peer (b), with a served by `silt serve` or not.
type world struct {
	t      *testing.T
	u      string
	a, b   string
	served bool
}

func newWorld(t *testing.T, served bool) *world {
	u, dirs := setup(t, 2)
	w := &world{t: t, u: u, a: dirs[0], b: dirs[1], served: served}
	if served {
		startServe(t, w.a)
	}
	return w
}

// step is one command of a scenario; A, B and U in its arguments stand
// for the cache under test, the peer and the bucket URL. prep, when set,
// runs first (writing files).
type step struct {
	prep func(w *world)
	args []string
}

func (w *world) expand(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		switch a {
		case "A":
			a = w.a
		case "B":
			a = w.b
		case "U":
			a = w.u
		}
		out[i] = a
	}
	return out
}

// timing and the other run-specific parts of an output, blanked before
// two runs are compared.
var (
	reTime  = regexp.MustCompile(`\b[0-9]+(\.[0-9]+)? ?(ms|µs|s)\b`)
	reMs    = regexp.MustCompile(`"(ms|at|acquired_at|acquiredAt|nonce|expires_at|heartbeat_at|pid)": ?("[^"]*"|[0-9.e+-]+)`)
	reSpeed = regexp.MustCompile(`[0-9.]+ [KMGT]?i?B/s`)
	reKept  = regexp.MustCompile(`\.silt/kept/[0-9]{8}T[0-9]{6}-[0-9a-f]+`) // a kept copy's name: when and a random id
)

func (w *world) normalize(s string) string {
	s = strings.ReplaceAll(s, w.a, "A")
	s = strings.ReplaceAll(s, w.b, "B")
	s = strings.ReplaceAll(s, w.u, "U")
	s = strings.ReplaceAll(s, strings.TrimPrefix(w.u, "file://"), "U")
	s = reMs.ReplaceAllString(s, `"$1":0`)
	s = reSpeed.ReplaceAllString(s, "S")
	s = reKept.ReplaceAllString(s, ".silt/kept/K")
	return reTime.ReplaceAllString(s, "T")
}

// tree is the cache's files (outside .silt) and their contents.
func tree(t *testing.T, dir string) string {
	var lines []string
	_ = filepath.WalkDir(dir, func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && d.Name() == index.InternalDir {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			lines = append(lines, filepath.ToSlash(rel)+"="+string(data))
		}
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// outcome is what one step did: its exit code, output and the cache's files.
type outcome struct {
	code           int
	stdout, stderr string
	files          string
}

func (w *world) run(s step) outcome {
	if s.prep != nil {
		s.prep(w)
	}
	r := silt(w.t, w.expand(s.args)...)
	return outcome{r.code, w.normalize(r.stdout), w.normalize(r.stderr), tree(w.t, w.a)}
}

// bothWays runs steps on a directory opened by each command itself and on
// one a `silt serve` owns, and fails on the first step whose exit code,
// output (Stats included, with --json) or effect on the cache differs.
// It returns the outcomes of the served run.
func bothWays(t *testing.T, steps []step) []outcome {
	t.Helper()
	direct, served := newWorld(t, false), newWorld(t, true)
	var outs []outcome
	for i, s := range steps {
		d, v := direct.run(s), served.run(s)
		what := fmt.Sprintf("step %d: silt %s", i, strings.Join(s.args, " "))
		if d.code != v.code {
			t.Fatalf("%s: exit %d directly, %d through the service\ndirect stderr: %s\nserved stderr: %s", what, d.code, v.code, d.stderr, v.stderr)
		}
		if d.stdout != v.stdout {
			t.Fatalf("%s: stdout differs: %s", what, firstDiff(d.stdout, v.stdout))
		}
		if d.stderr != v.stderr {
			t.Fatalf("%s: stderr differs\ndirect:\n%s\nthrough the service:\n%s", what, d.stderr, v.stderr)
		}
		if d.files != v.files {
			t.Fatalf("%s: the cache differs\ndirect:\n%s\nthrough the service:\n%s", what, d.files, v.files)
		}
		outs = append(outs, v)
	}
	return outs
}

func writes(files ...string) func(w *world) {
	return func(w *world) {
		for i := 0; i+2 < len(files)+1; i += 3 {
			dir := map[string]string{"A": w.a, "B": w.b}[files[i]]
			write(w.t, dir, files[i+1], files[i+2])
		}
	}
}

// Every cache command, with the options that were dropped through a
// service, runs the same directly and through `silt serve`: exit code,
// stdout (Stats with --json), stderr (-v's per-file lines) and the files.
func TestCLI_BothWays_EveryCommandSameEffectsStatsAndOutput(t *testing.T) {
	bothWays(t, []step{
		{writes("A", "data/t/m1/a", "one", "A", "data/t/m2/b", "two", "A", "data/t/m3/raw", "raw bytes"), []string{"push", "--dir", "A", "--dry-run"}},
		{nil, []string{"push", "--dir", "A", "-v"}},
		{nil, []string{"status", "--dir", "A", "-v"}},
		{nil, []string{"status", "--dir", "A", "--json"}},
		{nil, []string{"pull", "--dir", "B", "-v"}},
		{writes("B", "data/t/m1/a", "peer one", "B", "data/t/m4/x.bin", "lazy bytes"), []string{"push", "--dir", "B"}},
		{writes("A", "data/t/m1/a", "mine"), []string{"push", "--dir", "A", "--json"}}, // a conflict: exit 3
		{nil, []string{"status", "--dir", "A", "--offline"}},
		{nil, []string{"resolve", "--dir", "A", "--take-remote", "data/t/m1/a"}},
		{nil, []string{"pull", "--dir", "A", "--lazy", "**/*.bin", "-v"}},
		{nil, []string{"status", "--dir", "A", "--offline", "--json"}},
		{writes("A", "data/t/m2/c", "three"), []string{"sync", "--dir", "A", "-v"}},
		{nil, []string{"hydrate", "--dir", "A", "data/t/m4/x.bin", "--json"}},
		{writes("A", "data/t/m2/b", "two, again"), []string{"push", "--dir", "A", "--lock", "deploy", "-v"}},
		{nil, []string{"lock", "inspect", "--dir", "A", "deploy"}},
		{writes("A", "data/t/m2/d", "four", "A", "data/t/m1/e", "five"), []string{"push", "--dir", "A", "--path", "data/t/m2", "--json"}},
		{writes("B", "data/t/m1/a", "peer two"), []string{"push", "--dir", "B"}},
		{nil, []string{"pull", "--dir", "A", "--scope", "data/t/m1", "--json"}},
		{writes("A", "data/t/m1/a", "mine again", "B", "data/t/m1/a", "peer three"), []string{"push", "--dir", "B"}},
		{nil, []string{"pull", "--dir", "A", "--scope", "data/t/m1", "-v"}}, // a conflict: exit 3
		{nil, []string{"resolve", "--dir", "A", "--keep-local", "--all"}},
		{nil, []string{"push", "--dir", "A", "--max-delete", "5"}},
		{nil, []string{"pull", "--dir", "A", "--metadata-only", "--json", "--json-changes", "1"}},
		{nil, []string{"hydrate", "--dir", "A", "data/t", "-v"}},
		{nil, []string{"pull", "--dir", "A", "--scope", "data/none", "-v"}},
		{func(w *world) { os.Remove(filepath.Join(w.a, "data/t/m2/d")) }, []string{"push", "--dir", "A", "--max-delete", "1", "--dry-run"}},
		{nil, []string{"status", "--dir", "A"}},
	})
}

// firstDiff shows the first line where two outputs differ.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  direct:  %q\n  served:  %q", i+1, x, y)
		}
	}
	return ""
}
