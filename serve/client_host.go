package serve

import (
	"context"

	"github.com/siltsync/silt/namespace"
)

// Health calls GET /v1/health: one read of the manifest, no write.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var out Health
	err := c.call(ctx, "GET", "/v1/health", nil, &out)
	return out, err
}

// Events long-polls POST /v1/events.
func (c *Client) Events(ctx context.Context, req EventsRequest) (EventsResponse, error) {
	var out EventsResponse
	err := c.call(ctx, "POST", "/v1/events", req, &out)
	return out, err
}

// Namespaces lists the bucket's registered namespaces.
func (c *Client) Namespaces(ctx context.Context) ([]namespace.Info, error) {
	var out NamespacesResponse
	err := c.call(ctx, "POST", "/v1/namespaces", struct{}{}, &out)
	return out.Namespaces, err
}

// RegisterNamespace claims a namespace of the bucket for owner.
func (c *Client) RegisterNamespace(ctx context.Context, ns, owner string) error {
	return c.call(ctx, "POST", "/v1/namespaces/register", NamespaceRequest{Namespace: ns, Owner: owner}, nil)
}

// Read reads one committed file of a namespace (nil: the served one).
func (c *Client) Read(ctx context.Context, ns *string, path string) (ReadResponse, error) {
	var out ReadResponse
	err := c.call(ctx, "POST", "/v1/read", ReadRequest{Namespace: ns, Path: path}, &out)
	return out, err
}
