package syncer_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

func openBusyCache(t *testing.T, dir string, wait time.Duration) (*syncer.Syncer, error) {
	t.Helper()
	b, err := backend.Open(t.Context(), "file://"+filepath.Join(filepath.Dir(dir), "bucket"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return syncer.Open(t.Context(), syncer.Config{Backend: b, Dir: dir, BusyWait: wait})
}

func TestOpen_Busy_NamesTheHolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	s, err := openBusyCache(t, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(dir, index.InternalDir, "state.owner")
	if _, err := os.Stat(record); err != nil {
		t.Fatalf("no holder record while open: %v", err)
	}
	start := time.Now()
	_, err = openBusyCache(t, dir, -1)
	var be *syncer.BusyError
	if !errors.As(err, &be) || !errors.Is(err, syncer.ErrBusy) {
		t.Fatalf("second Open: %v, want a *BusyError that Is ErrBusy", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("BusyWait -1 waited %v, want one try", time.Since(start))
	}
	if be.PID != os.Getpid() || be.Command == "" || be.Since.IsZero() || time.Since(be.Since) > time.Minute {
		t.Fatalf("BusyError %+v, want this process (pid %d) named", be, os.Getpid())
	}
	if !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("error %q does not name the pid", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(record); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("holder record left after Close: %v", err)
	}
	s, err = openBusyCache(t, dir, -1)
	if err != nil {
		t.Fatalf("Open after the holder closed: %v", err)
	}
	s.Close()
}

func TestOpen_Busy_StaleRecordOfDeadPidIgnored(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	s, err := openBusyCache(t, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no true(1):", err)
	}
	rec, _ := json.Marshal(map[string]any{"pid": dead.Process.Pid, "command": "silt ghost", "since": time.Now()})
	if err := os.WriteFile(filepath.Join(dir, index.InternalDir, "state.owner"), rec, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = openBusyCache(t, dir, -1)
	var be *syncer.BusyError
	if !errors.As(err, &be) {
		t.Fatalf("second Open: %v, want *BusyError", err)
	}
	if be.PID != 0 || strings.Contains(err.Error(), "ghost") {
		t.Fatalf("a dead pid's record was believed: %+v (%v)", be, err)
	}
	if !strings.Contains(err.Error(), syncer.ErrBusy.Error()) {
		t.Errorf("error %q lacks ErrBusy's words", err)
	}
}
