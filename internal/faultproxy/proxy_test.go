package faultproxy_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/siltsync/silt/internal/faultproxy"
)

// upstream is a server that answers every request with a 1000-byte body
// and counts what reached it.
func upstream(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Length", "1000")
		_, _ = w.Write([]byte(strings.Repeat("x", 1000)))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// TestProxy_EachFault_DoesWhatItSays: each fault at rate 1 fails the
// request as its name says, reaches the server or not accordingly, and is
// counted.
func TestProxy_EachFault_DoesWhatItSays(t *testing.T) {
	tests := []struct {
		kind    faultproxy.Kind
		status  int  // wanted status, 0 for a transport error
		reached bool // the server saw the request
		bodyLen int  // bytes of body read before the error, when status is 200
	}{
		{faultproxy.Status503, 503, false, 0},
		{faultproxy.Status429, 429, false, 0},
		{faultproxy.ResetBefore, 0, false, 0},
		{faultproxy.ResetAfter, 0, true, 0},
		{faultproxy.Stall, 0, false, 0},
		{faultproxy.Cut, 200, true, 500},
		{faultproxy.Delay, 200, true, 1000},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			up, hits := upstream(t)
			p, err := faultproxy.New(faultproxy.Config{Target: up.URL, Rates: map[faultproxy.Kind]float64{tt.kind: 1}, Delay: 10 * time.Millisecond, StallFor: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(p)
			defer srv.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/b/k", nil)
			resp, err := srv.Client().Do(req)
			switch {
			case tt.status == 0:
				if err == nil {
					resp.Body.Close()
					t.Fatalf("status %d, want a transport error", resp.StatusCode)
				}
			case err != nil:
				t.Fatalf("err %v, want status %d", err, tt.status)
			default:
				n, rerr := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tt.status {
					t.Errorf("status %d, want %d", resp.StatusCode, tt.status)
				}
				if tt.status == 200 && int(n) != tt.bodyLen {
					t.Errorf("read %d bytes (%v), want %d", n, rerr, tt.bodyLen)
				}
				if tt.kind == faultproxy.Cut && !errors.Is(rerr, io.ErrUnexpectedEOF) {
					t.Errorf("cut body ended with %v, want io.ErrUnexpectedEOF", rerr)
				}
			}
			if got := hits.Load() > 0; got != tt.reached {
				t.Errorf("server reached %v, want %v", got, tt.reached)
			}
			if c := p.Counts(); c.Requests != 1 || c.Injected[tt.kind] != 1 || c.Total() != 1 {
				t.Errorf("counts %v, want 1 request and 1 %s", c, tt.kind)
			}
		})
	}
}

// TestProxy_Cut_OnlyGETs: a cut never hits a request without a body to
// cut, and is not counted there.
func TestProxy_Cut_OnlyGETs(t *testing.T) {
	up, _ := upstream(t)
	p, err := faultproxy.New(faultproxy.Config{Target: up.URL, Rates: map[faultproxy.Kind]float64{faultproxy.Cut: 1}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	resp, err := srv.Client().Post(srv.URL+"/b/k", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if n != 1000 || p.Counts().Total() != 0 {
		t.Errorf("read %d, counts %v; want the whole body and no fault", n, p.Counts())
	}
}

// TestNew_BadConfig_Refused: rates that cannot be drawn, and unknown
// faults, are errors.
func TestNew_BadConfig_Refused(t *testing.T) {
	for _, rates := range []map[faultproxy.Kind]float64{
		{faultproxy.Status503: 0.7, faultproxy.Cut: 0.5},
		{faultproxy.Status503: -0.1},
		{"teapot": 0.1},
	} {
		if _, err := faultproxy.New(faultproxy.Config{Target: "http://127.0.0.1:1", Rates: rates}); err == nil {
			t.Errorf("rates %v accepted", rates)
		}
	}
	if _, err := faultproxy.ParseRates("503=0.2,cut"); err == nil {
		t.Error(`ParseRates("503=0.2,cut") accepted`)
	}
	r, err := faultproxy.ParseRates("503=0.2, stall=0.03")
	if err != nil || r[faultproxy.Status503] != 0.2 || r[faultproxy.Stall] != 0.03 {
		t.Errorf("ParseRates = %v, %v", r, err)
	}
}
