package gcs_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/gcs"
)

const userCreds = `{"type":"authorized_user","client_id":"id.apps.googleusercontent.com","client_secret":"gcs-client-secret","refresh_token":"gcs-refresh-token"}`

func writeFile(t *testing.T, name, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOpen_CredentialsFile_Errors checks each broken credentials file, by
// URL or by GOOGLE_APPLICATION_CREDENTIALS, fails at open with a
// CredentialsFileError that names the path and the reason, matches
// ErrCredentials, and quotes none of the file.
func TestOpen_CredentialsFile_Errors(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	os.Unsetenv("STORAGE_EMULATOR_HOST")
	missing := filepath.Join(t.TempDir(), "nosuch.json")
	malformed := writeFile(t, "bad.json", `{"type": "service_account", "private_key": "-----BEGIN gcs-secret-key`, 0o600)
	wrongType := writeFile(t, "type.json", `{"type":"api_key","key":"gcs-secret-key"}`, 0o600)
	unreadable := writeFile(t, "locked.json", userCreds, 0o000)
	cases := []struct {
		name, url, env, path, reason string
	}{
		{"missing by URL", "gs://b?credentials=" + missing, "", missing, "does not exist"},
		{"missing by env", "gs://b", missing, missing, "does not exist"},
		{"malformed", "gs://b?credentials=" + malformed, "", malformed, "is not a Google credentials file"},
		{"wrong type", "gs://b?credentials=" + wrongType, "", wrongType, "is not a Google credentials file"},
	}
	if os.Geteuid() != 0 { // root reads a mode-0 file
		cases = append(cases, struct{ name, url, env, path, reason string }{"unreadable", "gs://b?credentials=" + unreadable, "", unreadable, "is unreadable"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", tc.env)
			_, err := backend.Open(t.Context(), tc.url)
			var ce *gcs.CredentialsFileError
			if !errors.As(err, &ce) || !errors.Is(err, backend.ErrCredentials) {
				t.Fatalf("err = %v, want a CredentialsFileError matching ErrCredentials", err)
			}
			if ce.Path != tc.path || ce.Reason != tc.reason || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("err = %v (path %q, reason %q), want path %q, reason %q", err, ce.Path, ce.Reason, tc.path, tc.reason)
			}
			if strings.Contains(err.Error(), "gcs-secret-key") {
				t.Errorf("err = %v quotes the file", err)
			}
		})
	}
}

// TestOpen_CredentialsFile_Describe checks a good file is accepted from
// the URL or the environment, and Describe names it without a secret.
func TestOpen_CredentialsFile_Describe(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	os.Unsetenv("STORAGE_EMULATOR_HOST")
	file := writeFile(t, "user.json", userCreds, 0o600)
	for _, tc := range []struct{ url, env, want string }{
		{"gs://b/p?credentials=" + file, "", "GCS credentials file " + file + " (authorized_user, from the URL's ?credentials=)"},
		{"gs://b/p", file, "GCS credentials file " + file + " (authorized_user, from GOOGLE_APPLICATION_CREDENTIALS)"},
	} {
		t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", tc.env)
		b, err := backend.Open(t.Context(), tc.url)
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		d, ok := backend.Describe(b)
		b.Close()
		if !ok || d.Credentials != tc.want || d.Bucket != "b" || d.Prefix != "p/" || d.Endpoint != "https://storage.googleapis.com" {
			t.Errorf("%s: Describe = %+v, want credentials %q", tc.url, d, tc.want)
		}
		if strings.Contains(d.Credentials, "gcs-client-secret") || strings.Contains(d.Credentials, "gcs-refresh-token") {
			t.Errorf("Describe shows a secret: %+v", d)
		}
	}
}
