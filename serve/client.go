package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// Client calls a service's API. Its methods are safe for concurrent use;
// errors from the service are *Error values, which match the library's
// sentinels with errors.Is.
type Client struct {
	hc    *http.Client
	base  string
	token string
	info  Info // what Dial found
}

// NewUnixClient returns a client for the service listening on the Unix
// socket at path.
func NewUnixClient(path string) *Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return dialUnix(ctx, path)
	}}
	return &Client{hc: &http.Client{Transport: tr}, base: "http://silt"}
}

// NewTCPClient returns a client for a service listening on addr
// (127.0.0.1:PORT), sending token as the bearer token.
func NewTCPClient(addr, token string) *Client {
	return &Client{hc: &http.Client{Transport: &http.Transport{}}, base: "http://" + addr, token: token}
}

// Close releases idle connections.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// call sends one request and decodes the reply into out.
func (c *Client) call(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("serve: read reply of %s: %w", path, err)
	}
	if resp.StatusCode >= 300 {
		return replyError(path, resp.StatusCode, data)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("serve: decode reply of %s: %w", path, err)
	}
	return nil
}

// replyError is the *Error of a failed reply.
func replyError(path string, status int, data []byte) error {
	var eb errorBody
	if err := json.Unmarshal(data, &eb); err != nil || eb.Error == nil {
		return &Error{Code: CodeInternal, Status: status,
			Message: fmt.Sprintf("serve: %s: HTTP %d: %s", path, status, strings.TrimSpace(string(data)))}
	}
	eb.Error.Status = status
	return eb.Error
}

// openStream POSTs body to path and returns the streamed reply, or the
// service's error when it refused to start one.
func (c *Client) openStream(ctx context.Context, path string, body any) (*http.Response, error) {
	resp, err := c.send(ctx, http.MethodPost, path, body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return nil, replyError(path, resp.StatusCode, data)
	}
	return resp, nil
}

// stream sends an operation whose reply is a stream of events, passing
// each to obs, and decodes the final result into out.
func (c *Client) stream(ctx context.Context, path string, body, out any, obs syncer.Observer) error {
	resp, err := c.openStream(ctx, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var e event
		if err := dec.Decode(&e); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("serve: read reply of %s: %w", path, err)
		}
		switch {
		case e.Change != nil:
			if obs.OnChange != nil {
				obs.OnChange(*e.Change)
			}
		case e.Progress != nil:
			if obs.Progress != nil {
				obs.Progress(*e.Progress)
			}
		case e.Error != nil:
			e.Error.Status = statusOf(e.Error.Code)
			return e.Error
		default:
			if err := json.Unmarshal(e.Result, out); err != nil {
				return fmt.Errorf("serve: decode reply of %s: %w", path, err)
			}
			return nil
		}
	}
}

// send sends one request.
func (c *Client) send(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return c.hc.Do(req)
}

// Info describes the service.
func (c *Client) Info(ctx context.Context) (Info, error) {
	var out Info
	return out, c.call(ctx, http.MethodGet, "/v1/info", nil, &out)
}

// Root is the served cache's data root (DIR, or DIR/NAMESPACE), as the
// service reported it when Dial reached it; "" for a client made otherwise.
func (c *Client) Root() string { return c.info.Root }

// Served describes the service Dial reached.
func (c *Client) Served() Info { return c.info }

// callOptions are the CallOptions for ctx's Observer: an observer with
// callbacks asks for a streamed reply.
func callOptions(ctx context.Context) CallOptions {
	o := syncer.ObserverOf(ctx)
	return CallOptions{Stream: o.OnChange != nil || o.Progress != nil, ProgressChecks: o.ProgressChecks, MaxChanges: o.MaxChanges}
}

// op sends one operation, with its CallOptions set from ctx, and decodes
// its result into out (streaming the events to ctx's Observer).
func (c *Client) op(ctx context.Context, path string, co *CallOptions, body, out any) error {
	*co = callOptions(ctx)
	if !co.Stream {
		return c.call(ctx, http.MethodPost, path, body, out)
	}
	return c.stream(ctx, path, body, out, syncer.ObserverOf(ctx))
}

// Pull runs a pull and returns its Stats, as syncer.Syncer.Pull does.
func (c *Client) Pull(ctx context.Context, opts syncer.PullOptions) (syncer.Stats, error) {
	req := PullRequest{PullOptions: opts}
	var out Stats
	err := c.op(ctx, "/v1/pull", &req.CallOptions, &req, &out)
	return statsOf(out, "pull", err)
}

// Push runs a push and returns its Stats, as syncer.Syncer.Push does.
func (c *Client) Push(ctx context.Context, opts syncer.PushOptions) (syncer.Stats, error) {
	req := PushRequest{PushOptions: opts}
	var out Stats
	err := c.op(ctx, "/v1/push", &req.CallOptions, &req, &out)
	return statsOf(out, "push", err)
}

