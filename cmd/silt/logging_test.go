package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestLogLevel_DebugJSON_OneLinePerRequestAndASummary(t *testing.T) {
	_, dirs := setup(t, 1)
	a := dirs[0]
	write(t, a, "x", "xyz")
	r := ok(t, "push", "--dir", a, "--log-level", "debug", "--log-format", "json")
	var requests, done int
	for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stderr line is not JSON: %q", line)
		}
		switch m["msg"] {
		case "request":
			requests++
			for _, k := range []string{"verb", "key", "status", "duration", "bytes", "attempt"} {
				if _, has := m[k]; !has {
					t.Errorf("request record lacks %q: %v", k, m)
				}
			}
		case "done":
			done++
			if m["op"] != "push" || m["uploaded"] != 1.0 {
				t.Errorf("summary record %v", m)
			}
		}
	}
	if requests == 0 || done != 1 {
		t.Errorf("%d request records and %d summaries:\n%s", requests, done, r.stderr)
	}
	if q := ok(t, "push", "--dir", a); q.stderr != "" {
		t.Errorf("without --log-level the push logged: %q", q.stderr)
	}
	info := ok(t, "pull", "--dir", a, "--log-level", "info")
	if !strings.Contains(info.stderr, "msg=done op=pull") || strings.Contains(info.stderr, "msg=request") {
		t.Errorf("--log-level info (text):\n%s", info.stderr)
	}
	wantCode(t, silt(t, "pull", "--dir", a, "--log-level", "loud"), 2, "--log-level loud")
	wantCode(t, silt(t, "pull", "--dir", a, "--log-level", "info", "--log-format", "xml"), 2, "--log-format xml")
}
