package wrap

import "github.com/siltsync/silt/backend"

// ProductionConfig configures the wrappers [Production] applies.
type ProductionConfig struct {
	Retry RetryConfig // see [Retry]
}

// Production wraps a real store in the wrappers every production backend
// gets, in their one correct order: Retry directly over the store, so
// resends happen below anything that counts or reasons about requests.
// Tests pass their Faults or Latency wrapper as store, which keeps injected
// failures below Retry just as a real network's are.
func Production(store backend.Backend, cfg ProductionConfig) backend.Backend {
	return Retry(store, cfg.Retry)
}
