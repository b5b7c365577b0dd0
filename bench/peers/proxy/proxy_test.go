package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

func TestClassify_PathStyleRequests_NameTheirOperation(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		copySource     bool
		want           string
	}{
		{"GET", "/", false, OpListBuckets},
		{"PUT", "/b", false, OpCreateBucket},
		{"HEAD", "/b", false, OpHeadBucket},
		{"GET", "/b?location", false, OpGetBucketLocation},
		{"GET", "/b/?list-type=2&prefix=p%2F&continuation-token=x", false, OpListObjectsV2},
		{"GET", "/b?prefix=p&marker=m", false, OpListObjects},
		{"GET", "/b?uploads", false, OpListMultipartUploads},
		{"GET", "/b?versioning", false, OpGetBucketSubresource},
		{"POST", "/b?delete", false, OpDeleteObjects},
		{"GET", "/b/data/a/raw", false, OpGetObject},
		{"HEAD", "/b/data/a/raw", false, OpHeadObject},
		{"PUT", "/b/data/a/raw", false, OpPutObject},
		{"PUT", "/b/data/a/raw", true, OpCopyObject},
		{"PUT", "/b/k?partNumber=1&uploadId=u", false, OpUploadPart},
		{"PUT", "/b/k?partNumber=1&uploadId=u", true, OpUploadPartCopy},
		{"POST", "/b/k?uploads", false, OpCreateMultipartUpload},
		{"POST", "/b/k?uploadId=u", false, OpCompleteMultipartUpload},
		{"DELETE", "/b/k?uploadId=u", false, OpAbortMultipartUpload},
		{"GET", "/b/k?uploadId=u", false, OpListParts},
		{"DELETE", "/b/k", false, OpDeleteObject},
		{"GET", "/b/k?tagging", false, OpObjectSubresource},
		{"PATCH", "/b/k", false, OpOther},
	} {
		u, err := url.Parse(tc.target)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		if tc.copySource {
			h.Set("X-Amz-Copy-Source", "/b/src")
		}
		if got := Classify(tc.method, u, h); got != tc.want {
			t.Errorf("%s %s (copy %v) = %s, want %s", tc.method, tc.target, tc.copySource, got, tc.want)
		}
	}
}

func TestProxy_ServeHTTP_CountsDelaysAndKeepsHost(t *testing.T) {
	hosts := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hosts <- r.Host
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	const delay = 30 * time.Millisecond
	p, err := New(srv.URL, delay)
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(p)
	defer front.Close()

	start := time.Now()
	for _, m := range []string{"GET", "GET", "HEAD"} {
		req, _ := http.NewRequest(m, front.URL+"/b/k", nil)
		req.Host = "signed.example:1234"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if h := <-hosts; h != "signed.example:1234" {
			t.Errorf("server saw Host %q, want the client's", h)
		}
	}
	if el := time.Since(start); el < 3*delay {
		t.Errorf("3 requests took %v, want at least %v", el, 3*delay)
	}
	c := p.Snapshot()
	if c.Ops[OpGetObject] != 2 || c.Ops[OpHeadObject] != 1 || c.Total() != 3 || c.Errors != 1 {
		t.Errorf("counts %+v, want 2 GetObject, 1 HeadObject, 1 error", c)
	}
	p.Reset()
	if c := p.Snapshot(); c.Total() != 0 || c.Errors != 0 {
		t.Errorf("after Reset: %+v", c)
	}
}

func TestNew_BadTarget_IsAnError(t *testing.T) {
	for _, target := range []string{"127.0.0.1:1", "ftp://x", "http://"} {
		if _, err := New(target, 0); err == nil {
			t.Errorf("New(%q) succeeded", target)
		}
	}
}
