package fs

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"

	"syscall"

	"github.com/siltsync/silt/backend"
)

// classify turns an error from the operating system into the backend
// vocabulary. It is the only place this package interprets an errno, so a
// new case is one line here and one row in the table test.
func classify(op, key string, err error) error {
	if err == nil {
		return nil
	}
	var be *backend.Error
	var ke *backend.KeyError
	if errors.As(err, &be) || errors.As(err, &ke) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err // already in the vocabulary; cancellation is the caller's, not ours
	}
	permanent := func(msg string) error {
		return backend.Permanent(op, key, fmt.Errorf("%s: %w", msg, err))
	}
	switch {
	// Only a write into the tree meets these: a directory cannot hold both
	// a file "a" and a file "a/b", which an object store allows.
	case placing(err) && errors.Is(err, syscall.ENOTDIR):
		return permanent("file/directory conflict: a parent of the key is an object (a file), so the key cannot be stored below it")
	// rename(2) onto a non-empty directory says EEXIST or ENOTEMPTY; an
	// existing file would have been replaced, so it is a directory.
	case placing(err) && (errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.EEXIST) || errors.Is(err, syscall.ENOTEMPTY)):
		return permanent("file/directory conflict: the key is a directory holding other objects, so it cannot be stored as a file")
	// A missing component, or a component that is a file, both mean the
	// key names no object.
	case errors.Is(err, iofs.ErrNotExist), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR):
		return backend.NotFound(op, key, err)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return permanent("disk full (or quota exceeded)")
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return permanent("permission denied")
	case errors.Is(err, syscall.EROFS):
		return permanent("read-only file system")
	case errors.Is(err, syscall.ENAMETOOLONG):
		return permanent("a path segment is longer than the file system allows")
	// Interrupted or momentarily unavailable: the same call may succeed.
	case errors.Is(err, syscall.EINTR), errors.Is(err, syscall.EAGAIN):
		return backend.Retryable(op, key, err)
	}
	// Unknown errors (EIO among them) are not guessed to be transient.
	return backend.Permanent(op, key, err)
}

// placing reports whether err comes from putting a file into the tree
// (rename, link, mkdir) rather than from looking one up.
func placing(err error) bool {
	var le *os.LinkError
	var pe *os.PathError
	return errors.As(err, &le) || (errors.As(err, &pe) && pe.Op == "mkdir")
}

// precondition is the failure of a Cond or GetOptions.IfMatch.
func precondition(op, key, why string) error {
	return backend.PreconditionFailed(op, key, errors.New(why))
}
