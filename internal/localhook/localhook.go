// Package localhook lets a test act at chosen points of the syncer's
// installs (a download renamed over a local path), so a local writer can be
// interleaved with them deterministically: no sleeps, no timing. It costs
// one atomic load per point when no hook is set.
package localhook

import (
	"sync"
	"sync/atomic"
)

// Stage is a point of one install.
type Stage int

const (
	// BeforeCheck: the download is verified; the file at the path has not
	// been looked at yet.
	BeforeCheck Stage = iota
	// BeforeRename: the file at the path passed the check against what the
	// operation planned on; the rename over it comes next.
	BeforeRename
	// AfterRename: the download is in place; the final check of the file it
	// replaced comes next.
	AfterRename
)

var (
	active atomic.Int32
	hooks  sync.Map // cache root -> func(path string, s Stage)
)

// Set calls fn at every point of every install into the cache rooted at
// root (syncer.Syncer.Root), with the data path installed, until the
// returned function is called. fn runs on the installing goroutine, which
// waits for it.
func Set(root string, fn func(path string, s Stage)) (unset func()) {
	hooks.Store(root, fn)
	active.Add(1)
	return func() {
		if _, ok := hooks.LoadAndDelete(root); ok {
			active.Add(-1)
		}
	}
}

// Fire runs the hook set for root, if any.
func Fire(root, path string, s Stage) {
	if active.Load() == 0 {
		return
	}
	if fn, ok := hooks.Load(root); ok {
		fn.(func(string, Stage))(path, s)
	}
}

var (
	faulting atomic.Int32
	faults   sync.Map // cache root -> func(path string) error
)

// SetWriteFault makes the writes of downloads into the cache rooted at
// root fail with the error fn returns for the data path (nil: the write
// goes ahead), until the returned function is called: a full disk
// (syscall.ENOSPC) or a quota, at a point the test chooses.
func SetWriteFault(root string, fn func(path string) error) (unset func()) {
	faults.Store(root, fn)
	faulting.Add(1)
	return func() {
		if _, ok := faults.LoadAndDelete(root); ok {
			faulting.Add(-1)
		}
	}
}

// WriteFault is the error the fault set for root gives the write of path's
// download, or nil.
func WriteFault(root, path string) error {
	if faulting.Load() == 0 {
		return nil
	}
	if fn, ok := faults.Load(root); ok {
		return fn.(func(string) error)(path)
	}
	return nil
}
