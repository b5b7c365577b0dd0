package fs

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A Put stages its body in a temp file under .silt-fs/tmp and holds an
// flock on it from its creation until its name is gone (renamed into place
// or removed). The kernel drops the lock when its holder dies, so a temp
// file whose lock can be taken belongs to no live writer: a killed upload's
// temp file is removed by the next sweep, not after a timeout.

// tempPrefix begins the name of every temp file a Put stages.
const tempPrefix = "put-"

// sweepEvery bounds how often Puts sweep the temp directory: a sweep costs
// one directory read, so a busy writer pays it once per interval, not per
// Put. New always sweeps.
var sweepEvery = time.Minute

// createTemp makes a uniquely named file in the temp directory and locks
// it. Unlike os.CreateTemp it asks for mode 0666, so objects get the
// umask's permissions like any file a user creates, not 0600.
func (b *Backend) createTemp() (*os.File, error) {
	for {
		name := filepath.Join(b.tmpDir, fmt.Sprintf("%s%d-%016x", tempPrefix, os.Getpid(), rand.Uint64()))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, iofs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		locked, err := tryLockFile(f)
		if err == nil && !locked {
			f.Close() // a sweep saw it unlocked and is removing it
			continue
		}
		if err != nil {
			return f, nil // no flock on this file system: sweeps skip what they cannot lock
		}
		// A sweep may have removed the name between the create and the
		// lock; the file would then be published from a name that is gone.
		if sameFile(f, name) {
			return f, nil
		}
		f.Close()
	}
}

// maybeSweepTemps sweeps the temp directory if the last sweep is older
// than sweepEvery.
func (b *Backend) maybeSweepTemps() {
	last := b.swept.Load()
	if time.Since(time.Unix(0, last)) < sweepEvery || !b.swept.CompareAndSwap(last, time.Now().UnixNano()) {
		return
	}
	b.sweepTemps()
}

// sweepTemps removes the temp files of writers that are gone: those whose
// lock it can take. It is best effort: a failure only leaves files that
// List never shows anyway.
func (b *Backend) sweepTemps() {
	b.swept.Store(time.Now().UnixNano())
	des, err := os.ReadDir(b.tmpDir)
	if err != nil {
		return
	}
	for _, de := range des {
		if strings.HasPrefix(de.Name(), tempPrefix) && de.Type().IsRegular() {
			removeIfAbandoned(filepath.Join(b.tmpDir, de.Name()))
		}
	}
}

// removeIfAbandoned removes the temp file name if no writer holds its
// lock, and only if name still is the file it locked.
func removeIfAbandoned(name string) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return // gone meanwhile, or not ours to remove
	}
	defer f.Close()
	if locked, err := tryLockFile(f); err != nil || !locked {
		return // a live writer holds it (or the file system has no locks)
	}
	if sameFile(f, name) {
		os.Remove(name)
	}
}

// sameFile reports whether name is, right now, the file open as f.
func sameFile(f *os.File, name string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(name)
	return err == nil && os.SameFile(a, b)
}
