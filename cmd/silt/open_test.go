package main

import (
	"fmt"
	"testing"

	"github.com/siltsync/silt/backend"
)

// Every store the command ships opens from the one call site, openURL,
// with the URL forms README lists; opening sends no request.
func TestOpenURL_EveryShippedScheme(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:1") // gs:// without credentials
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	for _, u := range []string{
		"file://" + t.TempDir() + "/bucket",
		"mem://open-test/prefix",
		"s3://bucket/prefix?region=us-east-1&endpoint=http://127.0.0.1:1&use_path_style=true",
		"gs://bucket/prefix",
		"blob+mem://",
	} {
		b, err := openURL(t.Context(), u)
		if err != nil {
			t.Errorf("openURL(%s): %v", u, err)
			continue
		}
		if fmt.Sprintf("%T", backend.Base(b)) == "" {
			t.Errorf("%s: no backend", u)
		}
		b.Close()
	}
	for _, u := range []string{"ftp://x", "s3://bucket?bogus=1", "file:///tmp/x?bogus=1", "gs://"} {
		if _, err := openURL(t.Context(), u); err == nil {
			t.Errorf("openURL(%s) succeeded", u)
		}
	}
}
