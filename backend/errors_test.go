package backend_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/siltsync/silt/backend"
)

func TestIsRetryable(t *testing.T) {
	transport := errors.New("connection reset")
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain error", transport, false},
		{"Retryable", backend.Retryable("get", "k", transport), true},
		{"Retryable, wrapped again", fmt.Errorf("pull: %w", backend.Retryable("get", "k", transport)), true},
		{"Permanent", backend.Permanent("get", "k", transport), false},
		{"Retryable precondition", backend.Retryable("put", "k", backend.ErrPrecondition), false},
		{"Retryable not-exist", backend.Retryable("get", "k", backend.ErrNotExist), false},
		// A transport error after cancellation often wraps ctx.Err(); the
		// doc promises cancelled contexts are never retryable.
		{"Retryable cancelled", backend.Retryable("get", "k", fmt.Errorf("send: %w", context.Canceled)), false},
		{"context.Canceled", context.Canceled, false},
	} {
		if got := backend.IsRetryable(tc.err); got != tc.want {
			t.Errorf("IsRetryable(%s: %v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestError_MatchesItsCauseAndNamesTheRequest(t *testing.T) {
	err := fmt.Errorf("commit: %w", &backend.Error{Op: "put", Key: "a/b", Retryable: true, Err: backend.ErrPrecondition})
	if !backend.IsPrecondition(err) || backend.IsNotExist(err) {
		t.Errorf("IsPrecondition/IsNotExist(%v) = %v/%v", err, backend.IsPrecondition(err), backend.IsNotExist(err))
	}
	var be *backend.Error
	if !errors.As(err, &be) || be.Op != "put" || be.Key != "a/b" {
		t.Errorf("errors.As(%v) = %+v", err, be)
	}
	if got, want := be.Error(), `put "a/b" (retryable): precondition failed`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := backend.Permanent("get", "k", backend.ErrNotExist).Error(), `get "k": object does not exist`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
