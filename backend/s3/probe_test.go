package s3_test

import (
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend/probe"
	"github.com/siltsync/silt/backend/s3"
)

// TestBackend_Gofakes3_ProbeOK: gofakes3 honours If-None-Match and
// If-Match on PUT, which is all the backend claims of it.
func TestBackend_Gofakes3_ProbeOK(t *testing.T) {
	f := newFake(t)
	rep, err := probe.Conditional(t.Context(), f.open(t, s3.Config{DisableConditionalDelete: true}), "probe/scratch")
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || !rep.IfNoneMatch || !rep.IfMatch {
		t.Errorf("report = %+v, want If-None-Match and If-Match to hold", rep)
	}
}

// TestBackend_Gofakes3ClaimingConditionalDelete_ProbeReportsIt: a Config
// that wrongly claims conditional delete on gofakes3 is caught.
func TestBackend_Gofakes3ClaimingConditionalDelete_ProbeReportsIt(t *testing.T) {
	f := newFake(t)
	rep, err := probe.Conditional(t.Context(), f.open(t, s3.Config{}), "probe/scratch")
	if err != nil {
		t.Fatal(err)
	}
	if rep.ConditionalDelete || !hasProblem(rep, "ignores If-Match on DELETE") {
		t.Errorf("report = %+v, want the ignored conditional delete reported", rep)
	}
}

// TestBackend_HeaderStrippingProxy_ProbeReportsIgnoredConditions puts a
// reverse proxy that drops If-Match and If-None-Match (as some gateways
// and CDNs do) in front of gofakes3. Every write then succeeds, and only
// the probe can tell.
func TestBackend_HeaderStrippingProxy_ProbeReportsIgnoredConditions(t *testing.T) {
	f := newFake(t)
	target, err := url.Parse(f.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Header.Del("If-Match")
		r.Out.Header.Del("If-None-Match")
	}})
	defer proxy.Close()
	b := openAt(t, proxy.URL, s3.Config{Bucket: f.bucket(t)})

	rep, err := probe.Conditional(t.Context(), b, "probe/scratch")
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.IfNoneMatch || rep.IfMatch || rep.ConditionalDelete {
		t.Errorf("report = %+v, want every condition reported as ignored", rep)
	}
	for _, want := range []string{"ignores If-None-Match", "ignores If-Match: a write with a stale version", "ignores If-Match on a missing key", "ignores If-Match on DELETE"} {
		if !hasProblem(rep, want) {
			t.Errorf("Problems = %q, want one starting %q", rep.Problems, want)
		}
	}
}

func hasProblem(rep probe.Report, prefix string) bool {
	for _, p := range rep.Problems {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}
