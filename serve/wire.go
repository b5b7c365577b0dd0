package serve

import (
	"encoding/json"
	"time"

	"github.com/siltsync/silt/lock"
	"github.com/siltsync/silt/syncer"
	"github.com/siltsync/silt/watch"
)

// APIVersion is the version of the JSON API; every path starts with
// "/v{APIVersion}/". A change that breaks a client gets a new version.
const APIVersion = 1

// AsyncOption is embedded in every operation's request: with Async set the call
// returns a Job at once (202) and the operation runs in the background.
type AsyncOption struct {
	Async bool `json:"async,omitempty"`
}

// CallOptions are what one operation request asks of the service, beside
// the engine's own options.
type CallOptions struct {
	// Stream makes the reply (200, application/x-ndjson) one JSON object
	// per line as the operation runs: {"change": Change} per file,
	// {"progress": Progress} per transfer, then {"result": ...} or
	// {"error": {code, message}}. Without it the reply is the result alone.
	Stream bool `json:"stream,omitempty"`
	// ProgressChecks also streams a progress event per file compared
	// before transfers start (syncer.Config.ProgressChecks).
	ProgressChecks bool `json:"progressChecks,omitempty"`
	// MaxChanges bounds the result's changes (syncer.Observer.MaxChanges):
	// 0 is the service's bound, negative keeps none.
	MaxChanges int `json:"maxChanges,omitempty"`
}

// observer is the syncer.Observer a request's CallOptions ask for, sending
// its events to emit (nil: no stream).
func (o CallOptions) observer(emit func(event)) syncer.Observer {
	obs := syncer.Observer{MaxChanges: o.MaxChanges}
	if emit != nil {
		obs.OnChange = func(c syncer.Change) { emit(event{Change: &c}) }
		obs.Progress = func(p syncer.Progress) { emit(event{Progress: &p}) }
		obs.ProgressChecks = o.ProgressChecks
	}
	return obs
}

// event is one line of a streamed reply.
type event struct {
	Change   *syncer.Change   `json:"change,omitempty"`
	Progress *syncer.Progress `json:"progress,omitempty"`
	Watch    *watch.Event     `json:"watch,omitempty"`
	Result   json.RawMessage  `json:"result,omitempty"`
	Error    *Error           `json:"error,omitempty"`
}

// Stats is the Stats of an operation as the API carries it: every field of
// syncer.Stats, the exact request counts included (which syncer.Stats
// leaves out of its JSON).
type Stats struct {
	syncer.Stats
	Counts syncer.RequestCounts `json:"counts"`
}

func wireStats(st syncer.Stats) Stats { return Stats{Stats: st, Counts: st.Counts} }

// Engine returns the library's Stats.
func (s Stats) Engine() syncer.Stats {
	st := s.Stats
	st.Counts = s.Counts
	return st
}

// PullRequest is the body of POST /v1/pull: the engine's PullOptions.
type PullRequest struct {
	AsyncOption
	CallOptions
	syncer.PullOptions
}

// PushRequest is the body of POST /v1/push and POST /v1/prepare: the
// engine's PushOptions (Paths pushes only those paths, as if each were
// marked; All walks the whole cache, as `silt push` does).
type PushRequest struct {
	AsyncOption
	CallOptions
	syncer.PushOptions
}

// PrepareResponse is the result of POST /v1/prepare.
type PrepareResponse struct {
	// Manifest is the prepared push, opaque; pass it to /v1/commit.
	Manifest json.RawMessage `json:"manifest"`
	// Files counts the files it would commit (written plus removed).
	Files int   `json:"files"`
	Stats Stats `json:"stats"`
}

// CommitRequest is the body of POST /v1/commit.
type CommitRequest struct {
	AsyncOption
	CallOptions
	Manifest json.RawMessage `json:"manifest"`
	Fence    *syncer.Fence   `json:"fence,omitempty"`
}

// DirtyRequest is the body of POST /v1/dirty: mark paths, or everything.
type DirtyRequest struct {
	Paths []string `json:"paths,omitempty"`
	All   bool     `json:"all,omitempty"`
}

// StatusRequest is the body of POST /v1/status.
type StatusRequest struct {
	AsyncOption
	// Remote also asks the store whether the index moved (one request).
	Remote bool `json:"remote,omitempty"`
}

// MigrateRequest is the body of POST /v1/migrate.
type MigrateRequest struct {
	AsyncOption
	// DryRun reports what the migration would write, writing nothing.
	DryRun bool `json:"dry_run,omitempty"`
}

// HydrateRequest is the body of POST /v1/hydrate.
type HydrateRequest struct {
	AsyncOption
	CallOptions
	Paths []string `json:"paths"`
}

// HydrateResponse is the result of POST /v1/hydrate: which paths had a
// committed entry (and are now present), in request order.
type HydrateResponse struct {
	Found []bool `json:"found"`
	Stats Stats  `json:"stats"`
}

