package faultproxy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	_ "github.com/siltsync/silt/backend/s3" // s3:// through the proxy
	"github.com/siltsync/silt/internal/faultproxy"
	"github.com/siltsync/silt/internal/silttest"
	"github.com/siltsync/silt/syncer"
)

// The full run's environment, as .ci/run sets it for versitygw: an S3
// endpoint whose bucket exists (credentials from the AWS_* variables), and
// how many push-and-pull rounds and 20 MiB dedup pushes to run. Unset, the
// test runs a short version against gofakes3.
const (
	envEndpoint = "SILT_FAULTPROXY_S3_ENDPOINT"
	envBucket   = "SILT_FAULTPROXY_S3_BUCKET"
	envRounds   = "SILT_FAULTPROXY_ROUNDS"
	envDedup    = "SILT_FAULTPROXY_DEDUP"
)

// issueRates are the issue's done-when faults: 20 % 503, 10 % resets
// (half before forwarding, half after: lost acknowledgements), 10 % of
// GETs cut in half, 3 % stalls past the client's timeout.
var issueRates = map[faultproxy.Kind]float64{
	faultproxy.Status503:   0.20,
	faultproxy.ResetBefore: 0.05,
	faultproxy.ResetAfter:  0.05,
	faultproxy.Cut:         0.10,
	faultproxy.Stall:       0.03,
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a count", name, v)
	}
	return n
}

// TestFaultProxy_PushPull_AllSucceed is the issue's done-when: behind the
// proxy, every push and every pull succeeds and a pull leaves exactly what
// was pushed; deduplicating pushes of an existing 20 MiB object never fail.
func TestFaultProxy_PushPull_AllSucceed(t *testing.T) {
	endpoint, bucket := os.Getenv(envEndpoint), os.Getenv(envBucket)
	rounds, dedups, dedupSize := envInt(t, envRounds, 6), envInt(t, envDedup, 2), 20<<20
	if endpoint == "" {
		t.Setenv("AWS_ACCESS_KEY_ID", "silt-test-key")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "silt-test-secret")
		t.Setenv("AWS_SESSION_TOKEN", "")
		t.Setenv("AWS_PROFILE", "")
		t.Setenv("AWS_CONFIG_FILE", "/dev/null")
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
		t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
		fake := silttest.NewS3Fake(t)
		endpoint, bucket = fake.URL, fake.Bucket(t)
		dedupSize = 4 << 20 // gofakes3 holds it in memory, under -race
	}
	p, err := faultproxy.New(faultproxy.Config{Target: endpoint, Rates: issueRates, StallFor: 3 * time.Second, Seed: 20261201})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	url := fmt.Sprintf("s3://%s/faultproxy-%s?endpoint=%s&use_path_style=true&region=us-east-1&first_byte_timeout=2s&stall_timeout=2s", bucket, rand.Text()[:10], srv.URL)
	b, err := backend.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })

	writer, reader := openCache(t, b), openCache(t, b)
	var pushes, pulls, pushFails, pullFails int
	for i := range rounds {
		// Three files a round: two small (packed), one of 200 KiB (an
		// object of its own), and one file rewritten.
		files := map[string][]byte{
			fmt.Sprintf("data/r%d/a", i):   []byte(fmt.Sprintf("round %d a\n", i)),
			fmt.Sprintf("data/r%d/b", i):   []byte(fmt.Sprintf("round %d b\n", i)),
			fmt.Sprintf("data/r%d/big", i): bytes.Repeat([]byte{byte(i)}, 200<<10),
			"data/latest":                  []byte(fmt.Sprintf("latest is %d\n", i)),
		}
		for p, data := range files {
			writeFile(t, writer.dir, p, data)
		}
		pushes++
		if _, err := writer.s.Push(t.Context(), syncer.PushOptions{All: true}); err != nil {
			pushFails++
			t.Errorf("round %d: push: %v", i, err)
			continue
		}
		pulls++
		if _, err := reader.s.Pull(t.Context(), syncer.PullOptions{}); err != nil {
			pullFails++
			t.Errorf("round %d: pull: %v", i, err)
			continue
		}
		for p, data := range files {
			if got, err := os.ReadFile(filepath.Join(reader.dir, filepath.FromSlash(p))); err != nil || !bytes.Equal(got, data) {
				t.Errorf("round %d: after pull %s is %d bytes (%v), pushed %d", i, p, len(got), err, len(data))
			}
		}
	}

	// Deduplication: the same 20 MiB under a new path each time; every
	// push after the first finds the object stored (versitygw answers some
	// of those creates with a reset).
	big := make([]byte, dedupSize)
	_, _ = rand.Read(big)
	var dedupFails int
	for i := range dedups {
		writeFile(t, writer.dir, fmt.Sprintf("data/dedup/%d", i), big)
		if _, err := writer.s.Push(t.Context(), syncer.PushOptions{All: true}); err != nil {
			dedupFails++
			t.Errorf("dedup push %d: %v", i, err)
		}
	}
	t.Logf("faultproxy liveness: %d pushes (%d failed), %d pulls (%d failed), %d dedup pushes of %d MiB (%d failed); proxy %v",
		pushes, pushFails, pulls, pullFails, dedups, dedupSize>>20, dedupFails, p.Counts())
	if c := p.Counts(); rounds > 0 && c.Injected[faultproxy.Status503] == 0 {
		t.Errorf("no 503 injected in %d requests: the test proved nothing", c.Requests)
	}
}

type cache struct {
	dir string
	s   *syncer.Syncer
}

func openCache(t *testing.T, b backend.Backend) cache {
	t.Helper()
	dir := t.TempDir()
	s, err := syncer.Open(context.Background(), syncer.Config{Backend: b, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return cache{dir: dir, s: s}
}

func writeFile(t *testing.T, dir, p string, data []byte) {
	t.Helper()
	abs := filepath.Join(dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(abs, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFaultProxy_Regression_SilentEndpointSentOnce: a store that accepts
// connections and never answers got exactly 1 request from `silt ls
// --timeout 2s` (the timeout was not retried). Behind a proxy that stalls
// every request, a Stat through backend.Open now resends it, with a
// first-byte bound doubling from 100 ms, until the operation deadline of
// 1 s, then fails with a timeout naming the endpoint.
func TestFaultProxy_Regression_SilentEndpointSentOnce(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "silt-test-key")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "silt-test-secret")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	fake := silttest.NewS3Fake(t)
	p, err := faultproxy.New(faultproxy.Config{Target: fake.URL, Rates: map[faultproxy.Kind]float64{faultproxy.Stall: 1}, StallFor: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	b, err := backend.Open(t.Context(), fmt.Sprintf("s3://%s?endpoint=%s&use_path_style=true&region=us-east-1&timeout=1s&first_byte_timeout=100ms", fake.Bucket(t), srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, err = b.Stat(t.Context(), "k")
	if !errors.Is(err, backend.ErrTimeout) {
		t.Fatalf("err = %v, want a timeout", err)
	}
	// 100 + 200 + 400 ms of waiting and at most 350 ms of backoff: the
	// third attempt starts within the deadline, a fifth cannot.
	if c := p.Counts(); c.Requests < 3 || c.Requests > 4 {
		t.Errorf("sent %d requests to the silent endpoint, want 3 or 4 (within the 1s deadline)", c.Requests)
	}
}
