package gcs_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/gcs"
)

// TestBackend_Get_RangeAnswers feeds the driver, without backend.Portable,
// each shape of answer a store may give a ranged read of the 10-byte
// object "0123456789" at generation 7, through the real client.
func TestBackend_Get_RangeAnswers(t *testing.T) {
	const object = "0123456789"
	for _, tc := range []struct {
		name         string
		r            backend.Range
		status       int
		contentRange string
		body         string
		want         string // the body read, when no error is wanted
		is           error  // errors.Is must hold
		permanent    bool   // an error that is no sentinel, not retryable
	}{
		{name: "206: Size is the total", r: backend.Range{Offset: 3, Length: 4},
			status: 206, contentRange: "bytes 3-6/10", body: "3456", want: "3456"},
		// GCS cuts a range that ends past the object at its end.
		{name: "206 cut at the end is invalid-range", r: backend.Range{Offset: 5, Length: 10},
			status: 206, contentRange: "bytes 5-9/10", body: "56789", is: backend.ErrInvalidRange},
		{name: "206 from another offset is permanent", r: backend.Range{Offset: 3, Length: 4},
			status: 206, contentRange: "bytes 0-3/10", body: "0123", permanent: true},
		// At offset 0 the client takes a whole-object 200 from a store
		// that ignored Range; the driver hands out only the range.
		{name: "200 whole object at offset 0 is cut to the range", r: backend.Range{Offset: 0, Length: 4},
			status: 200, body: object, want: "0123"},
		{name: "416 is invalid-range", r: backend.Range{Offset: 10, Length: 1},
			status: 416, body: "", is: backend.ErrInvalidRange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sent []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sent = append(sent, r.Header.Get("Range"))
				w.Header().Set("X-Goog-Generation", "7")
				w.Header().Set("Content-Length", strconv.Itoa(len(tc.body)))
				if tc.contentRange != "" {
					w.Header().Set("Content-Range", tc.contentRange)
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			client, err := storage.NewClient(context.Background(), option.WithEndpoint(srv.URL+"/storage/v1/"), option.WithoutAuthentication())
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			b, err := gcs.New(context.Background(), gcs.Config{Bucket: "scripted-bucket", Client: client})
			if err != nil {
				t.Fatal(err)
			}
			rc, info, err := b.Get(context.Background(), "k", backend.GetOptions{Range: &tc.r})
			if want := "bytes=" + strconv.FormatInt(tc.r.Offset, 10) + "-" + strconv.FormatInt(tc.r.End()-1, 10); len(sent) != 1 || sent[0] != want {
				t.Errorf("Range headers sent %q, want [%q]", sent, want)
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
				if info.Size != int64(len(object)) || info.Version != "7" {
					t.Errorf("info = %+v, want Size %d (the whole object's) at version 7", info, len(object))
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