// ResolveRequest is the body of POST /v1/resolve: the engine's
// ResolveOptions, keep "local" or "remote".
type ResolveRequest struct {
	AsyncOption
	CallOptions
	syncer.ResolveOptions
}

// RestoreRequest is the body of POST /v1/restore: the paths whose newest
// kept copy goes back in place, in order.
type RestoreRequest struct {
	AsyncOption
	CallOptions
	Paths []string `json:"paths"`
}

// LockRequest is the body of POST /v1/lock/acquire and /v1/lock/inspect
// and /v1/lock/force-release.
type LockRequest struct {
	AsyncOption
	Key       string `json:"key"`
	TTLMs     int64  `json:"ttlMs,omitempty"`
	MaxWaitMs int64  `json:"maxWaitMs,omitempty"`
	Holder    string `json:"holder,omitempty"`
	Nonce     string `json:"nonce,omitempty"` // force-release only
	// PID and Hostname name the client's process in the lock object
	// (acquire only); zero values mean the service's.
	PID      int    `json:"pid,omitempty"`
	Hostname string `json:"hostname,omitempty"`
}

// LeaseRequest is the body of POST /v1/lock/release and /v1/lock/heartbeat.
type LeaseRequest struct {
	Lease string `json:"lease"`
}

// Lease is a lock held by the service for a client. The service keeps the
// lock alive; the client proves it is alive with /v1/lock/heartbeat at least
// every TTLMs, or the service releases the lock for it.
type Lease struct {
	ID    string `json:"lease"`
	Key   string `json:"key"`
	Token uint64 `json:"token"`
	Nonce string `json:"nonce"`
	TTLMs int64  `json:"ttlMs"`
	Held  bool   `json:"held"`
}

// LockInfo is the result of POST /v1/lock/inspect.
type LockInfo struct {
	Held       bool      `json:"held"`
	Holder     string    `json:"holder,omitempty"`
	Hostname   string    `json:"hostname,omitempty"`
	PID        int       `json:"pid,omitempty"`
	AcquiredAt time.Time `json:"acquiredAt,omitzero"`
	// HeartbeatAt is the holder's last heartbeat (lock.Info.HeartbeatAt).
	HeartbeatAt time.Time `json:"heartbeatAt,omitzero"`
	TTLMs       int64     `json:"ttlMs,omitempty"`
	Nonce       string    `json:"nonce,omitempty"`
	Token       uint64    `json:"token,omitempty"`
}

func lockInfo(i *lock.Info) LockInfo {
	if i == nil {
		return LockInfo{}
	}
	return LockInfo{Held: true, Holder: i.Holder, Hostname: i.Hostname, PID: i.PID, AcquiredAt: i.AcquiredAt, HeartbeatAt: i.HeartbeatAt,
		TTLMs: i.TTL.Milliseconds(), Nonce: i.Nonce, Token: i.Token}
}

// ControlRequest is the body of the /v1/control/* endpoints. Data is
// base64 in JSON.
type ControlRequest struct {
	Key    string `json:"key,omitempty"`
	Prefix string `json:"prefix,omitempty"`
	Data   []byte `json:"data,omitempty"`
}

// ControlResponse is the result of the /v1/control/* endpoints; only the
// fields of the call are set.
type ControlResponse struct {
	Data    []byte   `json:"data,omitempty"`
	Created *bool    `json:"created,omitempty"`
	Keys    []string `json:"keys,omitempty"`
}

// Info is the result of GET /v1/info.
type Info struct {
	API       int    `json:"api"`
	Dir       string `json:"dir"`
	Root      string `json:"root"`
	Namespace string `json:"namespace,omitempty"`
	PID       int    `json:"pid"`
	// Owner says what owns the cache: "silt serve", or the command line
	// of a silt process that serves it while it runs ("silt push").
	Owner string `json:"owner,omitempty"`
	// Mode is ModeBucket for a bucket service (no cache directory).
	Mode string `json:"mode,omitempty"`
}

// Job states.
const (
	JobRunning   = "running"
	JobSucceeded = "succeeded"
	JobFailed    = "failed"
	JobCanceled  = "canceled"
)

// JobProgress counts the files (and their bytes) an operation transferred
// so far, of the files it plans to transfer.
type JobProgress struct {
	Files      int   `json:"files"`
	TotalFiles int   `json:"totalFiles"`
	Bytes      int64 `json:"bytes"`
}

// Job is an operation started with "async": true, as GET /v1/jobs/{id}
// reports it. Result holds the operation's response once it succeeded,
// Error its error once it failed.
type Job struct {
	ID         string          `json:"id"`
	Op         string          `json:"op"`
	State      string          `json:"state"`
	StartedAt  time.Time       `json:"startedAt"`
	FinishedAt time.Time       `json:"finishedAt,omitzero"`
	Progress   JobProgress     `json:"progress"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *Error          `json:"error,omitempty"`
}

// errorBody is the JSON of every failed response.
type errorBody struct {
	Error *Error `json:"error"`
}
