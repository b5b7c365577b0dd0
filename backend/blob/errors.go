package blob

import (
	"fmt"

	"gocloud.dev/gcerrors"

	"github.com/siltsync/silt/backend"
)

// call names the request an error came from.
type call struct {
	op          string // "get", "put", "delete", "stat", "list"
	key         string // key, or prefix for list
	conditional bool   // sent with IfNotExist or checked against IfMatch
}

// classify is the one place that turns a blob error into silt's vocabulary,
// by gocloud error code, never by message.
func classify(c call, err error) error {
	if err == nil {
		return nil
	}
	permanent := func(e error) error { return backend.Permanent(c.op, c.key, e) }
	retryable := func(e error) error { return backend.Retryable(c.op, c.key, e) }
	switch gcerrors.Code(err) {
	case gcerrors.NotFound:
		if c.conditional {
			return permanent(fmt.Errorf("%w (%w)", backend.ErrPrecondition, err))
		}
		return permanent(fmt.Errorf("%w (%w)", backend.ErrNotExist, err))
	case gcerrors.FailedPrecondition:
		return permanent(fmt.Errorf("%w (%w)", backend.ErrPrecondition, err))
	case gcerrors.ResourceExhausted, gcerrors.DeadlineExceeded:
		// Throttling, or a service-side timeout (the caller's own deadline
		// was handled above).
		return retryable(err)
	}
	// Anything else, transport failures included, is for backend.Portable,
	// which classifies those once for every store.
	return err
}
