package s3_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/s3"
)

// keyServer is gofakes3 behind a handler that records the access key of
// every signed request, so a test can see which credentials the chain
// chose.
type keyServer struct {
	url  string
	mu   sync.Mutex
	keys []string
}

var credentialRE = regexp.MustCompile(`Credential=([^/]+)/`)

func newKeyServer(t *testing.T, bucket string) *keyServer {
	t.Helper()
	mem := s3mem.New()
	if err := mem.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	ks := &keyServer{}
	h := gofakes3.New(mem).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m := credentialRE.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
			ks.mu.Lock()
			ks.keys = append(ks.keys, m[1])
			ks.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ks.url = srv.URL
	return ks
}

func (ks *keyServer) last(t *testing.T) string {
	t.Helper()
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if len(ks.keys) == 0 {
		t.Fatal("no signed request reached the server")
	}
	return ks.keys[len(ks.keys)-1]
}

// awsFiles points the SDK at temporary shared files holding two profiles,
// default and work, and clears every other credential source.
func awsFiles(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	creds := filepath.Join(dir, "credentials")
	conf := filepath.Join(dir, "config")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(creds, []byte("[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = secret-default\n\n"+
		"[work]\naws_access_key_id = AKIDWORK\naws_secret_access_key = secret-work\n"), 0o600))
	must(os.WriteFile(conf, []byte("[default]\nregion = us-east-1\n\n[profile work]\nregion = us-east-1\n"), 0o600))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", creds)
	t.Setenv("AWS_CONFIG_FILE", conf)
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// TestOpen_Profile_KeyReachesServer proves which access key signs the
// requests of a URL opened through backend.Open: the default profile,
// AWS_PROFILE, ?profile= (which wins over AWS_PROFILE), and static keys
// in the URL (which win over both).
func TestOpen_Profile_KeyReachesServer(t *testing.T) {
	awsFiles(t)
	ks := newKeyServer(t, "bkt")
	base := "s3://bkt?endpoint=" + ks.url + "&use_path_style=true&region=us-east-1"
	for _, tc := range []struct {
		name, awsProfile, url, want, source string
	}{
		{"default", "", base, "AKIDDEFAULT", "default chain"},
		{"AWS_PROFILE", "work", base, "AKIDWORK", "shared profile work from AWS_PROFILE"},
		{"?profile", "", base + "&profile=work", "AKIDWORK", "shared profile work ("},
		{"?profile over AWS_PROFILE", "work", base + "&profile=default", "AKIDDEFAULT", "shared profile default ("},
		{"static from URL", "work", strings.Replace(base, "s3://", "s3://AKIDURL:url-secret@", 1), "AKIDURL", "static from URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.awsProfile != "" {
				t.Setenv("AWS_PROFILE", tc.awsProfile)
			}
			b, err := backend.Open(t.Context(), tc.url)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if _, err := backend.Exists(t.Context(), b, "x"); err != nil {
				t.Fatal(err)
			}
			if got := ks.last(t); got != tc.want {
				t.Errorf("access key at the server = %s, want %s", got, tc.want)
			}
			d, ok := backend.Describe(b)
			if !ok {
				t.Fatal("Describe: s3 backend not found under the layers")
			}
			if !strings.HasPrefix(d.Credentials, tc.source) {
				t.Errorf("Describe().Credentials = %q, want it to start with %q", d.Credentials, tc.source)
			}
			if strings.Contains(d.Credentials, "secret") {
				t.Errorf("Describe().Credentials = %q shows a secret", d.Credentials)
			}
		})
	}
}

// TestNew_UnknownProfile_ErrCredentials checks a profile the shared files
// do not hold is a credentials error naming the profile and the files.
func TestNew_UnknownProfile_ErrCredentials(t *testing.T) {
	awsFiles(t)
	_, err := s3.New(t.Context(), s3.Config{Bucket: "bkt", Profile: "nosuch"})
	if !errors.Is(err, backend.ErrCredentials) {
		t.Fatalf("err = %v, want ErrCredentials", err)
	}
	if !strings.Contains(err.Error(), `"nosuch"`) || !strings.Contains(err.Error(), "credentials") {
		t.Errorf("err = %v: want the profile and the files named", err)
	}
}

// TestBackend_Describe_EnvKeys checks keys in the environment are
// reported as "env", without the secret.
func TestBackend_Describe_EnvKeys(t *testing.T) {
	awsFiles(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret-value")
	b, err := s3.New(t.Context(), s3.Config{Bucket: "bkt", Region: "eu-west-1"})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := backend.Describe(b)
	if d.Credentials != "env (AWS_ACCESS_KEY_ID)" || d.Region != "eu-west-1" || !strings.Contains(d.Endpoint, "s3.eu-west-1.amazonaws.com") {
		t.Errorf("Describe = %+v", d)
	}
	if strings.Contains(fmt.Sprint(d), "env-secret-value") {
		t.Errorf("Describe = %+v shows the secret", d)
	}
}