// statsOf is the library Stats of a reply; a failed call reports at least
// its operation, as the Syncer does.
func statsOf(st Stats, op string, err error) (syncer.Stats, error) {
	out := st.Engine()
	if out.Op == "" {
		out.Op = op
	}
	return out, err
}

// Prepare uploads what a push would and returns the manifest to commit.
func (c *Client) Prepare(ctx context.Context, opts syncer.PushOptions) (PrepareResponse, error) {
	req := PushRequest{PushOptions: opts}
	var out PrepareResponse
	return out, c.op(ctx, "/v1/prepare", &req.CallOptions, &req, &out)
}

// PreparePush is Prepare with syncer.Syncer.PreparePush's results.
func (c *Client) PreparePush(ctx context.Context, opts syncer.PushOptions) (*syncer.PushManifest, syncer.Stats, error) {
	r, err := c.Prepare(ctx, opts)
	st, _ := statsOf(r.Stats, "prepare", nil)
	if err != nil {
		return nil, st, err
	}
	var m syncer.PushManifest
	if err := json.Unmarshal(r.Manifest, &m); err != nil {
		return nil, st, fmt.Errorf("serve: decode prepared manifest: %w", err)
	}
	return &m, st, nil
}

// Commit commits a prepared manifest.
func (c *Client) Commit(ctx context.Context, manifest json.RawMessage, fence *syncer.Fence) (syncer.Stats, error) {
	req := CommitRequest{Manifest: manifest, Fence: fence}
	var out Stats
	err := c.op(ctx, "/v1/commit", &req.CallOptions, &req, &out)
	return statsOf(out, "commit", err)
}

// CommitPush is Commit with syncer.Syncer.CommitPush's arguments.
func (c *Client) CommitPush(ctx context.Context, m *syncer.PushManifest, fence *syncer.Fence) (syncer.Stats, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return syncer.Stats{Op: "commit"}, err
	}
	return c.Commit(ctx, data, fence)
}

// markTimeout bounds MarkDirty and MarkAllDirty, whose library signatures
// take no context: one small request to a local service.
const markTimeout = time.Minute

// MarkDirty marks one path dirty, as syncer.Syncer.MarkDirty does.
func (c *Client) MarkDirty(path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), markTimeout)
	defer cancel()
	return c.MarkPaths(ctx, path)
}

// MarkPaths marks paths dirty.
func (c *Client) MarkPaths(ctx context.Context, paths ...string) error {
	return c.call(ctx, http.MethodPost, "/v1/dirty", DirtyRequest{Paths: paths}, nil)
}

// MarkAllDirty makes the next push walk everything.
func (c *Client) MarkAllDirty() error {
	ctx, cancel := context.WithTimeout(context.Background(), markTimeout)
	defer cancel()
	return c.call(ctx, http.MethodPost, "/v1/dirty", DirtyRequest{All: true}, nil)
}

// Status reports the pending marks and, with remote, whether the index moved.
func (c *Client) Status(ctx context.Context, remote bool) (syncer.Status, error) {
	var out syncer.Status
	return out, c.call(ctx, http.MethodPost, "/v1/status", StatusRequest{Remote: remote}, &out)
}

// Migrate turns the service's bucket (or namespace) into the log of
// deltas online, or with dryRun reports what that would write.
func (c *Client) Migrate(ctx context.Context, dryRun bool) (index.MigrateReport, error) {
	var out index.MigrateReport
	return out, c.call(ctx, http.MethodPost, "/v1/migrate", MigrateRequest{DryRun: dryRun}, &out)
}

// PreviewPush counts what a push would send.
func (c *Client) PreviewPush(ctx context.Context) (syncer.Preview, error) {
	var out syncer.Preview
	return out, c.call(ctx, http.MethodPost, "/v1/preview", AsyncOption{}, &out)
}

// Hydrate downloads files a metadata-only pull left out.
func (c *Client) Hydrate(ctx context.Context, paths ...string) (HydrateResponse, error) {
	req := HydrateRequest{Paths: paths}
	var out HydrateResponse
	return out, c.op(ctx, "/v1/hydrate", &req.CallOptions, &req, &out)
}

// HydrateFile is Hydrate of one path, as syncer.Syncer.HydrateFile does.
func (c *Client) HydrateFile(ctx context.Context, path string) (bool, syncer.Stats, error) {
	r, err := c.Hydrate(ctx, path)
	st, _ := statsOf(r.Stats, "hydrate", nil)
	return err == nil && len(r.Found) == 1 && r.Found[0], st, err
}

