package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/syncer"
)

// holdCache opens dir in this process, without serving it, as a library
// host would: the silt commands the test runs are other processes.
func holdCache(t *testing.T, u, dir string) *syncer.Syncer {
	t.Helper()
	b, err := backend.Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	s, err := syncer.Open(t.Context(), syncer.Config{Backend: b, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestBusy_Status_NamesTheHolderPid(t *testing.T) {
	u, dirs := setup(t, 1)
	holdCache(t, u, dirs[0])
	r := silt(t, "status", "--dir", dirs[0], "--offline")
	wantCode(t, r, exitError, "status")
	pid := "pid " + strconv.Itoa(os.Getpid())
	if !strings.Contains(r.stderr, syncer.ErrBusy.Error()) || !strings.Contains(r.stderr, pid) || !strings.Contains(r.stderr, "--wait") {
		t.Fatalf("stderr %q, want ErrBusy naming %s and a --wait hint", r.stderr, pid)
	}
}

func TestBusy_Wait_FailsAfterTheBound(t *testing.T) {
	u, dirs := setup(t, 1)
	holdCache(t, u, dirs[0])
	start := time.Now()
	r := silt(t, "status", "--dir", dirs[0], "--offline", "--wait", "300ms")
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("--wait 300ms gave up after %v", took)
	}
	wantCode(t, r, exitError, "status", "--wait", "300ms")
	if !strings.Contains(r.stderr, "pid "+strconv.Itoa(os.Getpid())) || !strings.Contains(r.stderr, "waiting up to 300ms") {
		t.Fatalf("stderr %q, want the wait announced and the holder named", r.stderr)
	}
}

func TestBusy_Wait_SucceedsWhenTheHolderReleases(t *testing.T) {
	u, dirs := setup(t, 1)
	s := holdCache(t, u, dirs[0])
	cmd := exec.Command(siltRaceBin, "status", "--dir", dirs[0], "--offline", "--wait", "2m")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The waiter says it waits once it has found the cache held: release
	// it only then, so the wait is what is tested.
	rd := bufio.NewReader(pipe)
	line, err := rd.ReadString('\n')
	if err != nil || !strings.Contains(line, "waiting up to 2m") || !strings.Contains(line, "pid "+strconv.Itoa(os.Getpid())) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("first stderr line %q (%v), want the wait announced naming this process", line, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(rd)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("status --wait after the holder let go: %v\nstderr: %s%s", err, line, rest)
	}
	if !strings.Contains(stdout.String(), "marked dirty: 0 paths") {
		t.Errorf("status output:\n%s", stdout.String())
	}
}
