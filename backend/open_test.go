package backend_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/internal/silttest"
)

// layers names each layer of b from the outside in, by type, through
// the Unwrapper chain and under the portable layer: what Open really returns, not what a helper builds.
func layers(b backend.Backend) []string {
	var names []string
	var d backend.Driver = b
	for d != nil {
		names = append(names, fmt.Sprintf("%T", d))
		next, ok := backend.Under(d)
		if !ok {
			break
		}
		d = next
	}
	return names
}

func TestOpen_Layers_RetryTimeoutPortableDriver(t *testing.T) {
	b, err := backend.Open(t.Context(), "mem://open-layers")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	want := []string{"*backend.retrying", "*backend.timeout", "*backend.portable", "mem.nopClose"}
	if got := layers(b); !slices.Equal(got, want) {
		t.Fatalf("layers = %v, want %v", got, want)
	}
}

func TestOpen_TimeoutParam_ConsumedBeforeTheDriver(t *testing.T) {
	// mem rejects unknown parameters, so success shows Open took it.
	b, err := backend.Open(t.Context(), "mem://open-timeout?timeout=5s")
	if err != nil {
		t.Fatalf("Open with ?timeout=5s: %v", err)
	}
	b.Close()
	for _, bad := range []string{"abc", "0", "-1s"} {
		if _, err := backend.Open(t.Context(), "mem://open-timeout?timeout="+bad); err == nil || !strings.Contains(err.Error(), "timeout=") {
			t.Errorf("Open with ?timeout=%s: err = %v, want one naming the parameter", bad, err)
		}
	}
}

func TestOpen_NegativeTimeoutOption_NoTimeoutLayer(t *testing.T) {
	b, err := backend.Open(t.Context(), "mem://open-notimeout", backend.WithTimeout(-1))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"*backend.retrying", "*backend.portable", "mem.nopClose"}
	if got := layers(b); !slices.Equal(got, want) {
		t.Fatalf("layers = %v, want %v", got, want)
	}
}

// TestProduction_TransientFaults_PullLikeReadsSucceed injects, under the
// production stack, what a store's classifier makes of a 503 SlowDown and
// a 429, and a raw connection reset the portable layer classifies, each on
// the first request of its verb; the reads a pull makes all succeed.
func TestProduction_TransientFaults_PullLikeReadsSucceed(t *testing.T) {
	m := mem.New()
	for _, k := range []string{".silt/manifest", "data/a", "data/b"} {
		silttest.Put(t, m, k, "v:"+k)
	}
	f := wrap.Faults(m)
	f.Add(wrap.Rule{Verb: wrap.VerbGet, Nth: 1, Err: backend.Retryable("get", ".silt/manifest", errors.New("503 SlowDown"))})
	f.Add(wrap.Rule{Verb: wrap.VerbList, Nth: 1, Err: backend.Retryable("list", "data/", errors.New("429 Too Many Requests"))})
	f.Add(wrap.Rule{Verb: wrap.VerbStat, Nth: 1, Err: &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}})
	b := backend.Production(f, backend.WithRetry(backend.RetryConfig{Base: 1}))
	ctx := context.Background()

	if got := silttest.Read(t, b, ".silt/manifest"); got != "v:.silt/manifest" {
		t.Errorf("manifest = %q", got)
	}
	var keys []string
	if err := b.List(ctx, "data/", backend.ListOptions{}, func(p []backend.ObjectInfo) error {
		for _, o := range p {
			keys = append(keys, o.Key)
		}
		return nil
	}); err != nil {
		t.Fatalf("List: %v", err)
	}
	if !slices.Equal(keys, []string{"data/a", "data/b"}) {
		t.Errorf("listed %v", keys)
	}
	if _, err := b.Stat(ctx, "data/a"); err != nil {
		t.Fatalf("Stat after a connection reset: %v", err)
	}
	for _, k := range keys {
		silttest.Read(t, b, k)
	}
	if f.Fired() != 3 {
		t.Errorf("faults fired %d times, want 3", f.Fired())
	}
}

func TestPortable_ConnectionReset_IsRetryable(t *testing.T) {
	f := wrap.Faults(mem.New())
	f.Add(wrap.Rule{Verb: wrap.VerbStat, Err: &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}})
	_, err := backend.Portable(f).Stat(t.Context(), "k")
	if !backend.IsRetryable(err) || !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("err = %v, want a retryable connection reset", err)
	}
}