// Resolve settles conflicts, as syncer.Syncer.Resolve does.
func (c *Client) Resolve(ctx context.Context, opts syncer.ResolveOptions) (syncer.Stats, error) {
	req := ResolveRequest{ResolveOptions: opts}
	var out Stats
	err := c.op(ctx, "/v1/resolve", &req.CallOptions, &req, &out)
	return statsOf(out, "resolve", err)
}

// Restore puts the newest kept copy of path back in place, as
// syncer.Syncer.Restore does.
func (c *Client) Restore(ctx context.Context, path string) (syncer.Stats, error) {
	req := RestoreRequest{Paths: []string{path}}
	var out Stats
	err := c.op(ctx, "/v1/restore", &req.CallOptions, &req, &out)
	return statsOf(out, "restore", err)
}

// Start runs an operation (path such as "/v1/pull", req with Async set
// or not) as a job and returns it at once.
func (c *Client) Start(ctx context.Context, path string, req any) (Job, error) {
	data, err := json.Marshal(req)
	if err != nil {
		return Job{}, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return Job{}, err
	}
	m["async"] = true
	var out Job
	return out, c.call(ctx, http.MethodPost, path, m, &out)
}

// Job returns a job's state.
func (c *Client) Job(ctx context.Context, id string) (Job, error) {
	var out Job
	return out, c.call(ctx, http.MethodGet, "/v1/jobs/"+id, nil, &out)
}

// Cancel cancels a job.
func (c *Client) Cancel(ctx context.Context, id string) (Job, error) {
	var out Job
	return out, c.call(ctx, http.MethodPost, "/v1/jobs/"+id+"/cancel", nil, &out)
}

// Wait polls a job every interval until it finishes or ctx ends.
func (c *Client) Wait(ctx context.Context, id string, interval time.Duration) (Job, error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		j, err := c.Job(ctx, id)
		if err != nil || j.State != JobRunning {
			return j, err
		}
		select {
		case <-ctx.Done():
			return j, ctx.Err()
		case <-t.C:
		}
	}
}

// Acquire takes a lock through the service, which keeps it alive while
// the client calls Heartbeat at least every TTL.
func (c *Client) Acquire(ctx context.Context, req LockRequest) (Lease, error) {
	req.Async = false
	var out Lease
	return out, c.call(ctx, http.MethodPost, "/v1/lock/acquire", req, &out)
}

// Heartbeat proves the client alive; it fails with lock.ErrLost once the
// lease is lost.
func (c *Client) Heartbeat(ctx context.Context, lease string) (Lease, error) {
	var out Lease
	return out, c.call(ctx, http.MethodPost, "/v1/lock/heartbeat", LeaseRequest{Lease: lease}, &out)
}

// Release frees a lease.
func (c *Client) Release(ctx context.Context, lease string) error {
	return c.call(ctx, http.MethodPost, "/v1/lock/release", LeaseRequest{Lease: lease}, nil)
}

// Inspect reports the holder of a lock.
func (c *Client) Inspect(ctx context.Context, key string) (LockInfo, error) {
	var out LockInfo
	return out, c.call(ctx, http.MethodPost, "/v1/lock/inspect", LockRequest{Key: key}, &out)
}

// ControlGet reads a control-plane record (an error matching
// backend.ErrNotExist when there is none).
func (c *Client) ControlGet(ctx context.Context, key string) ([]byte, error) {
	var out ControlResponse
	if err := c.call(ctx, http.MethodPost, "/v1/control/get", ControlRequest{Key: key}, &out); err != nil {
		return nil, err
	}
	if out.Data == nil {
		out.Data = []byte{}
	}
	return out.Data, nil
}

// ControlPut writes a control-plane record.
func (c *Client) ControlPut(ctx context.Context, key string, data []byte) error {
	return c.call(ctx, http.MethodPost, "/v1/control/put", ControlRequest{Key: key, Data: data}, nil)
}

// ControlPutIfAbsent writes a record only if none exists and reports
// whether it did.
func (c *Client) ControlPutIfAbsent(ctx context.Context, key string, data []byte) (bool, error) {
	var out ControlResponse
	if err := c.call(ctx, http.MethodPost, "/v1/control/put-if-absent", ControlRequest{Key: key, Data: data}, &out); err != nil {
		return false, err
	}
	return out.Created != nil && *out.Created, nil
}

// ControlDelete removes a record.
func (c *Client) ControlDelete(ctx context.Context, key string) error {
	return c.call(ctx, http.MethodPost, "/v1/control/delete", ControlRequest{Key: key}, nil)
}

// ControlList lists record keys under prefix.
func (c *Client) ControlList(ctx context.Context, prefix string) ([]string, error) {
	var out ControlResponse
	return out.Keys, c.call(ctx, http.MethodPost, "/v1/control/list", ControlRequest{Prefix: prefix}, &out)
}
