package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/siltsync/silt/syncer"
)

func TestProgressBar_DrawsInPlaceAndEndsTheLine(t *testing.T) {
	var buf bytes.Buffer
	bar := progressBar(&buf)
	for i := 1; i <= 10; i++ {
		bar(syncer.Progress{Op: "pull", Done: i, Total: 10, Bytes: 1024})
	}
	out := buf.String()
	if strings.Count(out, "\r") != 10 || !strings.HasSuffix(out, "\n") {
		t.Errorf("bar output %q", out)
	}
	if !strings.Contains(out, "[==============================] 10/10 files  10.0 KiB  ") {
		t.Errorf("final frame missing in %q", out)
	}
	buf.Reset()
	progressBar(&buf)(syncer.Progress{Op: "push", Done: 1, Total: 2})
	if buf.Len() != 0 {
		t.Errorf("a two-file transfer drew a bar: %q", buf.String())
	}
	if (&cli{stderr: &buf}).progress() != nil {
		t.Error("a bar for a writer that is not a terminal")
	}
}
