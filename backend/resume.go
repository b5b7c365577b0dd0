package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
)

func (r *retrying) Get(ctx context.Context, key string, opts GetOptions) (io.ReadCloser, ObjectInfo, error) {
	var rc io.ReadCloser
	var info ObjectInfo
	err := r.do(ctx, "get", key, func(actx context.Context) (err error) {
		rc, info, err = r.Backend.Get(actx, key, opts)
		return err
	}, nil)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	b := &resumingBody{r: r, ctx: ctx, key: key, rc: rc, version: info.Version, end: info.Size}
	if rg := opts.Range; rg != nil {
		b.pos, b.end = rg.Offset, rg.End()
	}
	return b, info, nil
}

// resumingBody is a Get body that survives breaks: when a Read fails with
// a retryable error (a reset, a [Timeout] stall) or the body ends before
// its last byte, it asks for the rest (bytes pos to end) of the same
// version and carries on. Attempts are counted since the last byte
// received, so a large transfer over a flaky link completes as long as
// each attempt moves it forward.
type resumingBody struct {
	r       *retrying
	ctx     context.Context
	key     string
	rc      io.ReadCloser // nil between a break and the resumed Get
	version Version
	pos     int64 // absolute offset of the next byte to hand out
	end     int64 // absolute offset one past the last byte
	// failures since the last byte received, for the budget and the
	// error that ends it.
	failures []error
	// clock is the operation deadline of the resumed Gets since the last
	// byte received; nil while bytes flow.
	clock *opClock
	err   error // sticky: the read has failed for good
}

// errShortBody marks a body that ended before its last byte: a connection
// cut, on a store whose client does not notice the missing length.
var errShortBody = errors.New("body ended early")

func (b *resumingBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	for {
		if b.rc == nil {
			if err := b.resume(); err != nil {
				b.err = err
				return 0, err
			}
		}
		n, err := b.rc.Read(p)
		b.pos += int64(n)
		if n > 0 {
			b.failures, b.clock = nil, nil
		}
		switch {
		case err == io.EOF && b.pos < b.end:
			err = Retryable("get", b.key, fmt.Errorf("%w at byte %d of %d: %w", errShortBody, b.pos, b.end, io.ErrUnexpectedEOF))
		case err == nil || err == io.EOF:
			return n, err
		}
		if !IsRetryable(err) || b.ctx.Err() != nil {
			b.err = err
			return n, err
		}
		b.rc.Close()
		b.rc = nil
		b.failures = append(b.failures, err)
		if n > 0 {
			return n, nil // hand these out; the next Read resumes
		}
		if b.r.exhausted(b.failures) {
			b.err = &AttemptsError{Op: "get", Key: b.key, Failures: b.failures}
			return 0, b.err
		}
	}
}

// resume waits out the backoff and opens the rest of the body, pinned to
// the version first read. Its own failures count against the same budget.
func (b *resumingBody) resume() error {
	if b.clock == nil {
		b.clock = newClock(b.r.cfg.Deadline)
	}
	for {
		last := b.failures[len(b.failures)-1]
		wait := b.r.backoff(len(b.failures) - 1)
		if b.clock.expired(wait) {
			return &AttemptsError{Op: "get", Key: b.key, Failures: b.failures, Stopped: b.clock.err()}
		}
		if err := b.r.sleep(b.ctx, wait); err != nil {
			return fmt.Errorf("%w while waiting to resume; last failure: %v", err, last)
		}
		rest := Range{Offset: b.pos, Length: b.end - b.pos}
		b.clock.begin()
		rc, info, err := b.r.Backend.Get(withClock(b.ctx, b.clock), b.key, GetOptions{IfMatch: b.version, Range: &rest})
		switch {
		case err == nil && info.Version != b.version:
			// A store that ignored IfMatch: splicing would mix versions.
			rc.Close()
			err = Permanent("get", b.key, fmt.Errorf("resumed at byte %d: version %s, want %s: %w", b.pos, info.Version, b.version, ErrPrecondition))
		case err == nil:
			b.rc = rc
			return nil
		case errors.Is(err, ErrPrecondition) || errors.Is(err, ErrNotExist):
			return fmt.Errorf("get %q: object replaced while being read (resuming at byte %d of version %s): %w", b.key, b.pos, b.version, err)
		case !IsRetryable(err) || b.ctx.Err() != nil:
			return err
		}
		b.clock.ended()
		b.failures = append(b.failures, err)
		if b.r.exhausted(b.failures) {
			return &AttemptsError{Op: "get", Key: b.key, Failures: b.failures}
		}
	}
}

func (b *resumingBody) Close() error {
	if b.rc == nil {
		return nil
	}
	return b.rc.Close()
}
