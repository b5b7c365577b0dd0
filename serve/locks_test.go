package serve

import (
	"errors"
	"net/http"
	"testing"

	"github.com/siltsync/silt/backend/mem"
)

// Every lock endpoint shares one decode, look-up and act shape; each
// kind of refusal comes back typed from each of them.
func TestServer_Lock_EndpointsRefuseBadRequests(t *testing.T) {
	st := start(t, mem.New())
	for _, c := range []struct {
		path string
		body any
		code string
	}{
		{"/v1/lock/acquire", map[string]any{"key": "k", "ttl": 1}, CodeBadRequest},      // unknown field
		{"/v1/lock/acquire", LockRequest{Key: "../k"}, CodeBadRequest},                  // bad key
		{"/v1/lock/acquire", LockRequest{Key: "k", TTLMs: -1}, CodeBadRequest},          // negative TTL
		{"/v1/lock/inspect", LockRequest{Key: ""}, CodeBadRequest},                      // no key
		{"/v1/lock/force-release", LockRequest{Key: "k"}, CodeBadRequest},               // no nonce
		{"/v1/lock/release", LeaseRequest{Lease: "nope"}, CodeNotFound},                 // unknown lease
		{"/v1/lock/heartbeat", LeaseRequest{Lease: "nope"}, CodeNotFound},               // unknown lease
		{"/v1/lock/heartbeat", map[string]any{"lease": "nope", "x": 1}, CodeBadRequest}, // unknown field
	} {
		err := st.client.call(t.Context(), http.MethodPost, c.path, c.body, nil)
		var e *Error
		if !errors.As(err, &e) || e.Code != c.code {
			t.Errorf("%s %+v: err = %v, want %s", c.path, c.body, err, c.code)
		}
	}
}

func TestServer_Lock_ForceReleaseTakesTheHoldersNonce(t *testing.T) {
	st := start(t, mem.New())
	le, err := st.client.Acquire(t.Context(), LockRequest{Key: "k", TTLMs: 60000})
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]bool
	if err := st.client.call(t.Context(), http.MethodPost, "/v1/lock/force-release", LockRequest{Key: "k", Nonce: "other"}, &out); err != nil || out["released"] {
		t.Fatalf("force-release with a wrong nonce: %v, %v", out, err)
	}
	if err := st.client.call(t.Context(), http.MethodPost, "/v1/lock/force-release", LockRequest{Key: "k", Nonce: le.Nonce}, &out); err != nil || !out["released"] {
		t.Fatalf("force-release with the holder's nonce: %v, %v", out, err)
	}
	if info, err := st.client.Inspect(t.Context(), "k"); err != nil || info.Held {
		t.Fatalf("inspect after force-release: %+v, %v", info, err)
	}
}
