//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// watchLines reads the JSON lines of a running sync --watch.
func watchLines(t *testing.T, cmd *exec.Cmd) <-chan map[string]any {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan map[string]any, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var v map[string]any
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				v = map[string]any{"unparsed": sc.Text()}
			}
			lines <- v
		}
	}()
	return lines
}

// nextLine waits for a line ok accepts.
func nextLine(t *testing.T, lines <-chan map[string]any, what string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	for {
		select {
		case v, more := <-lines:
			if !more {
				t.Fatalf("sync --watch ended before %s", what)
			}
			if v["unparsed"] != nil {
				t.Fatalf("a --json line that is not JSON: %v", v["unparsed"])
			}
			if ok(v) {
				return v
			}
		case <-timer.C:
			t.Fatalf("no %s within 30s", what)
		}
	}
}

func uploaded(v map[string]any) float64 {
	st, _ := v["stats"].(map[string]any)
	files, _ := st["files"].(map[string]any)
	n, _ := files["uploaded"].(float64)
	return n
}

func TestSyncWatch_SIGINT_ExitsZeroAfterPushingWrites(t *testing.T) {
	bucket := fileURL(filepath.Join(t.TempDir(), "bucket"))
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	ok(t, "init", "--dir", a, bucket)
	ok(t, "init", "--dir", b, bucket)
	cmd := exec.Command(siltRaceBin, "sync", "--watch", "--json", "--dir", a, "--poll", "100ms", "--debounce", "50ms")
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	lines := watchLines(t, cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	nextLine(t, lines, "the started line", func(v map[string]any) bool { return v["kind"] == "started" })
	write(t, a, "data/m/weights", "written while watching")
	nextLine(t, lines, "the push of the write", func(v map[string]any) bool { return v["kind"] == "push" && uploaded(v) == 1 })
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	nextLine(t, lines, "the stopped line", func(v map[string]any) bool { return v["kind"] == "stopped" })
	if err := cmd.Wait(); err != nil {
		t.Fatalf("sync --watch after SIGINT: %v, want exit 0\nstderr: %s", err, errOut.String())
	}
	if strings.Contains(errOut.String(), "interrupted") {
		t.Errorf("a clean stop reads as an interruption: %s", errOut.String())
	}
	// Nothing was left half done: a plain sync has nothing to push, and
	// the other cache gets the write.
	if v := object(t, ok(t, "sync", "--json", "--dir", a)); v["files"].(map[string]any)["uploaded"] != float64(0) {
		t.Errorf("sync after the watch: %v", v["files"])
	}
	ok(t, "sync", "--dir", b)
	if got, err := os.ReadFile(filepath.Join(b, "data/m/weights")); err != nil || string(got) != "written while watching" {
		t.Fatalf("the other cache holds %q, %v", got, err)
	}
}

func TestSyncWatch_TuningWithoutWatch_IsUsageError(t *testing.T) {
	bucket := fileURL(filepath.Join(t.TempDir(), "bucket"))
	a := filepath.Join(t.TempDir(), "a")
	ok(t, "init", "--dir", a, bucket)
	r := silt(t, "sync", "--dir", a, "--poll", "5s")
	wantCode(t, r, exitUsage, "sync", "--poll", "5s")
	if !strings.Contains(r.stderr, "--poll needs --watch") {
		t.Errorf("stderr: %s", r.stderr)
	}
}
