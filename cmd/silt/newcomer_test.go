package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Regressions of what a new user hit on a fresh clone (issue 37).

// TestNewcomer_ServeFindsCacheUpward checks silt serve without --dir
// finds the cache as every other command does: upward from the working
// directory, and through $SILT_DIR.
func TestNewcomer_ServeFindsCacheUpward(t *testing.T) {
	_, dirs := setup(t, 1)
	a := dirs[0]
	write(t, a, "data/x", "x")
	for _, tc := range []struct {
		wd  string
		env []string
	}{{filepath.Join(a, "data"), nil}, {t.TempDir(), []string{"SILT_DIR=" + a}}} {
		cmd := exec.Command(siltRaceBin, "serve")
		cmd.Dir = tc.wd
		cmd.Env = append(cmd.Environ(), tc.env...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if !strings.HasPrefix(line, "serving "+a) {
			t.Errorf("silt serve in %s %v: %q\nstderr: %s", tc.wd, tc.env, line, stderr.String())
		}
	}
}

// TestNewcomer_AbsolutePathInsideCache checks an absolute --path inside
// the cache is taken from the root and from a subdirectory alike, and one
// outside the cache is refused alike, with a clear error.
func TestNewcomer_AbsolutePathInsideCache(t *testing.T) {
	u, dirs := setup(t, 1)
	a := dirs[0]
	write(t, a, "data/acme/x", "x")
	write(t, a, "data/acme/y", "y")
	write(t, a, "data/other/z", "z")
	sub := filepath.Join(a, "data", "other")
	if r := siltAt(t, sub, nil, "push", "--path", filepath.Join(a, "data", "acme", "x")); r.code != 0 {
		t.Errorf("push --path ABS from a subdirectory: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := siltAt(t, a, nil, "push", "--path", filepath.Join(a, "data", "acme", "y")); r.code != 0 {
		t.Errorf("push --path ABS from the root: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	ls := ok(t, "ls", u).stdout
	if !strings.Contains(ls, "data/acme/x") || !strings.Contains(ls, "data/acme/y") || strings.Contains(ls, "data/other/z") {
		t.Errorf("after push --path ABS, the bucket holds:\n%s", ls)
	}
	outside := filepath.Join(t.TempDir(), "f")
	write(t, filepath.Dir(outside), "f", "f")
	for _, wd := range []string{a, sub} {
		for _, args := range [][]string{{"push", "--path", outside}, {"pull", "--scope", outside}, {"ls", outside}, {"push", "--path", "../../../x"}} {
			r := siltAt(t, wd, nil, args...)
			wantCode(t, r, exitUsage, args...)
			if !strings.Contains(r.stderr, "is outside the cache") {
				t.Errorf("silt %v from %s: %s", args, wd, r.stderr)
			}
		}
	}
}

// TestNewcomer_PathMatchingNothing checks a path that matches no file (a
// typo) is an error naming it, for push --path, pull --scope and ls, while
// push --path of a directory deleted locally still pushes the deletion.
func TestNewcomer_PathMatchingNothing(t *testing.T) {
	_, dirs := setup(t, 1)
	a := dirs[0]
	write(t, a, "data/acme/x", "x")
	write(t, a, "data/gone/y", "y")
	ok(t, "push", "--dir", a)
	for _, args := range [][]string{
		{"push", "--dir", a, "--path", "data/acmee"},
		{"pull", "--dir", a, "--scope", "data/acmee"},
		{"ls", "--dir", a, "data/acmee"},
	} {
		r := silt(t, args...)
		wantCode(t, r, exitError, args...)
		if !strings.Contains(r.stderr, "no file under data/acmee, ") || !strings.Contains(r.stderr, "hint: check the path for a typo") {
			t.Errorf("silt %v:\n%s", args, r.stderr)
		}
		if r := silt(t, append(args, "--json")...); r.code != exitError || !strings.Contains(object(t, r)["error"].(string), "no file under data/acmee") {
			t.Errorf("silt %v --json: exit %d\n%s", args, r.code, r.stdout)
		}
	}
	// Still fine: a path that matches, and a deletion.
	ok(t, "ls", "--dir", a, "data/acme")
	if err := os.RemoveAll(filepath.Join(a, "data", "gone")); err != nil {
		t.Fatal(err)
	}
	v := object(t, ok(t, "push", "--dir", a, "--path", "data/gone", "--json"))
	if num(v, "files", "deleted") != 1 {
		t.Errorf("push --path of a deleted directory: %v", v["files"])
	}
}

// TestNewcomer_ReadmeDayToDay runs the README's "Day to day" ls lines from
// the directory the block cds into: paths are relative to it, as the
// code takes them, so each lists that directory's files.
func TestNewcomer_ReadmeDayToDay(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const start = "$ cd ~/models/data/acme\n"
	i := strings.Index(string(data), start)
	if i < 0 {
		t.Fatalf("README.md has no %q block", start)
	}
	block := string(data[i:])
	block = block[:strings.Index(block, "```")]
	_, dirs := setup(t, 1)
	a := dirs[0]
	write(t, a, "data/acme/nlp/en/bert/config.json", "{}")
	write(t, a, "data/other/f", "f")
	ok(t, "push", "--dir", a)
	wd := filepath.Join(a, "data", "acme")
	n := 0
	for _, line := range strings.Split(block, "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		args := strings.Fields(cmd)
		if len(args) < 3 || args[1] != "silt" || args[2] != "ls" {
			continue
		}
		n++
		r := siltAt(t, wd, nil, args[2:]...)
		if r.code != 0 || !strings.Contains(r.stdout, "data/acme/nlp/en/bert/config.json") || strings.Contains(r.stdout, "data/other") {
			t.Errorf("README's %q from data/acme: exit %d\n%s%s", strings.TrimSpace(cmd), r.code, r.stdout, r.stderr)
		}
	}
	if n == 0 {
		t.Fatal("README's Day to day block runs no silt ls")
	}
	if r := siltAt(t, wd, nil, "ls", "."); r.code != 0 || !strings.Contains(r.stdout, "data/acme/nlp/en/bert/config.json") || strings.Contains(r.stdout, "data/other") {
		t.Errorf("ls . from data/acme: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestNewcomer_StatusAfterPull_NoStaleReason checks that once a pull has
// recorded a conflict's current reason, status no longer shows the push's
// old one ("pull first") beside it, in text or --json.
func TestNewcomer_StatusAfterPull_NoStaleReason(t *testing.T) {
	_, dirs := setup(t, 2)
	a, b := dirs[0], dirs[1]
	write(t, a, "f", "1")
	ok(t, "push", "--dir", a)
	ok(t, "pull", "--dir", b)
	write(t, a, "f", "2")
	write(t, b, "f", "3")
	ok(t, "push", "--dir", a)
	wantCode(t, silt(t, "push", "--dir", b), exitRefused, "push (conflict)")
	wantCode(t, silt(t, "pull", "--dir", b), exitRefused, "pull (conflict)")
	r := ok(t, "status", "--dir", b)
	if strings.Contains(r.stdout, "pull first") || strings.Count(r.stdout, "f: ") != 1 {
		t.Errorf("status after the pull:\n%s", r.stdout)
	}
	if r := ok(t, "status", "--dir", b, "--json"); strings.Contains(r.stdout, "pull first") {
		t.Errorf("status --json after the pull:\n%s", r.stdout)
	}
}

// TestNewcomer_InitPushExisting_CountsAddUp checks init --push-existing
// counts every file once, as push's summary does: deduplicated files too.
func TestNewcomer_InitPushExisting_CountsAddUp(t *testing.T) {
	root := t.TempDir()
	a := filepath.Join(root, "a")
	for i := range 7 {
		write(t, a, fmt.Sprintf("f%d", i), fmt.Sprintf("body %d", i))
	}
	write(t, a, "copy1", "body 0")
	write(t, a, "copy2", "body 1")
	r := ok(t, "init", "--push-existing", "--dir", a, fileURL(filepath.Join(root, "bucket")))
	if !strings.Contains(r.stdout, "pushed the 9 files already there: 7 uploaded, 2 deduplicated; now at seq 1\n") {
		t.Errorf("init --push-existing of 9 files, 2 of them copies:\n%s", r.stdout)
	}
}

// TestNewcomer_PushLockUnderOwnLease checks silt push --lock KEY after
// silt lock acquire KEY on the same cache commits under that lease (its
// token fences the commit), while another cache is refused with a hint
// that says when the lease lapses instead of suggesting force-release.
func TestNewcomer_PushLockUnderOwnLease(t *testing.T) {
	_, dirs := setup(t, 2)
	a, b := dirs[0], dirs[1]
	v := object(t, siltAtOK(t, a, "lock", "acquire", "--json", "deploy"))
	write(t, a, "f", "1")
	p := object(t, siltAtOK(t, a, "push", "--lock", "deploy", "--json"))
	if num(p, "files", "uploaded") != 1 {
		t.Errorf("push --lock under the cache's own lease: %v", p["files"])
	}
	// The lease is still held (the push did not release it).
	in := object(t, ok(t, "lock", "inspect", "--dir", a, "--json", "deploy"))
	if in["held"] != true || in["holder"].(map[string]any)["nonce"] != v["nonce"] {
		t.Errorf("after the push, inspect = %v", in)
	}
	write(t, b, "g", "2")
	r := silt(t, "push", "--dir", b, "--lock", "deploy")
	wantCode(t, r, exitRefused, "push --lock from another cache")
	if strings.Contains(r.stderr, "force-release") || !strings.Contains(r.stderr, "lapses in") {
		t.Errorf("push --lock refused by another's lease:\n%s", r.stderr)
	}
	// release needs no --nonce on the cache that took it; then others push.
	siltAtOK(t, a, "lock", "release", "deploy")
	ok(t, "push", "--dir", b, "--lock", "deploy")
}

func siltAtOK(t *testing.T, wd string, args ...string) result {
	t.Helper()
	r := siltAt(t, wd, nil, args...)
	wantCode(t, r, 0, args...)
	return r
}

// TestNewcomer_HintsPasteAndRun pastes the commands of hints and Next:
// lines into a shell where the user is: URLs with & are quoted, and --dir
// is there when the user gave it.
func TestNewcomer_HintsPasteAndRun(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	root := t.TempDir()
	bucket := filepath.Join(root, "bucket")
	a := filepath.Join(root, "my cache")
	write(t, a, "f", "f")
	elsewhere := t.TempDir()
	// paste runs the command that follows marker on a line of out.
	paste := func(out, marker string) {
		t.Helper()
		i := strings.Index(out, marker)
		if i < 0 {
			t.Errorf("no %q in:\n%s", marker, out)
			return
		}
		line, _, _ := strings.Cut(out[i+len(marker):], "\n")
		line, _, _ = strings.Cut(line, " (") // a trailing remark
		cmd := exec.Command(sh, "-c", line)
		cmd.Dir = elsewhere
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(siltBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		if got, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("pasted %q: %v\n%s", line, err, got)
		}
	}
	r := siltAt(t, elsewhere, nil, "init", "--push-existing", "--dir", a, fileURL(bucket))
	wantCode(t, r, 0, "init --push-existing")
	paste(r.stdout, "Next: ")
	amp := fileURL(bucket) + "?create=false&timeout=30s"
	r = siltAt(t, elsewhere, nil, "cat", amp, "nofile")
	wantCode(t, r, exitError, "cat URL&... nofile")
	paste(r.stderr, "with: ")
	r = siltAt(t, elsewhere, nil, "push", "--dir", a, "--path", "typo")
	wantCode(t, r, exitError, "push --path typo")
	paste(r.stderr, "with: ")
	r = siltAt(t, elsewhere, nil, "lock", "acquire", "--url", amp, "k")
	wantCode(t, r, 0, "lock acquire --url URL&...")
	paste(r.stdout, "release with: ")
	r = siltAt(t, elsewhere, nil, "lock", "acquire", "--dir", a, "k2")
	wantCode(t, r, 0, "lock acquire --dir")
	paste(r.stdout, "release with: ")
}

// TestNewcomer_DemoRecipe_PushesAFile runs the demo's "the same with the
// command line" recipe in a shell: its push sends a file, and its scoped
// pull brings it to the second cache.
func TestNewcomer_DemoRecipe_PushesAFile(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	out := ok(t, "demo").stdout
	i := strings.Index(out, "The same with the command line:\n")
	if i < 0 {
		t.Fatalf("no recipe:\n%s", out)
	}
	wd := t.TempDir()
	recipe := strings.ReplaceAll(out[i+len("The same with the command line:\n"):], "file:///tmp/silt-bucket", fileURL(filepath.Join(wd, "bucket")))
	cmd := exec.Command(sh, "-ec", recipe)
	cmd.Dir = wd
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(siltBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the recipe: %v\n%s\n%s", err, recipe, got)
	}
	if !strings.Contains(string(got), "1 uploaded") || !strings.Contains(string(got), "1 downloaded") {
		t.Errorf("the recipe pushes or pulls nothing:\n%s", got)
	}
	entries, _ := os.ReadDir(filepath.Join(wd, "b", "data", "acme", "nlp", "en", "bert"))
	if len(entries) == 0 {
		t.Errorf("the recipe's pull brought nothing to ./b")
	}
}

// TestNewcomer_Plurals checks counts of one read in the singular.
func TestNewcomer_Plurals(t *testing.T) {
	_, dirs := setup(t, 2)
	a, b := dirs[0], dirs[1]
	write(t, a, "f", "1")
	ok(t, "push", "--dir", a)
	ok(t, "pull", "--dir", b)
	write(t, a, "f", "2")
	write(t, b, "f", "3")
	ok(t, "push", "--dir", a)
	r := silt(t, "push", "--dir", b)
	s := ok(t, "status", "--dir", b).stdout
	for _, out := range []string{r.stdout, r.stderr, s} {
		for _, bad := range []string{"1 conflicts", "1 paths", "1 files", "1 local files"} {
			if strings.Contains(out, bad) {
				t.Errorf("%q in:\n%s", bad, out)
			}
		}
	}
	if !strings.Contains(r.stdout, "1 conflict;") || !strings.Contains(r.stderr, "1 conflict:") {
		t.Errorf("push with one conflict:\n%s%s", r.stdout, r.stderr)
	}
}
