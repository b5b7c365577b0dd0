package s3_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/s3"
)

// rangeScript answers every GET with a fixed status, Content-Range and
// body for the object "0123456789" at ETag "v1", and records the Range
// header it was sent.
type rangeScript struct {
	status       int
	contentRange string
	body         string

	mu     sync.Mutex
	ranges []string
}

func (s *rangeScript) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.ranges = append(s.ranges, r.Header.Get("Range"))
	s.mu.Unlock()
	w.Header().Set("ETag", `"v1"`)
	w.Header().Set("Last-Modified", "Tue, 01 Dec 2026 12:00:00 GMT")
	w.Header().Set("Content-Length", strconv.Itoa(len(s.body)))
	if s.contentRange != "" {
		w.Header().Set("Content-Range", s.contentRange)
	}
	w.WriteHeader(s.status)
	io.WriteString(w, s.body)
}

// bareAt opens the driver itself, without backend.Portable, so a test sees
// what the driver alone makes of an answer.
func bareAt(t *testing.T, endpoint string) backend.Driver {
	t.Helper()
	b, err := s3.NewDriver(t.Context(), s3.Config{Bucket: "scripted", Endpoint: endpoint, UsePathStyle: true, AWSConfig: staticAWS()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBackend_Get_RangeAnswers feeds the driver each shape of answer a
// store may give a ranged GET, through the real SDK.
func TestBackend_Get_RangeAnswers(t *testing.T) {
	const object = "0123456789"
	for _, tc := range []struct {
		name         string
		r            backend.Range
		status       int
		contentRange string
		body         string
		want         string // the body read, when err is nil
		is           error  // errors.Is must hold; nil: success wanted
		permanent    bool   // an error that is no sentinel, not retryable
	}{
		{name: "206 with Content-Range: Size is the total", r: backend.Range{Offset: 3, Length: 4},
			status: 206, contentRange: "bytes 3-6/10", body: "3456", want: "3456"},
		{name: "206 of the last byte", r: backend.Range{Offset: 9, Length: 1},
			status: 206, contentRange: "bytes 9-9/10", body: "9", want: "9"},
		// S3 and GCS cut a range that ends past the object at its end.
		{name: "206 cut at the end is invalid-range", r: backend.Range{Offset: 5, Length: 10},
			status: 206, contentRange: "bytes 5-9/10", body: "56789", is: backend.ErrInvalidRange},
		{name: "206 of other bytes than asked for is permanent", r: backend.Range{Offset: 3, Length: 4},
			status: 206, contentRange: "bytes 0-3/10", body: "0123", permanent: true},
		{name: "206 with an unknown total is permanent", r: backend.Range{Offset: 3, Length: 4},
			status: 206, contentRange: "bytes 3-6/*", body: "3456", permanent: true},
		{name: "206 without Content-Range is permanent", r: backend.Range{Offset: 3, Length: 4},
			status: 206, body: "3456", permanent: true},
		{name: "206 with a malformed Content-Range is permanent", r: backend.Range{Offset: 3, Length: 4},
			status: 206, contentRange: "3-6/10", body: "3456", permanent: true},
		// A store that ignores Range sends the whole object with 200
		// (HTTP allows it); the driver hands out only the range.
		{name: "200 whole object at offset 0 is cut to the range", r: backend.Range{Offset: 0, Length: 4},
			status: 200, body: object, want: "0123"},
		{name: "200 whole object mid-object is skipped and cut", r: backend.Range{Offset: 6, Length: 3},
			status: 200, body: object, want: "678"},
		{name: "200 whole object, range past its end, is invalid-range", r: backend.Range{Offset: 8, Length: 3},
			status: 200, body: object, is: backend.ErrInvalidRange},
		{name: "200 empty object is invalid-range", r: backend.Range{Offset: 0, Length: 1},
			status: 200, body: "", is: backend.ErrInvalidRange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &rangeScript{status: tc.status, contentRange: tc.contentRange, body: tc.body}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			b := bareAt(t, ts.URL)
			rc, info, err := b.Get(t.Context(), "k", backend.GetOptions{Range: &tc.r})
			if got, want := srv.ranges, []string{fmt.Sprintf("bytes=%d-%d", tc.r.Offset, tc.r.End()-1)}; len(got) != 1 || got[0] != want[0] {
				t.Errorf("Range headers sent %q, want %q", got, want)
			}
			switch {
			case tc.is == nil && !tc.permanent:
				if err != nil {
					t.Fatal(err)
				}
				data, err := io.ReadAll(rc)
				rc.Close()
				if err != nil || string(data) != tc.want {
					t.Errorf("body %q, %v; want %q", data, err, tc.want)
				}
				if info.Size != int64(len(object)) || info.Version != `"v1"` {
					t.Errorf("info = %+v, want Size %d (the whole object's) and version \"v1\"", info, len(object))
				}
			case rc != nil:
				rc.Close()
				t.Fatalf("got a reader and err %v, want an error only", err)
			case tc.is != nil:
				if !errors.Is(err, tc.is) || backend.IsRetryable(err) {
					t.Errorf("err = %v, want permanent errors.Is(err, %v)", err, tc.is)
				}
			default:
				var be *backend.Error
				if !errors.As(err, &be) || backend.IsRetryable(err) || errors.Is(err, backend.ErrInvalidRange) {
					t.Errorf("err = %v, want a permanent *backend.Error that is not ErrInvalidRange", err)
				}
			}
		})
	}
}

// TestBackend_Get_RangeHeaderStripped puts gofakes3 behind a proxy that
// drops the Range header, as a gateway might: the store answers 200 with
// the whole object, and Get still yields exactly the range, with the
// object's size and version.
func TestBackend_Get_RangeHeaderStripped(t *testing.T) {
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
			r.Out.Header.Del("Range")
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
	data := strings.Repeat("0123456789", 1000)
	v, err := backend.PutBytes(t.Context(), b, "k", []byte(data), backend.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []backend.Range{{Offset: 0, Length: 7}, {Offset: 4321, Length: 1234}, {Offset: 9999, Length: 1}} {
		got, info, err := backend.ReadAll(t.Context(), b, "k", backend.GetOptions{Range: &r, IfMatch: v.Version}, 0)
		if err != nil {
			t.Fatalf("Get(Range %+v): %v", r, err)
		}
		if string(got) != data[r.Offset:r.End()] || info.Size != int64(len(data)) || info.Version != v.Version {
			t.Errorf("Get(Range %+v) = %d bytes, Size %d, Version %s; want %q, Size %d, Version %s",
				r, len(got), info.Size, info.Version, data[r.Offset:r.End()], len(data), v.Version)
		}
	}
	if _, _, err := backend.ReadAll(t.Context(), b, "k", backend.GetOptions{Range: &backend.Range{Offset: 9999, Length: 2}}, 0); !errors.Is(err, backend.ErrInvalidRange) {
		t.Errorf("Get of a range one past the end: err = %v, want ErrInvalidRange", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range statuses {
		if s != http.StatusOK {
			t.Fatalf("GET statuses %v: the proxy did not strip Range (want every answer 200)", statuses)
		}
	}
}
