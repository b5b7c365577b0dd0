package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/siltsync/silt/syncer"
)

// Client calls a service's API. Its methods are safe for concurrent use;
// errors from the service are *Error values, which match the library's
// sentinels with errors.Is.
type Client struct {
	hc    *http.Client
	base  string
	token string
}

// NewUnixClient returns a client for the service listening on the Unix
// socket at path.
func NewUnixClient(path string) *Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
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
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("serve: read reply of %s: %w", path, err)
	}
	if resp.StatusCode >= 300 {
		var eb errorBody
		if err := json.Unmarshal(data, &eb); err != nil || eb.Error == nil {
			return &Error{Code: CodeInternal, Status: resp.StatusCode,
				Message: fmt.Sprintf("serve: %s: HTTP %d: %s", path, resp.StatusCode, strings.TrimSpace(string(data)))}
		}
		eb.Error.Status = resp.StatusCode
		return eb.Error
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("serve: decode reply of %s: %w", path, err)
	}
	return nil
}

// Info describes the service.
func (c *Client) Info(ctx context.Context) (Info, error) {
	var out Info
	return out, c.call(ctx, http.MethodGet, "/v1/info", nil, &out)
}

// Pull runs a pull and returns its Stats.
func (c *Client) Pull(ctx context.Context, req PullRequest) (syncer.Stats, error) {
	req.Async = false
	var out syncer.Stats
	return out, c.call(ctx, http.MethodPost, "/v1/pull", req, &out)
}

// Push runs a push (of req.Paths only, when set) and returns its Stats.
func (c *Client) Push(ctx context.Context, req PushRequest) (syncer.Stats, error) {
	req.Async = false
	var out syncer.Stats
	return out, c.call(ctx, http.MethodPost, "/v1/push", req, &out)
}

// Prepare uploads what a push would and returns the manifest to commit.
func (c *Client) Prepare(ctx context.Context, req PushRequest) (PrepareResponse, error) {
	req.Async = false
	var out PrepareResponse
	return out, c.call(ctx, http.MethodPost, "/v1/prepare", req, &out)
}

// Commit commits a prepared manifest.
func (c *Client) Commit(ctx context.Context, manifest json.RawMessage, fence *syncer.Fence) (syncer.Stats, error) {
	var out syncer.Stats
	return out, c.call(ctx, http.MethodPost, "/v1/commit", CommitRequest{Manifest: manifest, Fence: fence}, &out)
}

// MarkDirty marks paths dirty.
func (c *Client) MarkDirty(ctx context.Context, paths ...string) error {
	return c.call(ctx, http.MethodPost, "/v1/dirty", DirtyRequest{Paths: paths}, nil)
}

// MarkAllDirty makes the next push walk everything.
func (c *Client) MarkAllDirty(ctx context.Context) error {
	return c.call(ctx, http.MethodPost, "/v1/dirty", DirtyRequest{All: true}, nil)
}

// Status reports the pending marks and, with remote, whether the index moved.
func (c *Client) Status(ctx context.Context, remote bool) (syncer.Status, error) {
	var out syncer.Status
	return out, c.call(ctx, http.MethodPost, "/v1/status", StatusRequest{Remote: remote}, &out)
}

// Preview counts what a push would send.
func (c *Client) Preview(ctx context.Context) (syncer.Preview, error) {
	var out syncer.Preview
	return out, c.call(ctx, http.MethodPost, "/v1/preview", AsyncOption{}, &out)
}

// Hydrate downloads files a metadata-only pull left out.
func (c *Client) Hydrate(ctx context.Context, paths ...string) (HydrateResponse, error) {
	var out HydrateResponse
	return out, c.call(ctx, http.MethodPost, "/v1/hydrate", HydrateRequest{Paths: paths}, &out)
}

// Resolve settles conflicts (see syncer.Syncer.Resolve): req.Keep is
// KeepLocal or KeepRemote.
func (c *Client) Resolve(ctx context.Context, req ResolveRequest) (syncer.Stats, error) {
	req.Async = false
	var out syncer.Stats
	return out, c.call(ctx, http.MethodPost, "/v1/resolve", req, &out)
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
