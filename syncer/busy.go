package syncer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultBusyWait is how long Open waits for another process to release
// the local state when Config.BusyWait is 0: long enough for a command
// that has just taken it to start serving the cache.
const DefaultBusyWait = 5 * time.Second

// ownerFile is the holder record beside the state database: who holds its
// lock, so a refused process can name them. It is advisory; the flock on
// state.db is the lock.
const ownerFile = "state.owner"

// BusyError is Open's error when another process holds the directory's
// local state. PID, Command and Since come from the holder's record; PID
// is 0 when there is none (or it names a process that has died), and the
// error then says only ErrBusy's words. errors.Is(err, ErrBusy) is true.
type BusyError struct {
	Path    string    `json:"path"`    // the state database
	PID     int       `json:"pid"`     // the holder's process id
	Command string    `json:"command"` // its command line
	Since   time.Time `json:"since"`   // when it took the state
}

func (e *BusyError) Error() string {
	if e.PID == 0 {
		return ErrBusy.Error()
	}
	return fmt.Sprintf("%s (pid %d, since %s: %s)", ErrBusy, e.PID, e.Since.Format(time.RFC3339), e.Command)
}

// Is makes errors.Is(err, ErrBusy) hold.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// ownerRecord is the JSON of ownerFile.
type ownerRecord struct {
	PID     int       `json:"pid"`
	Command string    `json:"command"`
	Since   time.Time `json:"since"`
}

// writeOwner records this process as the holder of the state in dir. It
// runs after the flock is taken, so only the holder writes; a write that
// fails costs only the name in a refusal.
func writeOwner(dir string) {
	rec := ownerRecord{PID: os.Getpid(), Command: commandLine(os.Args), Since: time.Now().UTC()}
	data, _ := json.Marshal(rec)
	tmp := filepath.Join(dir, ownerFile+".tmp")
	if os.WriteFile(tmp, data, 0o644) == nil {
		_ = os.Rename(tmp, filepath.Join(dir, ownerFile))
	}
}

// removeOwner removes the holder record if it is still this process's.
func removeOwner(dir string) {
	if rec, ok := readOwner(dir); ok && rec.PID == os.Getpid() {
		_ = os.Remove(filepath.Join(dir, ownerFile))
	}
}

// readOwner reads the holder record of dir.
func readOwner(dir string) (ownerRecord, bool) {
	data, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return ownerRecord{}, false
	}
	var rec ownerRecord
	if json.Unmarshal(data, &rec) != nil || rec.PID <= 0 {
		return ownerRecord{}, false
	}
	return rec, true
}

// busyError names the holder of the state in dir, ignoring a record left
// by a process that no longer runs (it crashed before removing it).
func busyError(dir, file string) *BusyError {
	e := &BusyError{Path: file}
	if rec, ok := readOwner(dir); ok && processAlive(rec.PID) {
		e.PID, e.Command, e.Since = rec.PID, rec.Command, rec.Since
	}
	return e
}

// commandLine joins args as a shell would show them, quoting those with
// spaces or quotes.
func commandLine(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\") {
			a = fmt.Sprintf("%q", a)
		}
		q[i] = a
	}
	if len(q) > 0 {
		q[0] = filepath.Base(q[0])
	}
	return strings.Join(q, " ")
}
