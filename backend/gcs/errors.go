package gcs

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

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
	permanent := func(e error) error { return backend.Permanent(c.op, c.key, e) }
	retryable := func(e error) error { return backend.Retryable(c.op, c.key, e) }
	precondition := func() error { return permanent(fmt.Errorf("%w (%w)", backend.ErrPrecondition, err)) }

	var ge *googleapi.Error
	isGE := errors.As(err, &ge)
	// GCS answers a read in a missing bucket with 404 like a missing
	// object, and the client calls both ErrObjectNotExist; only the
	// message tells them apart. A listing never misses in a bucket that
	// exists. Either way it must not read as "no object" (an empty index).
	if errors.Is(err, storage.ErrBucketNotExist) ||
		(isGE && ge.Code == http.StatusNotFound && (c.op == "list" || strings.Contains(strings.ToLower(ge.Message+ge.Body), "bucket does not exist"))) {
		return permanent(fmt.Errorf("%w: bucket %q does not exist (silt never creates buckets; check the URL): %w", backend.ErrBucketNotFound, c.bucket, err))
	}
	if errors.Is(err, storage.ErrObjectNotExist) {
		// Under a generation condition a missing object is a lost race,
		// not a plain miss: the version the caller holds is gone.
		if c.conditional {
			return precondition()
		}
		return permanent(fmt.Errorf("%w (%w)", backend.ErrNotExist, err))
	}
	if isGE {
		switch {
		case ge.Code == http.StatusPreconditionFailed:
			return precondition()
		case ge.Code == http.StatusRequestedRangeNotSatisfiable:
			// A ranged read whose offset is at or past the object's end.
			return permanent(fmt.Errorf("%w (%w)", backend.ErrInvalidRange, err))
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
			return permanent(fmt.Errorf("%w: the credentials may not %s on gs://%s/%s: %w", backend.ErrPermission, permission[c.op], c.bucket, c.key, err))
		case ge.Code == http.StatusUnauthorized:
			return permanent(fmt.Errorf("%w: GCS did not accept the credentials for bucket %q (expired or revoked? run: gcloud auth application-default login, or check GOOGLE_APPLICATION_CREDENTIALS): %w", backend.ErrCredentials, c.bucket, err))
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
