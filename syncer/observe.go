package syncer

import (
	"context"
	"errors"
	"fmt"
)

// ErrInvalidOption is returned when an operation's options do not parse
// (a bad PullOptions.Lazy glob, an unknown Resolution name): nothing was
// changed.
var ErrInvalidOption = errors.New("invalid option")

// Observer receives what one call does as it happens, beside Config's
// OnChange and Progress: a caller that shares a Syncer (a service serving
// several clients) sees only its own operation's changes and progress.
// Attach it to the call's context with WithObserver.
type Observer struct {
	// OnChange is called once per change of this call, as Config.OnChange.
	OnChange func(Change)
	// Progress is called after each transfer of this call (and, with
	// ProgressChecks, each file compared), as Config.Progress.
	Progress       func(Progress)
	ProgressChecks bool
	// MaxChanges, when not zero, bounds this call's Stats.Changes instead
	// of Config.MaxChanges (negative keeps none).
	MaxChanges int
}

type observerKey struct{}

// WithObserver returns ctx carrying o for the operation called with it.
func WithObserver(ctx context.Context, o Observer) context.Context {
	return context.WithValue(ctx, observerKey{}, o)
}

// ObserverOf returns the Observer ctx carries (the zero one without).
func ObserverOf(ctx context.Context) Observer {
	o, _ := ctx.Value(observerKey{}).(Observer)
	return o
}

// String names a Resolution as the command line and the service's API do.
func (r Resolution) String() string {
	switch r {
	case KeepLocal:
		return "local"
	case TakeRemote:
		return "remote"
	}
	return fmt.Sprintf("Resolution(%d)", int(r))
}

// MarshalText writes "local" or "remote"; the zero Resolution is "".
func (r Resolution) MarshalText() ([]byte, error) {
	if r == 0 {
		return []byte{}, nil
	}
	if r != KeepLocal && r != TakeRemote {
		return nil, fmt.Errorf("%w: %v", ErrInvalidOption, r)
	}
	return []byte(r.String()), nil
}

// UnmarshalText reads "local" or "remote" ("" is the zero Resolution,
// which Resolve refuses with ErrNoResolution).
func (r *Resolution) UnmarshalText(b []byte) error {
	switch string(b) {
	case "":
		*r = 0
	case "local":
		*r = KeepLocal
	case "remote":
		*r = TakeRemote
	default:
		return fmt.Errorf("%w: resolution %q: want \"local\" or \"remote\"", ErrInvalidOption, b)
	}
	return nil
}
