package s3_test

import (
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/s3"
	"github.com/siltsync/silt/index"
)

// TestBackend_Regression_XAdminUserNotFoundReadsAsAbsent: versitygw
// answers an unknown access key with 404 XAdminUserNotFound, which read as
// "no manifest": silt ls printed nothing and silt check said ok, exit 0.
// The manifest read now fails with the refused credential.
func TestBackend_Regression_XAdminUserNotFoundReadsAsAbsent(t *testing.T) {
	srv := &scripted{status: 404, code: "XAdminUserNotFound"}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	b := openAt(t, ts.URL, s3.Config{Bucket: "scripted"})
	h, err := index.ReadManifest(t.Context(), b, backend.GetOptions{})
	if err == nil || backend.IsNotExist(err) || !errors.Is(err, backend.ErrCredentials) {
		t.Fatalf("ReadManifest = %+v, %v; want the refused credential, never an empty index", h, err)
	}
	if _, err := index.OpenSnapshot(t.Context(), b); !errors.Is(err, backend.ErrCredentials) {
		t.Errorf("OpenSnapshot (silt ls, silt check) = %v, want the refused credential", err)
	}
}
