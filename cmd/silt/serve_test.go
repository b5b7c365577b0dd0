package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/siltsync/silt/backend/fs"
	"github.com/siltsync/silt/serve"
	"github.com/siltsync/silt/syncer"
)

// startServe runs `silt serve` on dir and returns once it is serving, and
// a function that stops it with SIGTERM and returns its exit error.
func startServe(t *testing.T, dir string) func() error {
	t.Helper()
	cmd := exec.Command(siltRaceBin, "serve", "--dir", dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "serving ") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("silt serve did not start: %q, %v\nstderr: %s", line, err, stderr.String())
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		return cmd.Wait()
	}
	t.Cleanup(func() { stop() })
	return stop
}

func TestServe_CommandsGoThroughTheService(t *testing.T) {
	_, dirs := setup(t, 2)
	dir := dirs[0]
	stop := startServe(t, dir)
	write(t, dir, "data/t/m1/a", "one")
	write(t, dir, "data/t/m2/b", "two")

	push := object(t, ok(t, "push", "--dir", dir, "--json"))
	if push["op"] != "push" || push["files"].(map[string]any)["uploaded"] != 2.0 {
		t.Fatalf("push through the service: %v", push)
	}
	status := object(t, ok(t, "status", "--dir", dir, "--json"))
	wantKeys(t, "status", status, "status", "push")
	ok(t, "pull", "--dir", dir, "--scope", "data/t/m1")
	ok(t, "sync", "--dir", dir)
	ok(t, "hydrate", "--dir", dir, "data/t/m1/a")
	wantCode(t, silt(t, "hydrate", "--dir", dir, "data/t/none"), exitError, "hydrate", "data/t/none")

	// Typed errors survive the trip: a guard still exits 3.
	os.Remove(dir + "/data/t/m1/a")
	os.Remove(dir + "/data/t/m2/b")
	r := silt(t, "push", "--dir", dir, "--max-delete", "1")
	wantCode(t, r, exitRefused, "push", "--max-delete", "1")
	if !strings.Contains(r.stderr, "too many deletions") {
		t.Errorf("push --max-delete 1: stderr %q", r.stderr)
	}

	// A second service on the same directory is refused at once.
	wantCode(t, silt(t, "serve", "--dir", dir), exitRefused, "serve", "--dir", dir)

	// The peer sees what went through the service.
	ok(t, "pull", "--dir", dirs[1])
	if got := read(t, dirs[1], "data/t/m2/b"); got != "two" {
		t.Fatalf("peer read %q", got)
	}

	if err := stop(); err != nil {
		t.Fatalf("silt serve after SIGTERM: %v", err)
	}
	p, _ := serve.SocketPath(dir)
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket left after shutdown: %v", err)
	}
	ok(t, "status", "--dir", dir, "--offline") // opens the directory itself again
}

func TestServe_WithoutServiceASecondProcessGetsBusy(t *testing.T) {
	u, dirs := setup(t, 1)
	b, err := fs.New(strings.TrimPrefix(u, "file://"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s, err := syncer.Open(t.Context(), syncer.Config{Backend: b, Dir: dirs[0]})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := silt(t, "status", "--dir", dirs[0], "--offline")
	wantCode(t, r, exitError, "status")
	if !strings.Contains(r.stderr, syncer.ErrBusy.Error()) {
		t.Fatalf("stderr %q, want %q", r.stderr, syncer.ErrBusy)
	}
}

func TestServe_ListenNeedsLoopbackAndToken(t *testing.T) {
	_, dirs := setup(t, 1)
	for _, args := range [][]string{
		{"serve", "--dir", dirs[0], "--listen", "127.0.0.1:0"},
		{"serve", "--dir", dirs[0], "--listen", "0.0.0.0:7420", "--token-file", "/dev/null"},
		{"serve", "--dir", dirs[0], "--token-file", "/dev/null"},
	} {
		wantCode(t, silt(t, args...), exitUsage, args...)
	}
}

// While a service owns the directory, every command on it goes through
// the service, resolve included: none fails with ErrBusy (the service
// holds the local state, so a command opening it itself would).
func TestServe_ResolveGoesThroughTheService(t *testing.T) {
	u, dirs := setup(t, 2)
	a, b := dirs[0], dirs[1]
	startServe(t, a)
	conflict := func(mine, theirs string) {
		t.Helper()
		ok(t, "pull", "--dir", b)
		write(t, b, "data/x", theirs)
		ok(t, "push", "--dir", b)
		write(t, a, "data/x", mine)
		wantCode(t, silt(t, "push", "--dir", a), 3, "push (conflicting, through the service)")
		if s := ok(t, "status", "--dir", a, "--offline").stdout; !strings.Contains(s, "conflicts: 1") {
			t.Fatalf("status through the service does not list the conflict:\n%s", s)
		}
	}
	write(t, a, "data/x", "base")
	ok(t, "push", "--dir", a)

	conflict("a1", "b1")
	r := ok(t, "resolve", "--dir", a, "--take-remote", "data/x")
	if !strings.Contains(r.stdout, "resolved 1 path (took remote)") {
		t.Errorf("resolve output:\n%s", r.stdout)
	}
	if got := read(t, a, "data/x"); got != "b1" {
		t.Fatalf("data/x = %q after --take-remote through the service, want b's copy", got)
	}

	conflict("a2", "b2")
	ok(t, "resolve", "--dir", a, "--keep-local", "--all")
	if got := ok(t, "cat", u, "data/x").stdout; got != "a2" {
		t.Fatalf("remote data/x = %q after --keep-local through the service, want a's copy", got)
	}
	ok(t, "pull", "--dir", a, "--scope", "data")
	ok(t, "hydrate", "--dir", a, "data/x")
	ok(t, "sync", "--dir", a)
	for _, args := range [][]string{{"status", "--dir", a}, {"resolve", "--dir", a, "--all", "--take-remote"}} {
		if r := ok(t, args...); strings.Contains(r.stderr, syncer.ErrBusy.Error()) {
			t.Errorf("%v: %s", args, r.stderr)
		}
	}
}
