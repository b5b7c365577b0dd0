package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// fakeS3 starts gofakes3 on loopback with one bucket and returns its URL.
func fakeS3(t *testing.T, bucket string) string {
	t.Helper()
	mem := s3mem.New()
	if err := mem.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(mem).Server())
	t.Cleanup(srv.Close)
	return srv.URL
}

// awsEnv is an environment with temporary shared AWS files holding the
// profiles default and work, keys in the environment, and no IMDS.
func awsEnv(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	creds := filepath.Join(dir, "credentials")
	if err := os.WriteFile(creds, []byte("[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = profile-secret-default\n\n"+
		"[work]\naws_access_key_id = AKIDWORK\naws_secret_access_key = profile-secret-work\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"AWS_SHARED_CREDENTIALS_FILE=" + creds, "AWS_CONFIG_FILE=" + filepath.Join(dir, "config"),
		"AWS_ACCESS_KEY_ID=AKIDENV", "AWS_SECRET_ACCESS_KEY=env-secret-value", "AWS_PROFILE=", "AWS_EC2_METADATA_DISABLED=true"}
}

// TestStatus_Verbose_DescribesTheStoreWithoutSecrets checks status -v
// names the endpoint, region, credential source and namespace, and that
// no secret, from the URL or the environment, reaches stdout or stderr,
// in text or --json.
func TestStatus_Verbose_DescribesTheStoreWithoutSecrets(t *testing.T) {
	endpoint := fakeS3(t, "bkt")
	env := awsEnv(t)
	root := t.TempDir()
	query := "?endpoint=" + endpoint + "&use_path_style=true&region=eu-west-3"
	for _, tc := range []struct {
		name, url, source string
		flags             []string
	}{
		{"env", "s3://bkt/env" + query, "env (AWS_ACCESS_KEY_ID)", nil},
		{"--profile", "s3://bkt/prof" + query, "shared profile work (", []string{"--profile", "work"}},
		{"static from URL", "s3://AKIDURL:url-secret-value@bkt/static" + query, "static from URL", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := filepath.Join(root, strings.ReplaceAll(tc.name, " ", "-"))
			if r := siltAt(t, root, env, append([]string{"init", "--dir", d, "--namespace", "team-a", tc.url}, tc.flags...)...); r.code != 0 {
				t.Fatalf("init: %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			fi, err := os.Stat(configPath(d))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(tc.url, "@") && fi.Mode().Perm() != 0o600 {
				t.Errorf("config.json of a URL with a secret has mode %v, want 0600", fi.Mode().Perm())
			}
			r := siltAt(t, root, env, append([]string{"status", "-v", "--dir", d}, tc.flags...)...)
			if r.code != 0 {
				t.Fatalf("status -v: %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			for _, want := range []string{"endpoint:    " + endpoint, "region:      eu-west-3", "credentials: " + tc.source, "namespace:   team-a", "store: s3 bucket bkt"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("status -v lacks %q:\n%s", want, r.stdout)
				}
			}
			j := siltAt(t, root, env, append([]string{"status", "-v", "--json", "--dir", d}, tc.flags...)...)
			if j.code != 0 {
				t.Fatalf("status -v --json: %d\n%s%s", j.code, j.stdout, j.stderr)
			}
			store, _ := object(t, j)["store"].(map[string]any)
			if store["region"] != "eu-west-3" || !strings.HasPrefix(store["credentials"].(string), tc.source) || store["namespace"] != "team-a" {
				t.Errorf("status -v --json store = %v", store)
			}
			for _, out := range []string{r.stdout, r.stderr, j.stdout, j.stderr} {
				for _, secret := range []string{"url-secret-value", "env-secret-value", "profile-secret"} {
					if strings.Contains(out, secret) {
						t.Errorf("status -v printed the secret %q:\n%s", secret, out)
					}
				}
			}
		})
	}
}

// TestProfile_NonS3URL_UsageError checks --profile on a store that has no
// profiles is refused rather than ignored.
func TestProfile_NonS3URL_UsageError(t *testing.T) {
	r := silt(t, "ls", "--profile", "work", fileURL(t.TempDir()))
	wantCode(t, r, exitUsage, "ls --profile file://")
	if !strings.Contains(r.stderr, "--profile applies to s3:// URLs") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	r = silt(t, "ls", "--gcs-credentials", "/nosuch.json", fileURL(t.TempDir()))
	wantCode(t, r, exitUsage, "ls --gcs-credentials file://")
}

// TestOpen_GCSCredentialsMissing_NamesThePath checks a missing
// --gcs-credentials file fails at open, naming the path, with a hint.
func TestOpen_GCSCredentialsMissing_NamesThePath(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "key.json")
	r := siltAt(t, t.TempDir(), []string{"STORAGE_EMULATOR_HOST=127.0.0.1:1"}, "ls", "--gcs-credentials", missing, "gs://bkt")
	wantCode(t, r, exitError, "ls --gcs-credentials missing")
	if !strings.Contains(r.stderr, "credentials file "+missing+" (from the URL's ?credentials=) does not exist") || !strings.Contains(r.stderr, "hint: point --gcs-credentials") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}
