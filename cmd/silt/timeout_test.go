package main

import (
	"strings"
	"testing"
	"time"

	"github.com/siltsync/silt/internal/silttest"
)

// TestLs_HungEndpoint_FailsWithinTimeoutNamingIt: `silt ls` against an
// s3:// endpoint that accepts connections and never answers fails after
// about --timeout (here 2s; 15s by default), with a message naming the
// endpoint. Before issue 37 --timeout bounded each of 3 attempts: 6 s
// here, 90 s by default.
func TestLs_HungEndpoint_FailsWithinTimeoutNamingIt(t *testing.T) {
	addr := silttest.HeldOpen(t)
	env := []string{"AWS_ACCESS_KEY_ID=silt-test-key", "AWS_SECRET_ACCESS_KEY=silt-test-secret", "AWS_PROFILE=",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true"}
	start := time.Now()
	r := siltAt(t, t.TempDir(), env, "ls", "--timeout", "2s", "s3://bkt?endpoint=http://"+addr+"&use_path_style=true&region=us-east-1")
	took := time.Since(start)
	wantCode(t, r, 1, "ls on a hung endpoint")
	if !strings.Contains(r.stderr, addr) || !strings.Contains(r.stderr, "no response from") {
		t.Errorf("stderr does not name the hung endpoint %s:\n%s", addr, r.stderr)
	}
	// Generous for a loaded machine (the process starts too), and below
	// the 6 s the old per-attempt --timeout took.
	if took < 1800*time.Millisecond || took > 5*time.Second {
		t.Errorf("failed after %v, want about the 2s --timeout", took)
	}
}
