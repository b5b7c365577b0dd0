package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Regressions of the adversarial pass of issue 37: names a terminal line
// cannot show as they are.

// TestOddNames_HumanLinesQuoteThem_JSONKeepsThem checks a name holding a
// newline or an escape sequence is Go-quoted on human lines (push -v, ls,
// status), so it can neither forge a line nor drive the terminal, while
// --json carries it unchanged and the bytes sync.
func TestOddNames_HumanLinesQuoteThem_JSONKeepsThem(t *testing.T) {
	u, dirs := setup(t, 1)
	a := dirs[0]
	hostile := []string{"data/nl\nupload   data/forged", "data/esc\x1b[2Jclear", "data/zw\u200bspace"}
	for _, p := range hostile {
		write(t, a, p, "x")
	}
	write(t, a, "data/plain name", "y")
	r := silt(t, "push", "--dir", a, "-v")
	if r.code != 0 {
		t.Fatalf("push: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	ls := silt(t, "ls", u)
	for _, out := range []string{r.stdout + r.stderr, ls.stdout} {
		if strings.ContainsAny(out, "\x1b\u200b") || strings.Contains(out, "\nupload   data/forged") {
			t.Errorf("a raw hostile name reached a human line:\n%q", out)
		}
		for _, p := range hostile {
			if q := shown(p); !strings.Contains(out, q) {
				t.Errorf("output lacks %s:\n%s", q, out)
			}
		}
		if !strings.Contains(out, "data/plain name") {
			t.Errorf("a printable name was quoted:\n%s", out)
		}
	}
	var got struct{ Entries []struct{ Path string } }
	if err := json.Unmarshal([]byte(silt(t, "ls", "--json", u).stdout), &got); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range got.Entries {
		names[e.Path] = true
	}
	for _, p := range hostile {
		if !names[p] {
			t.Errorf("ls --json lacks %q: %v", p, names)
		}
	}
}

// TestOddNames_InvalidUTF8_RefusedWithRenameHint checks a file whose name
// is not UTF-8 (no store key can hold it) is refused as a conflict with
// exit 3, the rest of the push commits, and the hint says to rename or
// exclude it: resolve cannot settle it.
func TestOddNames_InvalidUTF8_RefusedWithRenameHint(t *testing.T) {
	u, dirs := setup(t, 1)
	a := dirs[0]
	write(t, a, "data/ok", "ok")
	if err := os.WriteFile(filepath.Join(a, "data", "bad\xff\xfe"), []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := silt(t, "push", "--dir", a)
	if r.code != exitRefused {
		t.Fatalf("push: exit %d, want %d\n%s%s", r.code, exitRefused, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout+r.stderr, `conflict: "data/bad\xff\xfe": refused`) || !strings.Contains(r.stderr, "rename them, or exclude them") || strings.Contains(r.stderr, "silt resolve") {
		t.Errorf("push output:\n%s%s", r.stdout, r.stderr)
	}
	if ls := silt(t, "ls", u); !strings.Contains(ls.stdout, "data/ok") {
		t.Errorf("the rest of the push did not commit:\n%s", ls.stdout)
	}
	if r := silt(t, "push", "--dir", a, "--exclude", "data/bad*"); r.code != 0 {
		t.Errorf("push with the name excluded: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestFullDisk_HintAndStatusSayWhatIsLeft checks what a pull that ran out
// of disk leaves the user: a hint that names the full disk and says a
// rerun is safe, and a status that no longer says "up to date" until a
// whole pull succeeds (the packs moved away stand in for the full disk:
// any pull that fails part way sets it, a scoped pull does not clear it).
func TestFullDisk_HintAndStatusSayWhatIsLeft(t *testing.T) {
	err := fmt.Errorf("pull f1.bin: %w", &os.PathError{Op: "write", Path: "dl-1", Err: syscall.ENOSPC})
	if code, hint := classify(err); code != exitError || !strings.Contains(hint, "disk holding the cache is full") {
		t.Errorf("classify(ENOSPC) = %d, %q", code, hint)
	}
	u, dirs := setup(t, 2)
	a, b := dirs[0], dirs[1]
	write(t, a, "data/x", "x")
	write(t, a, "data/y", "y")
	if r := silt(t, "push", "--dir", a); r.code != 0 {
		t.Fatalf("push: %s%s", r.stdout, r.stderr)
	}
	bucket := strings.TrimPrefix(u, "file://")
	packs, away := filepath.Join(bucket, ".silt", "packs"), filepath.Join(bucket, ".silt", "packs.away")
	if err := os.Rename(packs, away); err != nil {
		t.Fatal(err)
	}
	if r := silt(t, "pull", "--dir", b); r.code != exitError {
		t.Fatalf("pull without the packs: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if err := os.Rename(away, packs); err != nil {
		t.Fatal(err)
	}
	if r := silt(t, "pull", "--dir", b, "--scope", "data/x"); r.code != 0 {
		t.Fatalf("scoped pull: %s%s", r.stdout, r.stderr)
	}
	st := silt(t, "status", "--dir", b)
	if strings.Contains(st.stdout, "up to date") || !strings.Contains(st.stdout, "the last pull stopped part way") {
		t.Errorf("status after a failed pull and a scoped one:\n%s", st.stdout)
	}
	if v := object(t, silt(t, "status", "--dir", b, "--json"))["status"].(map[string]any); v["pull_incomplete"] != true {
		t.Errorf("status --json: pull_incomplete = %v", v["pull_incomplete"])
	}
	if r := silt(t, "pull", "--dir", b); r.code != 0 {
		t.Fatalf("pull: %s%s", r.stdout, r.stderr)
	}
	if st := silt(t, "status", "--dir", b); !strings.Contains(st.stdout, "remote: up to date at seq 1") {
		t.Errorf("status after a whole pull:\n%s", st.stdout)
	}
}
