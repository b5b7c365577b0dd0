//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// hangingS3 answers reads with "no such key" and holds every write until
// the client gives up; started receives once per write that arrived.
func hangingS3(t *testing.T) (string, <-chan struct{}) {
	t.Helper()
	started := make(chan struct{}, 64)
	quit := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			started <- struct{}{}
			select {
			case <-r.Context().Done():
			case <-quit:
			}
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		if r.URL.Query().Has("list-type") {
			// An empty bucket lists nothing (a missing manifest is looked
			// up in the history).
			w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>bucket</Name><IsTruncated>false</IsTruncated></ListBucketResult>`))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		if r.Method != http.MethodHead {
			w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>none</Message></Error>`))
		}
	}))
	t.Cleanup(func() { close(quit); srv.Close() })
	q := url.Values{"endpoint": {srv.URL}, "region": {"us-east-1"}, "use_path_style": {"true"}}
	return "s3://bucket/silt?" + q.Encode(), started
}

func TestRun_Signal_ExitCodeAndPartialStatsJSON(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{{syscall.SIGINT, "SIGINT", 130}, {syscall.SIGTERM, "SIGTERM", 143}} {
		t.Run(tc.name, func(t *testing.T) {
			u, started := hangingS3(t)
			env := append(os.Environ(), "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
				"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
			d := filepath.Join(t.TempDir(), "cache")
			init := exec.Command(siltRaceBin, "init", "--dir", d, u)
			init.Env = env
			if out, err := init.CombinedOutput(); err != nil {
				t.Fatalf("init: %v\n%s", err, out)
			}
			write(t, d, "f", "payload")
			cmd := exec.Command(siltRaceBin, "push", "--dir", d, "--json")
			cmd.Env = env
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			<-started // the push is under way, blocked on its upload
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			ee, isExit := err.(*exec.ExitError)
			if !isExit || ee.ExitCode() != tc.code {
				t.Fatalf("push after %s: %v, want exit %d\nstderr: %s", tc.name, err, tc.code, errOut.String())
			}
			dec := json.NewDecoder(&out)
			var v map[string]any
			if err := dec.Decode(&v); err != nil || dec.More() {
				t.Fatalf("stdout is not exactly one JSON object (%v):\n%s", err, out.String())
			}
			if v["exit"] != float64(tc.code) || v["files"] == nil || !strings.Contains(v["error"].(string), tc.name) {
				t.Errorf("JSON after %s: %v", tc.name, v)
			}
			if !strings.Contains(errOut.String(), "interrupted") {
				t.Errorf("stderr after %s: %s", tc.name, errOut.String())
			}
		})
	}
}
