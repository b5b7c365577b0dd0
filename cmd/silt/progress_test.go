package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/siltsync/silt/syncer"
)

// screen returns what a terminal shows for out: each line as left by its
// last carriage return, with erase-line sequences dropped.
func screen(out string) []string {
	out = strings.ReplaceAll(out, "\033[K", "")
	out = strings.ReplaceAll(out, "\r\n", "\n")
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if i := strings.LastIndexByte(l, '\r'); i >= 0 {
			l = l[i+1:]
		}
		lines = append(lines, l)
	}
	return lines
}

func TestMeter_Update_ThrottledWithRateAndETA(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	m := newMeter(&buf, func() time.Time { return clock })
	// A check phase: nothing in the first 100 ms, then at most one frame per 100 ms.
	for i := 1; i <= 300; i++ {
		clock = clock.Add(time.Millisecond)
		m.update(syncer.Progress{Op: "push", Phase: "check", Checked: i})
	}
	if n := strings.Count(buf.String(), "\r"); n < 1 || n > 3 {
		t.Errorf("%d check frames in 300 ms, want 1 to 3:\n%q", n, buf.String())
	}
	if s := screen(buf.String()); !strings.HasPrefix(s[len(s)-1], "push  checking: ") {
		t.Errorf("check line %q", s[len(s)-1])
	}
	buf.Reset()
	for i := 1; i <= 10; i++ {
		clock = clock.Add(time.Second)
		m.update(syncer.Progress{Op: "push", Phase: "transfer", Done: i, Total: 10, Bytes: 1024, DoneBytes: int64(i) * 1024, TotalBytes: 10240})
	}
	s := screen(buf.String())
	if !strings.HasSuffix(buf.String(), "\n") || len(s) != 2 {
		t.Fatalf("transfer frames do not end in one line: %q", buf.String())
	}
	if want := "push  10/10 files  10.0 KiB / 10.0 KiB  1.1 KiB/s  ETA 0s"; s[0] != want {
		t.Errorf("last frame %q, want %q", s[0], want)
	}
	mid := m.frame(syncer.Progress{Op: "pull", Phase: "transfer", Done: 5, Total: 10, DoneBytes: 5 << 20, TotalBytes: 10 << 20}, m.started.Add(5*time.Second))
	if !strings.Contains(mid, "5/10 files  5.0 MiB / 10.0 MiB  1.0 MiB/s  ETA 5s") {
		t.Errorf("mid-transfer frame %q", mid)
	}
	buf.Reset()
	m.update(syncer.Progress{Op: "push", Phase: "transfer", Done: 1, Total: 2})
	if buf.Len() != 0 {
		t.Errorf("a two-file transfer drew a line: %q", buf.String())
	}
	if (&cli{stderr: &buf}).progress() != nil {
		t.Error("a progress line for a writer that is not a terminal")
	}
}
