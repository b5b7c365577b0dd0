package gcs

import (
	"errors"
	"fmt"
	"net/http"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"

	"github.com/siltsync/silt/backend"
)

// call names the request an error came from.
type call struct {
	op          string // "get", "put", "delete", "stat", "list"
	bucket      string
	key         string // key, or prefix for list
	conditional bool   // sent with a generation precondition
}

// permission is the IAM permission each operation needs, named in 403
// errors because "access denied" alone sends people to the wrong place.
var permission = map[string]string{
	"get":    "storage.objects.get",
	"stat":   "storage.objects.get",
	"put":    "storage.objects.create (and storage.objects.delete to overwrite)",
	"delete": "storage.objects.delete",
	"list":   "storage.objects.list",
}

// classify is the one place that turns a storage client error into silt's
// vocabulary. Each provider quirk is one commented case with a test row.
func classify(c call, err error) error {
	if err == nil {
		return nil
	}
	permanent := func(e error) error { return &backend.Error{Op: c.op, Key: c.key, Err: e} }
	retryable := func(e error) error { return &backend.Error{Op: c.op, Key: c.key, Retryable: true, Err: e} }
	precondition := func() error { return permanent(fmt.Errorf("%w (%w)", backend.ErrPrecondition, err)) }

	if errors.Is(err, storage.ErrBucketNotExist) {
		return permanent(fmt.Errorf("bucket %q does not exist: %w", c.bucket, err))
	}
	if errors.Is(err, storage.ErrObjectNotExist) {
		// Under a generation condition a missing object is a lost race,
		// not a plain miss: the version the caller holds is gone.
		if c.conditional {
			return precondition()
		}
		return permanent(fmt.Errorf("%w (%w)", backend.ErrNotExist, err))
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		switch {
		case ge.Code == http.StatusPreconditionFailed:
			return precondition()
		case ge.Code == http.StatusNotModified:
			// A read under ifGenerationNotMatch naming the current
			// generation: the caller's copy is current.
			return permanent(fmt.Errorf("%w (%w)", backend.ErrNotModified, err))
		case ge.Code == http.StatusNotFound && c.conditional:
			return precondition()
		case ge.Code == http.StatusNotFound:
			return permanent(fmt.Errorf("%w (%w)", backend.ErrNotExist, err))
		case ge.Code == http.StatusTooManyRequests, ge.Code == http.StatusRequestTimeout, ge.Code >= 500:
			return retryable(err)
		case ge.Code == http.StatusForbidden && rateLimited(ge):
			// The JSON API still reports some quota limits as 403
			// rateLimitExceeded rather than 429.
			return retryable(err)
		case ge.Code == http.StatusForbidden:
			return permanent(fmt.Errorf("access to bucket %q denied; the credentials likely lack %s: %w", c.bucket, permission[c.op], err))
		case ge.Code == http.StatusUnauthorized:
			return permanent(fmt.Errorf("not authenticated to bucket %q (check credentials): %w", c.bucket, err))
		}
		return permanent(err)
	}
	// Anything else (a failed send, a malformed response, a client-side
	// check) is left for backend.Portable, which classifies transport
	// failures once for every store.
	return err
}

func rateLimited(ge *googleapi.Error) bool {
	for _, e := range ge.Errors {
		if e.Reason == "rateLimitExceeded" || e.Reason == "userRateLimitExceeded" {
			return true
		}
	}
	return false
}
