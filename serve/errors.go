package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/lock"
	"github.com/siltsync/silt/namespace"
	"github.com/siltsync/silt/syncer"
)

// Error codes of the API. They are stable: clients branch on them, never on
// the message.
const (
	CodeBadRequest     = "bad_request"      // malformed request body or parameters
	CodeTooLarge       = "too_large"        // the request body is over the limit (64 MiB)
	CodeUnauthorized   = "unauthorized"     // missing or wrong bearer token (TCP only)
	CodeNotFound       = "not_found"        // no such record, job, lease or endpoint
	CodeNoBackup       = "no_backup"        // restore of a path with no kept copy
	CodeInvalidPath    = "invalid_path"     // a path escapes the cache or names silt's own files
	CodeTooManyDeletes = "too_many_deletes" // a push would delete more than maxDelete
	CodeStalePush      = "stale_push"       // reserved, no longer sent: a commit reports moved paths as conflicts
	CodeConflict       = "conflict"         // a conditional write lost (precondition failed)
	CodeFenced         = "fenced"           // the commit's fencing token is stale
	CodeContention     = "contention"       // the manifest compare-and-swap lost too often
	CodeBusy           = "busy"             // the local state is held by another process
	CodeLockTimeout    = "lock_timeout"     // a lock acquire waited maxWaitMs in vain
	CodeLockLost       = "lock_lost"        // a lease was lost (taken over or force-released)
	CodeNotSupported   = "not_supported"    // the store lacks a needed capability
	CodeNewerFormat    = "newer_format"     // the bucket was written by a newer silt
	CodeCorruptIndex   = "corrupt_index"    // the remote index does not parse
	CodeOlderFormat    = "older_format"     // the bucket holds a format this silt no longer reads
	CodeMigrate        = "migrate_required" // the bucket is in a format this silt reads but no longer writes
	CodeCorruptObject  = "corrupt_object"   // a data object is missing or does not match its entry
	CodeRollback       = "rollback"         // the remote manifest went back to an older sequence
	CodeSeqExhausted   = "seq_exhausted"    // the manifest sequence cannot advance any more
	CodeBucketNotFound = "bucket_not_found" // the bucket of the URL does not exist
	CodeCredentials    = "credentials"      // the store refused or could not find the credentials
	CodePermission     = "permission"       // the credentials may not perform an action
	CodeUnreachable    = "unreachable"      // the store's endpoint cannot be reached or timed out
	CodeNamespaceTaken = "namespace_taken"  // the namespace is registered to another owner
	CodeCanceled       = "canceled"         // the operation was cancelled
	CodeTimeout        = "timeout"          // the operation's deadline passed
	CodeUnavailable    = "unavailable"      // the service is shutting down
	CodeInternal       = "internal"         // anything else
)

// Error is the API's error body, {"error": {"code", "message"}}, and what
// the Go client returns. It matches the library's sentinel for its code with
// errors.Is, so callers classify it as they would the library's own error.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Status is the HTTP status it came with (client side only).
	Status int `json:"-"`
}

func (e *Error) Error() string { return e.Message }

// Is makes errors.Is(err, syncer.ErrTooManyDeletes) and its siblings true
// for the matching code.
func (e *Error) Is(target error) bool {
	for _, m := range errorMap {
		if m.code == e.Code && m.err == target {
			return true
		}
	}
	return false
}

// errorMap maps library sentinels to codes and HTTP statuses. The first
// match wins, so more specific errors come first.
var errorMap = []struct {
	err    error
	code   string
	status int
}{
	{index.ErrInvalidPath, CodeInvalidPath, http.StatusBadRequest},
	{syncer.ErrTooManyDeletes, CodeTooManyDeletes, http.StatusConflict},
	{syncer.ErrFenced, CodeFenced, http.StatusConflict},
	{index.ErrCommitContention, CodeContention, http.StatusServiceUnavailable},
	{syncer.ErrBusy, CodeBusy, http.StatusServiceUnavailable},
	{syncer.ErrClosed, CodeUnavailable, http.StatusServiceUnavailable},
	{namespace.ErrTaken, CodeNamespaceTaken, http.StatusConflict},
	{syncer.ErrRollback, CodeRollback, http.StatusConflict},
	{syncer.ErrSeqExhausted, CodeSeqExhausted, http.StatusConflict},
	{index.ErrNewerFormat, CodeNewerFormat, http.StatusInternalServerError},
	{index.ErrOlderFormat, CodeOlderFormat, http.StatusInternalServerError},
	{index.ErrMigrateRequired, CodeMigrate, http.StatusConflict},
	{index.ErrCorruptIndex, CodeCorruptIndex, http.StatusInternalServerError},
	{index.ErrIndexTooLarge, CodeCorruptIndex, http.StatusInternalServerError},
	{index.ErrCorruptObject, CodeCorruptObject, http.StatusInternalServerError},
	{index.ErrMissingObject, CodeCorruptObject, http.StatusInternalServerError},
	{backend.ErrBucketNotFound, CodeBucketNotFound, http.StatusBadGateway},
	{backend.ErrCredentials, CodeCredentials, http.StatusBadGateway},
	{backend.ErrPermission, CodePermission, http.StatusBadGateway},
	{backend.ErrUnreachable, CodeUnreachable, http.StatusBadGateway},
	{backend.ErrTimeout, CodeUnreachable, http.StatusGatewayTimeout},
	{syncer.ErrNoConditionalWrite, CodeNotSupported, http.StatusNotImplemented},
	{backend.ErrNotSupported, CodeNotSupported, http.StatusNotImplemented},
	{lock.ErrTimeout, CodeLockTimeout, http.StatusConflict},
	{lock.ErrLost, CodeLockLost, http.StatusConflict},
	{backend.ErrPrecondition, CodeConflict, http.StatusConflict},
	{backend.ErrNotExist, CodeNotFound, http.StatusNotFound},
	{context.Canceled, CodeCanceled, 499},
	{context.DeadlineExceeded, CodeTimeout, http.StatusGatewayTimeout},
	{errBadRequest, CodeBadRequest, http.StatusBadRequest},
	{errTooLarge, CodeTooLarge, http.StatusRequestEntityTooLarge},
	{syncer.ErrInvalidOption, CodeBadRequest, http.StatusBadRequest},
	{syncer.ErrNoResolution, CodeBadRequest, http.StatusBadRequest},
	{syncer.ErrNoBackup, CodeNoBackup, http.StatusNotFound},
	{errNotFound, CodeNotFound, http.StatusNotFound},
	{errUnavailable, CodeUnavailable, http.StatusServiceUnavailable},
}

var (
	errBadRequest  = errors.New("bad request")
	errTooLarge    = errors.New("request too large")
	errNotFound    = errors.New("not found")
	errUnavailable = errors.New("service is shutting down")
)

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadRequest, fmt.Sprintf(format, args...))
}

// toError classifies err by sentinel (errors.Is), never by message.
func toError(err error) (*Error, int) {
	var e *Error
	if errors.As(err, &e) {
		return &Error{Code: e.Code, Message: err.Error()}, statusOf(e.Code)
	}
	for _, m := range errorMap {
		if errors.Is(err, m.err) {
			return &Error{Code: m.code, Message: err.Error()}, m.status
		}
	}
	return &Error{Code: CodeInternal, Message: err.Error()}, http.StatusInternalServerError
}

func statusOf(code string) int {
	for _, m := range errorMap {
		if m.code == code {
			return m.status
		}
	}
	return http.StatusInternalServerError
}
