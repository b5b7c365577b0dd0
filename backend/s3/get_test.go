package s3_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/s3"
)

// TestBackend_Get_IfNoneMatch sends GetOptions.IfNoneMatch to gofakes3
// through a proxy that records each GET's status. gofakes3 honours
// If-None-Match on GET (304, no body); with the header stripped, as a
// gateway might, the store sends the unchanged object and Get's own ETag
// comparison must still report ErrNotModified without a reader.
func TestBackend_Get_IfNoneMatch(t *testing.T) {
	for _, tc := range []struct {
		name       string
		strip      bool
		wantStatus int // status of the GET of the unchanged object
	}{
		{"store answers 304", false, http.StatusNotModified},
		{"header stripped, store answers 200", true, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			target, err := url.Parse(f.URL)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var statuses []int
			proxy := httptest.NewServer(&httputil.ReverseProxy{
				Rewrite: func(r *httputil.ProxyRequest) {
					r.SetURL(target)
					if tc.strip {
						r.Out.Header.Del("If-None-Match")
					}
				},
				ModifyResponse: func(r *http.Response) error {
					if r.Request.Method == http.MethodGet {
						mu.Lock()
						statuses = append(statuses, r.StatusCode)
						mu.Unlock()
					}
					return nil
				},
			})
			defer proxy.Close()
			b := openAt(t, proxy.URL, s3.Config{Bucket: f.bucket(t), DisableConditionalDelete: true})
			ctx := t.Context()

			v1, err := backend.PutBytes(ctx, b, "k", []byte("one"), backend.Cond{})
			if err != nil {
				t.Fatal(err)
			}
			rc, _, err := b.Get(ctx, "k", backend.GetOptions{IfNoneMatch: v1.Version})
			if rc != nil {
				rc.Close()
				t.Error("Get(IfNoneMatch: current) returned a reader")
			}
			if !errors.Is(err, backend.ErrNotModified) || backend.IsRetryable(err) {
				t.Fatalf("Get(IfNoneMatch: current) = %v, want permanent ErrNotModified", err)
			}
			mu.Lock()
			got := append([]int(nil), statuses...)
			mu.Unlock()
			if len(got) != 1 || got[0] != tc.wantStatus {
				t.Errorf("GET statuses %v, want [%d]", got, tc.wantStatus)
			}

			v2, err := backend.PutBytes(ctx, b, "k", []byte("two"), backend.Cond{})
			if err != nil {
				t.Fatal(err)
			}
			data, info, err := backend.ReadAll(ctx, b, "k", backend.GetOptions{IfNoneMatch: v1.Version}, 0)
			if err != nil || string(data) != "two" || info.Version != v2.Version {
				t.Errorf("Get(IfNoneMatch: stale) = %q at %q, %v; want \"two\" at %q", data, info.Version, err, v2.Version)
			}
			if _, _, err := backend.ReadAll(ctx, b, "gone", backend.GetOptions{IfNoneMatch: v2.Version}, 0); !backend.IsNotExist(err) {
				t.Errorf("Get(IfNoneMatch) of a missing key = %v, want ErrNotExist", err)
			}
		})
	}
}
