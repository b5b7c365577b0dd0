package wrap

import "github.com/siltsync/silt/backend"

// layer is the backend a wrapper wraps, embedded under this name so the
// wrapper is a backend.Backend because what it wraps is one (only package
// backend can make a driver into a Backend), and its own methods override
// every verb.
type layer = backend.Backend
