package fs

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/siltsync/silt/backend"
)

func TestClassify(t *testing.T) {
	pathErr := func(op string, errno unix.Errno) error { return &os.PathError{Op: op, Path: "/r/k", Err: errno} }
	linkErr := func(errno unix.Errno) error { return &os.LinkError{Op: "rename", Old: "/r/t", New: "/r/k", Err: errno} }
	tests := []struct {
		name      string
		err       error
		notExist  bool
		retryable bool
		message   string // a substring the error must contain
	}{
		{name: "missing file", err: pathErr("open", unix.ENOENT), notExist: true},
		{name: "parent is a file on read", err: pathErr("open", unix.ENOTDIR), notExist: true},
		{name: "key is a directory on read", err: unix.EISDIR, notExist: true},
		{name: "parent is a file on rename", err: linkErr(unix.ENOTDIR), message: "file/directory conflict"},
		{name: "parent is a file on mkdir", err: pathErr("mkdir", unix.ENOTDIR), message: "file/directory conflict"},
		{name: "key is a directory on rename", err: linkErr(unix.EISDIR), message: "file/directory conflict"},
		{name: "key is a non-empty directory on rename", err: linkErr(unix.EEXIST), message: "file/directory conflict"},
		{name: "key is a non-empty directory on rename, ENOTEMPTY", err: linkErr(unix.ENOTEMPTY), message: "file/directory conflict"},
		{name: "disk full", err: pathErr("write", unix.ENOSPC), message: "disk full"},
		{name: "quota", err: pathErr("write", unix.EDQUOT), message: "disk full"},
		{name: "permission", err: pathErr("open", unix.EACCES), message: "permission denied"},
		{name: "read-only", err: linkErr(unix.EROFS), message: "read-only"},
		{name: "interrupted", err: pathErr("read", unix.EINTR), retryable: true},
		{name: "try again", err: pathErr("read", unix.EAGAIN), retryable: true},
		{name: "I/O error is not guessed transient", err: pathErr("read", unix.EIO)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := classify("put", "k", tt.err)
			var be *backend.Error
			if !errors.As(err, &be) || be.Op != "put" || be.Key != "k" {
				t.Fatalf("classify = %#v, want *backend.Error{Op: put, Key: k}", err)
			}
			if got := backend.IsNotExist(err); got != tt.notExist {
				t.Errorf("IsNotExist(%v) = %v, want %v", err, got, tt.notExist)
			}
			if got := backend.IsRetryable(err); got != tt.retryable {
				t.Errorf("IsRetryable(%v) = %v, want %v", err, got, tt.retryable)
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("error %q does not mention %q", err, tt.message)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("error %v does not wrap its cause %v", err, tt.err)
			}
		})
	}
}

func TestClassify_PassesThrough(t *testing.T) {
	if classify("get", "k", nil) != nil {
		t.Error("classify(nil) != nil")
	}
	for _, err := range []error{
		context.Canceled,
		context.DeadlineExceeded,
		&backend.KeyError{Key: "k", Reason: "bad"},
		&backend.Error{Op: "get", Key: "k", Err: backend.ErrPrecondition},
	} {
		if got := classify("get", "k", err); got != err {
			t.Errorf("classify(%v) = %v, want it unchanged", err, got)
		}
	}
}
